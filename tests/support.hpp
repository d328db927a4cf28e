// Helpers shared by the test suites.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

#ifdef ZT_OPENMP
#include <omp.h>
#endif

#include "zotrain/core/error.hpp"
#include "zotrain/core/rng.hpp"
#include "zotrain/kernels/isa.hpp"

namespace zt::test {

// A gtest parameter name from any label ("neon-dot" → "neon_dot"): gtest allows only letters,
// digits and underscores.
inline std::string param_name(std::string label) {
  for (char& c : label)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return label;
}

// Guard value written after int8 outputs (kernels must leave it untouched).
inline constexpr std::int8_t kGuardS8 = 0x5a;

// Runs fn with OpenMP limited to `threads` threads, then restores the previous limit.
template <class Fn>
void with_threads(int threads, Fn fn) {
#ifdef ZT_OPENMP
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  fn();
  omp_set_num_threads(saved);
#else
  (void)threads;
  fn();
#endif
}

// Runs fn(threads) under each OpenMP thread limit in `counts` (restored after); a count of 0
// runs it from inside a two-thread parallel region, where the kernels must run serially.
// Without OpenMP nothing runs.
template <class Fn>
void for_thread_counts(std::initializer_list<int> counts, Fn fn) {
#ifdef ZT_OPENMP
  for (int threads : counts)
    with_threads(threads == 0 ? 2 : threads, [&] {
      if (threads != 0) {
        fn(threads);
        return;
      }
#pragma omp parallel num_threads(2)
#pragma omp single
      fn(threads);
    });
#else
  (void)counts;
  (void)fn;
#endif
}

// Fixture of an ISA-parametrised kernel test: skips the ISAs this CPU or build lacks.
class IsaTest : public ::testing::TestWithParam<kernels::Isa> {
 protected:
  void SetUp() override {
    if (!kernels::isa_available(GetParam())) GTEST_SKIP() << kernels::isa_name(GetParam()) << " not available";
  }
};
// An IsaTest whose f_ holds the paths selected for the ISA (FnsOf: a selector, or a function
// gathering several).
template <class Fns, Fns (*FnsOf)(kernels::Isa)>
class IsaPathTest : public IsaTest {
 protected:
  void SetUp() override {
    IsaTest::SetUp();
    if (!IsSkipped()) f_ = FnsOf(GetParam());
  }
  Fns f_{};
};

// Expects `got`, what a family's selector returned for isa, to be its reference path for
// kReference, its portable one for kPortable and its NEON one for kNeon and kNeonDot (nullptr:
// this build has none, a failure where NEON is available); other ISAs are not checked.
template <class F>
void expect_ref_portable_neon_selected(kernels::Isa isa, F got, F ref, F portable, std::type_identity_t<F> neon) {
  using kernels::Isa;
  if (isa == Isa::kReference) {
    EXPECT_EQ(got, ref);
  } else if (isa == Isa::kPortable) {
    EXPECT_EQ(got, portable);
  } else if (isa == Isa::kNeon || isa == Isa::kNeonDot) {
    if (neon == nullptr) {
      ADD_FAILURE() << "NEON available without NEON kernels";
    } else {
      EXPECT_EQ(got, neon);
    }
  }
}

// The tolerance policy of every kernel test, stated once: elementwise f32 results are
// bit-exact; an f32 reduction over `depth` terms may differ from the reference by at most
// kTolC · FLT_EPSILON · √depth · max|reference|; int8→int32 products are exact.
inline constexpr float kTolC = 4.0f;
inline float reduction_tolerance(int depth, float max_abs_ref) {
  return kTolC * FLT_EPSILON * std::sqrt(static_cast<float>(std::max(depth, 1))) * max_abs_ref;
}
// Whether a[0..n) and b[0..n) hold the same bits (−0.0 ≠ +0.0, NaNs compared by payload). n == 0
// is checked first: an empty vector's data() may be null, which memcmp must not get.
inline bool same_bits(const float* a, const float* b, std::size_t n) {
  return n == 0 || std::memcmp(a, b, n * sizeof(float)) == 0;
}
// A 2×2 max-pool case: `planes` planes of h × w in, of ⌊h/2⌋ × ⌊w/2⌋ out.
struct PoolCase {
  int planes, h, w;
  int out_h() const { return h / 2; }
  int out_w() const { return w / 2; }
  std::size_t in_size() const { return static_cast<std::size_t>(planes) * h * w; }
  std::size_t out_size() const { return static_cast<std::size_t>(planes) * out_h() * out_w(); }
};

// Written past the end of outputs; a kernel that touches it has overrun its output.
inline constexpr float kGuard = -7777.25f;

// n values uniform in [lo, hi) from the project's own generator: the same data on every
// platform and standard library, so a failure replays anywhere from its seed.
inline std::vector<float> random_floats(std::size_t n, std::uint64_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  SplitMix64 rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = lo + (hi - lo) * rng.uniform();
  return v;
}

// A labelled batch for the trainers: n samples of `features` values uniform in [lo, hi) and
// labels uniform in [0, classes), from the project's generator.
struct LabelledBatch {
  std::vector<float> x;
  std::vector<std::uint8_t> y;
};
inline LabelledBatch random_labelled_batch(int n, std::size_t features, int classes,
                                           std::uint64_t seed, double lo = -1, double hi = 1) {
  SplitMix64 r(seed);
  LabelledBatch b;
  for (std::size_t i = 0; i < static_cast<std::size_t>(n) * features; ++i)
    b.x.push_back(static_cast<float>(lo + (hi - lo) * r.uniform()));
  for (int i = 0; i < n; ++i) b.y.push_back(static_cast<std::uint8_t>(r.below(classes)));
  return b;
}

// Test-name suffix of an ISA-parametrised test: isa_name with '-' → '_' ("neon_dot"), since
// GoogleTest names allow only letters, digits and underscores.
inline std::string isa_test_name(const ::testing::TestParamInfo<kernels::Isa>& info) {
  std::string name = kernels::isa_name(info.param);
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

// Expects fn() to throw zt::Error with a one-line message containing every one of `parts`.
inline void expect_error(const std::function<void()>& fn, const std::vector<std::string>& parts) {
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
inline void expect_error(const std::function<void()>& fn, std::initializer_list<std::string> parts) {
  expect_error(fn, std::vector<std::string>(parts));
}

}  // namespace zt::test

// expect_ref_portable_neon_selected for the function family `fn` (fn_ref, fn_portable, fn_neon)
// and its selector select_fn.
#ifdef ZT_HAVE_NEON
#define ZT_NEON_PATH_OR_NULL(fn) &fn##_neon
#else
#define ZT_NEON_PATH_OR_NULL(fn) nullptr
#endif
#define ZT_EXPECT_REF_PORTABLE_NEON_SELECTED(fn, isa) \
  ::zt::test::expect_ref_portable_neon_selected(isa, select_##fn(isa), &fn##_ref, &fn##_portable, ZT_NEON_PATH_OR_NULL(fn))
