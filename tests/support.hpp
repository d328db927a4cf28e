// Helpers shared by the test suites.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "zotrain/core/error.hpp"
#include "zotrain/core/rng.hpp"

namespace zt::test {

// n values uniform in [lo, hi) from the project's own generator: the same data on every
// platform and standard library, so a failure replays anywhere from its seed.
inline std::vector<float> random_floats(std::size_t n, std::uint64_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  SplitMix64 rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = lo + (hi - lo) * rng.uniform();
  return v;
}

// Expects fn() to throw zt::Error with a one-line message containing every one of `parts`.
inline void expect_error(const std::function<void()>& fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "expected zt::Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const auto& p : parts)
      EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
  }
}

}  // namespace zt::test
