// SplitMix64 / mix64: published test vectors, ranges, determinism.
#include "zotrain/core/rng.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace {

TEST(RngTest, SplitMix64MatchesPublishedSequence) {
  // Reference outputs of Vigna's splitmix64.c for state 0.
  zt::SplitMix64 g(0);
  EXPECT_EQ(g.next(), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(g.next(), 0x6e789e6aa1b965f4ULL);
  EXPECT_EQ(g.next(), 0x06c45d188009454fULL);
}

TEST(RngTest, Mix64IsDeterministicAndMixes) {
  EXPECT_EQ(zt::mix64(0), 0u);  // the finaliser fixes 0
  EXPECT_EQ(zt::mix64(12345), zt::mix64(12345));
  // Flipping one input bit flips about half of the output bits.
  double flips = 0;
  int count = 0;
  for (std::uint64_t x = 1; x < 2000; x += 7) {
    for (int bit = 0; bit < 64; bit += 9) {
      flips += __builtin_popcountll(zt::mix64(x) ^ zt::mix64(x ^ (1ULL << bit)));
      ++count;
    }
  }
  EXPECT_NEAR(flips / count, 32.0, 0.5);
}

TEST(RngTest, UniformInUnitIntervalWithRightMean) {
  zt::SplitMix64 g(7);
  const int n = 200000;
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    const float u = g.uniform();
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
  }
  // Var(U) = 1/12: 5 sigma of the mean.
  EXPECT_NEAR(sum / n, 0.5, 5.0 * std::sqrt(1.0 / 12.0 / n));
}

TEST(RngTest, BelowStaysInRangeAndCoversIt) {
  zt::SplitMix64 g(99);
  std::vector<int> hits(10, 0);
  for (int i = 0; i < 100000; ++i) {
    const std::uint64_t v = g.below(10);
    ASSERT_LT(v, 10u);
    ++hits[v];
  }
  for (int h : hits) EXPECT_NEAR(h, 10000, 5 * std::sqrt(10000 * 0.9));
}

TEST(RngTest, SameSeedSameSequence) {
  zt::SplitMix64 a(5), b(5);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(a.next(), b.next());
  EXPECT_EQ(a.state(), b.state());
}

}  // namespace
