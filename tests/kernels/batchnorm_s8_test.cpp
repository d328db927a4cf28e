// Integer BatchNorm of int8 PointNet (docs/design.md §5.8): the statistics, the standardised
// output and the backward pass against the same formulas in double precision.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "zotrain/core/rng.hpp"
#include "zotrain/kernels/batchnorm_s8.hpp"

namespace zt::kernels {
namespace {

constexpr double kOne = 1 << kNormFracBits;

TEST(BatchNormS8, StatisticsOfKnownChannels) {
  // Channel 0: 1, 3 (mean 2, var 1); channel 1: constant 7 (σ taken as 1); channel 2: −10, 30
  // (mean 10, var 400, σ 20); channel 3: 0, 5 (mean 2.5 → 3 rounded away from zero,
  // Σ(y − 3)² / 2 = 6.5, σ = ⌊√6⌋ = 2).
  const std::vector<std::int32_t> y = {1, 7, -10, 0, 3, 7, 30, 5};
  std::vector<std::int64_t> s1(4, 0), s2(4, 0);
  batchnorm_accumulate(2, 4, y.data(), s1.data(), s2.data());
  EXPECT_EQ(s1, (std::vector<std::int64_t>{4, 14, 20, 5}));
  EXPECT_EQ(s2, (std::vector<std::int64_t>{10, 98, 1000, 25}));
  std::vector<ChannelNorm> n(4);
  batchnorm_finish(2, 4, s1.data(), s2.data(), n.data());
  const std::int64_t one = std::int64_t{1} << (kNormFracBits + kNormRecipBits);
  EXPECT_EQ(n[0].mean, 2);
  EXPECT_EQ(n[0].recip, one);
  EXPECT_EQ(n[1].mean, 7);
  EXPECT_EQ(n[1].recip, one);
  EXPECT_EQ(n[2].mean, 10);
  EXPECT_EQ(n[2].recip, (one + 10) / 20);
  EXPECT_EQ(n[3].mean, 3);
  EXPECT_EQ(n[3].recip, one / 2);
  EXPECT_EQ(batchnorm_apply(1, n[0]), -256);
  EXPECT_EQ(batchnorm_apply(3, n[0]), 256);
  EXPECT_EQ(batchnorm_apply(7, n[1]), 0);
  EXPECT_EQ(batchnorm_apply(30, n[2]), 256);
  EXPECT_EQ(batchnorm_apply(-10, n[2]), -256);
}

TEST(BatchNormS8, ForwardStandardisesEachChannel) {
  constexpr std::size_t kRows = 1000;
  constexpr int kC = 5;
  SplitMix64 rng(3);
  std::vector<std::int32_t> y(kRows * kC);
  for (std::size_t r = 0; r < kRows; ++r)
    for (int c = 0; c < kC; ++c)  // channel c: offset 1000·c, spread 10^c
      y[r * kC + c] = 1000 * c + static_cast<std::int32_t>(rng.below(2 * 10 * (1 << (2 * c)) + 1)) -
                      10 * (1 << (2 * c));
  std::vector<std::int32_t> x = y;
  std::vector<ChannelNorm> n(kC);
  std::vector<std::int64_t> sums(2 * kC);
  batchnorm_forward_s32(kRows, kC, x.data(), n.data(), sums.data());
  for (int c = 0; c < kC; ++c) {
    double m = 0, v = 0;
    for (std::size_t r = 0; r < kRows; ++r) m += y[r * kC + c];
    m /= kRows;
    for (std::size_t r = 0; r < kRows; ++r) v += (y[r * kC + c] - m) * (y[r * kC + c] - m);
    const double sd = std::sqrt(v / kRows);
    for (std::size_t r = 0; r < kRows; ++r) {
      const double want = (y[r * kC + c] - m) / sd * kOne;
      // The mean is rounded (an offset of up to 0.5 / σ) and σ is an integer square root (a
      // relative error of about 1/σ, here σ ≥ 5).
      EXPECT_NEAR(x[r * kC + c], want, 2 + 0.5 * kOne / sd + 0.25 * std::fabs(want)) << "c " << c;
    }
    // Monotone: larger y never gives smaller x̂.
    for (std::size_t r = 1; r < kRows; ++r) {
      if (y[r * kC + c] > y[(r - 1) * kC + c]) {
        EXPECT_GE(x[r * kC + c], x[(r - 1) * kC + c]);
      }
    }
  }
}

TEST(BatchNormS8, BackwardIsTheBatchNormGradient) {
  constexpr std::size_t kRows = 512;
  constexpr int kC = 3;
  SplitMix64 rng(11);
  std::vector<std::int32_t> acc(kRows * kC);
  for (std::size_t i = 0; i < acc.size(); ++i)
    acc[i] = static_cast<std::int32_t>(rng.below(4001)) - 2000 + 500 * static_cast<int>(i % kC) *
             static_cast<int>(i % kC);
  std::vector<ChannelNorm> n(kC);
  std::vector<std::int64_t> sums(5 * kC);  // the backward's scratch
  batchnorm_forward_s32(kRows, kC, acc.data(), n.data(), sums.data());
  // x̂ to int8 as the layer does: one shift for the tensor.
  std::int32_t mx = 0;
  for (std::int32_t v : acc) mx = std::max(mx, v < 0 ? -v : v);
  int shift = 0;
  while ((mx >> shift) > 127) ++shift;
  std::vector<std::int8_t> xhat(acc.size());
  for (std::size_t i = 0; i < acc.size(); ++i)
    xhat[i] = static_cast<std::int8_t>(std::lround(acc[i] / std::ldexp(1.0, shift)));
  const int xexp = -kNormFracBits + shift;
  std::vector<std::int8_t> e(acc.size());
  for (auto& v : e) v = static_cast<std::int8_t>(static_cast<int>(rng.below(255)) - 127);
  const std::vector<std::int8_t> e0 = e;
  batchnorm_backward_s8(kRows, kC, xhat.data(), xexp, e.data(), n.data(), sums.data());
  // Reference in double from the same int8 x̂ and σ ∝ 1/recip.
  std::vector<double> want(e.size());
  double wmax = 0;
  for (int c = 0; c < kC; ++c) {
    double me = 0, mex = 0;
    for (std::size_t r = 0; r < kRows; ++r) {
      me += e0[r * kC + c];
      mex += e0[r * kC + c] * std::ldexp(xhat[r * kC + c], xexp);
    }
    me /= kRows;
    mex /= kRows;
    for (std::size_t r = 0; r < kRows; ++r) {
      const std::size_t i = r * kC + c;
      want[i] = static_cast<double>(n[static_cast<std::size_t>(c)].recip) *
                (e0[i] - me - std::ldexp(xhat[i], xexp) * mex);
      wmax = std::max(wmax, std::fabs(want[i]));
    }
  }
  // Every factor the kernel drops (rows, 2^k, the reciprocals' shift, the requantisation) is a
  // power of two: the result is want scaled by the power of two that puts its maximum in
  // [64, 128).
  int j = 0;
  while (std::ldexp(wmax, j) >= 128) --j;
  while (std::ldexp(wmax, j) < 64) ++j;
  int got_max = 0;
  for (std::size_t i = 0; i < e.size(); ++i) {
    EXPECT_NEAR(e[i], std::ldexp(want[i], j), 0.51 + 1e-3 * std::fabs(std::ldexp(want[i], j)))
        << i;
    got_max = std::max(got_max, std::abs(static_cast<int>(e[i])));
  }
  EXPECT_GE(got_max, 64);  // requantised to 7 bits
  EXPECT_LE(got_max, 127);
}

// BatchNormBackward folds rb, rows, 2^k and the sums into three coefficients per channel; dy
// must be the documented T · rb = ((rows · e − Σe) · 2^k − x̂ · Σ(e · x̂)) · rb exactly, for x̂
// exponents on both sides of k = 0 (the 2^k moves onto the x̂ term when k < 0), and the row
// helpers must agree with dy, magnitude and error element by element.
TEST(BatchNormS8, BackwardCoefficientsAreTheFormula) {
  constexpr std::size_t kRows = 1000;
  constexpr int kC = 5;
  SplitMix64 rng(23);
  std::vector<ChannelNorm> n(kC);
  std::vector<std::int64_t> sums(2 * kC);
  std::uint64_t rmax = 0;
  for (int c = 0; c < kC; ++c) {
    n[c].recip = static_cast<std::int64_t>(rng.below(1u << 20)) + 1;
    rmax = std::max<std::uint64_t>(rmax, static_cast<std::uint64_t>(n[c].recip));
    sums[c] = static_cast<std::int64_t>(rng.below(200001)) - 100000;
    sums[kC + c] = static_cast<std::int64_t>(rng.below(20000001)) - 10000000;
  }
  int rs = 0;
  while ((rmax >> rs) >= (1u << 12)) ++rs;  // rb at most 2^12, as documented
  for (int xexp : {-9, -8, -4, 0, 2, 4}) {
    const int k = -2 * xexp;
    std::vector<std::int64_t> coef(3 * kC);
    const BatchNormBackward g(kRows, kC, xexp, n.data(), sums.data(), coef.data());
    std::vector<std::int8_t> e(kC), xh(kC), out(kC);
    for (int trial = 0; trial < 200; ++trial) {
      std::uint64_t want_max = 0;
      for (int c = 0; c < kC; ++c) {
        e[c] = static_cast<std::int8_t>(static_cast<int>(rng.below(255)) - 127);
        xh[c] = static_cast<std::int8_t>(static_cast<int>(rng.below(255)) - 127);
        const std::int64_t u = static_cast<std::int64_t>(kRows) * e[c] - sums[c];
        const std::int64_t v = static_cast<std::int64_t>(xh[c]) * sums[kC + c];
        const std::int64_t t = k >= 0 ? u * (std::int64_t{1} << k) - v : u - v * (std::int64_t{1} << -k);
        const std::int64_t r = n[c].recip;  // positive, as batchnorm_finish makes it
        const std::int64_t want = t * (rs == 0 ? r : (r + (std::int64_t{1} << (rs - 1))) >> rs);
        ASSERT_EQ(g.dy(e[c], xh[c], c), want) << "x̂ exponent " << xexp << " channel " << c;
        want_max = std::max(want_max, BatchNormBackward::magnitude(want));
      }
      ASSERT_EQ(g.row_largest(e.data(), xh.data()), want_max);
      // The tensor's shift, and smaller ones (down to none) whose results saturate at ±127.
      const int fit = BatchNormBackward::shift(want_max);
      for (int shift : {fit, fit / 2, 0}) {
        g.row_errors(e.data(), xh.data(), shift, out.data());
        for (int c = 0; c < kC; ++c)
          ASSERT_EQ(out[c], BatchNormBackward::error(g.dy(e[c], xh[c], c), shift)) << c << " shift " << shift;
      }
    }
  }
}

TEST(BatchNormS8, SumsFitCheck) {
  EXPECT_TRUE(batchnorm_sums_fit(256 * 1024, 128));
  EXPECT_FALSE(batchnorm_sums_fit(std::size_t{1} << 30, 1024));
}

}  // namespace
}  // namespace zt::kernels
