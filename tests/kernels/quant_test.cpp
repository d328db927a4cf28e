// Int8 (NITI) quantisation tests: the docs/design.md §5.2 rounding vectors, requantisation and the
// b-bit weight update on hand-computed cases, and every path bit-exact against the reference over a
// sweep of sizes (guard bytes after outputs, 1 and several threads). Integer results are exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <string>
#include <vector>

#ifdef ZT_OPENMP
#include <omp.h>
#endif

#include "../support.hpp"
#include "zotrain/core/rng.hpp"
#include "zotrain/kernels/quant.hpp"

namespace zt::kernels {
namespace {

constexpr std::size_t kGuardTail = 17;
using test::kGuardS8;

const std::size_t kSizes[] = {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 65, 1000, 1021, 200003};

// Runs fn with the OpenMP team size forced to `threads` (no-op without OpenMP).
using test::with_threads;

// Values of every magnitude class: mostly |x| < 2^bits, some extremes.
std::vector<std::int32_t> random_s32(std::size_t n, std::uint64_t seed, int bits) {
  SplitMix64 rng(seed);
  std::vector<std::int32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t r = rng.next();
    std::int64_t m = static_cast<std::int64_t>((r >> 8) & ((std::uint64_t{1} << bits) - 1));
    if ((r & 0xff) == 7) m = std::int64_t{1} << (bits - 1);  // exact powers of two: ties
    std::int64_t x = (r & 0x100) ? -m : m;
    if (bits >= 32) x = static_cast<std::int32_t>(static_cast<std::uint32_t>(r >> 16));
    v[i] = static_cast<std::int32_t>(x);
  }
  return v;
}

std::vector<std::int8_t> random_s8(std::size_t n, std::uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<std::int8_t> v(n);
  for (auto& x : v) x = static_cast<std::int8_t>(static_cast<int>(rng.below(255)) - 127);
  return v;
}

// ---- the rounding helpers (docs/design.md §5.2 test vectors) -------------------------------

TEST(QuantRounding, BitlenAndMagnitude) {
  EXPECT_EQ(bitlen(0), 0);
  EXPECT_EQ(bitlen(1), 1);
  EXPECT_EQ(bitlen(127), 7);
  EXPECT_EQ(bitlen(128), 8);
  EXPECT_EQ(bitlen(0x80000000u), 32);
  EXPECT_EQ(magnitude(INT32_MIN), 0x80000000u);
  EXPECT_EQ(magnitude(-5), 5u);
}

TEST(QuantRounding, RoundShiftSpecVector) {
  const int want[15] = {-2, -2, -1, -1, -1, -1, 0, 0, 0, 1, 1, 1, 1, 2, 2};
  for (int x = -7; x <= 7; ++x) EXPECT_EQ(round_shift(x, 2), want[x + 7]) << "x=" << x;
  EXPECT_EQ(round_shift(-9, 0), -9);
  EXPECT_EQ(round_shift(INT32_MIN, 25), -64);
  EXPECT_EQ(round_shift(INT32_MAX, 24), 128);  // unclamped; callers clamp
}

// The branch-free form the vectorised loops use is RoundShift then clamp_s8, for every shift an
// int32 may take and for int64 values past int32's range (the BatchNorm backward's dy).
TEST(QuantRounding, RoundShiftClampIsRoundShiftThenClamp) {
  SplitMix64 rng(5);
  const std::int32_t edges[] = {0, 1, -1, 2, -2, 127, -127, 128, -128, 191, -191, 192, -192,
                                INT32_MAX, INT32_MIN, INT32_MIN + 1};
  for (int s = 0; s < 32; ++s) {
    for (std::int32_t x : edges) ASSERT_EQ(round_shift_clamp_s8(x, s), clamp_s8(round_shift(x, s))) << x << " >> " << s;
    for (int k = 0; k < 2000; ++k) {
      const auto x = static_cast<std::int32_t>(static_cast<std::uint32_t>(rng.next()));
      ASSERT_EQ(round_shift_clamp_s8(x, s), clamp_s8(round_shift(x, s))) << x << " >> " << s;
    }
  }
  for (int s = 0; s < 62; ++s)
    for (int k = 0; k < 500; ++k) {
      const auto v = static_cast<std::int64_t>(rng.next()) >> 3;  // |v| < 2^60
      const std::uint64_t m = v < 0 ? 0u - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
      const std::uint64_t q = s == 0 ? m : (m + (std::uint64_t{1} << (s - 1))) >> s;
      const std::int64_t want = q > 127 ? 127 : static_cast<std::int64_t>(q);
      ASSERT_EQ(round_shift_clamp_s8(v, s), v < 0 ? -want : want) << v << " >> " << s;
    }
}

TEST(QuantRounding, PstoShiftSpecVectors) {
  const int s1[4] = {0, 1, 1, 2};
  const int s2[8] = {0, 0, 1, 0, 1, 1, 2, 1};
  const int s3[16] = {0, 0, 1, 0, 1, 0, 1, 1, 1, 1, 2, 1, 2, 1, 2, 2};
  for (int m = 0; m < 4; ++m) {
    EXPECT_EQ(psto_shift(m, 1), s1[m]) << "s=1 m=" << m;
    EXPECT_EQ(psto_shift(-m, 1), -s1[m]) << "s=1 m=-" << m;
  }
  for (int m = 0; m < 8; ++m) {
    EXPECT_EQ(psto_shift(m, 2), s2[m]) << "s=2 m=" << m;
    EXPECT_EQ(psto_shift(-m, 2), -s2[m]) << "s=2 m=-" << m;
  }
  for (int m = 0; m < 16; ++m) {
    EXPECT_EQ(psto_shift(m, 3), s3[m]) << "s=3 m=" << m;
    EXPECT_EQ(psto_shift(-m, 3), -s3[m]) << "s=3 m=-" << m;
  }
  EXPECT_EQ(psto_shift(-9, 0), -9);
}

TEST(QuantRounding, StoShiftRoundsUpIffRemainderExceedsWord) {
  // s = 4: r = 9; up iff 9 > (u & 15).
  EXPECT_EQ(sto_shift(25, 4, 0u), 2);
  EXPECT_EQ(sto_shift(25, 4, 8u), 2);
  EXPECT_EQ(sto_shift(25, 4, 9u), 1);
  EXPECT_EQ(sto_shift(25, 4, 0xfffffff0u), 2);  // only the low s bits of u count
  EXPECT_EQ(sto_shift(-25, 4, 0u), -2);
  EXPECT_EQ(sto_shift(-25, 4, 15u), -1);
  EXPECT_EQ(sto_shift(32, 4, 0u), 2);  // r = 0 never rounds up
  EXPECT_EQ(sto_shift(7, 0, 0u), 7);
  // Unbiased over all 16 words: Σ_u StoShift(x, 4, u) = x for x ≥ 0 (sign-magnitude: mirrored).
  for (int x : {0, 1, 15, 17, 100, -3, -77}) {
    int sum = 0;
    for (std::uint32_t u = 0; u < 16; ++u) sum += sto_shift(x, 4, u);
    EXPECT_EQ(sum, x) << "x=" << x;
  }
}

TEST(QuantPixels, ShiftHalvesWithExponentMinus7) {
  const std::uint8_t p[6] = {0, 1, 2, 3, 254, 255};
  std::int8_t x[6 + 3] = {0, 0, 0, 0, 0, 0, kGuardS8, kGuardS8, kGuardS8};
  const PixelQuant q = pixel_quant_shift();
  quantize_pixels_s8(p, 6, q, x);
  const int want[6] = {0, 0, 1, 1, 127, 127};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(x[i], want[i]);
  for (int i = 6; i < 9; ++i) EXPECT_EQ(x[i], kGuardS8);
  EXPECT_EQ(q.exponent, -7);
}

// NITI's input: round((p/255 − mean)/std · 2^(7 − ⌈log2 R⌉)), checked against double arithmetic.
TEST(QuantPixels, NormalisedMatchesNitisFormula) {
  struct Case {
    int mean_e4, std_e4, exponent, at0, at255;
  };
  // MNIST: R = 2.82, so ×32; Fashion-MNIST: R = 2.02, also ×32; R = 0.5 exactly: ×256, the ends
  // clamped; R = 2 exactly: ×64, the top clamped.
  for (const Case c : {Case{1307, 3081, -5, -14, 90}, Case{2860, 3530, -5, -26, 65},
                       Case{5000, 10000, -8, -127, 127}, Case{0, 5000, -6, 0, 127}}) {
    const PixelQuant q = pixel_quant_normalised(c.mean_e4, c.std_e4);
    EXPECT_EQ(q.exponent, c.exponent) << c.mean_e4;
    EXPECT_EQ(q.table[0], c.at0) << c.mean_e4;
    EXPECT_EQ(q.table[255], c.at255) << c.mean_e4;
    for (int p = 0; p < 256; ++p) {
      const double v = (p / 255.0 - c.mean_e4 * 1e-4) / (c.std_e4 * 1e-4) * std::ldexp(1.0, -q.exponent);
      EXPECT_EQ(q.table[static_cast<std::size_t>(p)], std::clamp(std::lround(v), -127L, 127L))
          << "mean " << c.mean_e4 << " p " << p;
    }
  }
}

TEST(QuantMaxAbs, MatchesNaiveIncludingInt32MinAndThreads) {
  for (std::size_t n : kSizes) {
    auto x = random_s32(n, 11 + n, 20);
    if (n > 5) x[n / 3] = INT32_MIN;
    std::uint32_t want = 0;
    for (auto v : x) want = std::max(want, magnitude(v));
    for (int t : {1, 2, 3}) {
      with_threads(t, [&] { EXPECT_EQ(max_abs_s32(x.data(), n), want) << "n=" << n << " t=" << t; });
    }
  }
}

// ---- parametrised over the paths ---------------------------------------------------------------

using QuantS8Test = test::IsaTest;

TEST_P(QuantS8Test, SelectsTheRequestedPath) {
  ZT_EXPECT_REF_PORTABLE_NEON_SELECTED(requantize_s32_s8, GetParam());
  ZT_EXPECT_REF_PORTABLE_NEON_SELECTED(update_weights_s8, GetParam());
  ZT_EXPECT_REF_PORTABLE_NEON_SELECTED(requantize_max_s32_s8, GetParam());
}

// A data-parallel run requantises each rank's rows with the maximum over every rank's rows: the
// pieces, each with the whole tensor's maximum, give the whole tensor's bits and shift.
TEST_P(QuantS8Test, RequantizeInPiecesWithTheWholeMaximumIsTheWhole) {
  const auto rq = select_requantize_s32_s8(GetParam());
  const auto rq_max = select_requantize_max_s32_s8(GetParam());
  for (std::size_t n : kSizes) {
    for (int bits : {3, 8, 20, 32}) {
      const auto x = random_s32(n, 7000 * n + bits, bits);
      std::vector<std::int8_t> whole(n), pieces(n + kGuardTail, kGuardS8);
      const int s_whole = rq(x.data(), n, whole.data());
      const std::uint32_t mx = max_abs_s32(x.data(), n);
      for (std::size_t cut : {std::size_t{0}, n / 3, n / 2, n}) {
        EXPECT_EQ(rq_max(x.data(), cut, mx, pieces.data()), s_whole) << "n=" << n;
        EXPECT_EQ(rq_max(x.data() + cut, n - cut, mx, pieces.data() + cut), s_whole) << "n=" << n;
        EXPECT_TRUE(std::equal(whole.begin(), whole.end(), pieces.begin()))
            << "n=" << n << " bits=" << bits << " cut=" << cut;
        for (std::size_t g = 0; g < kGuardTail; ++g) ASSERT_EQ(pieces[n + g], kGuardS8);
      }
    }
  }
}

struct RequantCase {
  const char* name;
  std::vector<std::int32_t> x;
  int s;
  std::vector<int> y;
};

TEST_P(QuantS8Test, RequantizeHandComputedCases) {
  const auto rq = select_requantize_s32_s8(GetParam());
  const RequantCase cases[] = {
      {"all zero", {0, 0, 0}, 0, {0, 0, 0}},
      {"max 127 kept", {127, -127, 5, -1, 0}, 0, {127, -127, 5, -1, 0}},
      {"max 128", {128, -128, 127, 3, -3, 1, -1, 2, -2}, 1, {64, -64, 64, 2, -2, 1, -1, 1, -1}},
      {"max 255", {255, -255, 254, 2, -2, 6, -6}, 1, {127, -127, 127, 1, -1, 3, -3}},
      {"max 2^31-1", {INT32_MAX, -INT32_MAX, 1 << 23, (1 << 23) - 1, -(1 << 23), 3 << 23},
       24, {127, -127, 1, 0, -1, 2}},
      {"INT32_MIN", {INT32_MIN, INT32_MAX, 1 << 24, (1 << 24) - 1, -(1 << 25)}, 25,
       {-64, 64, 1, 0, -1}},
      {"ties away from zero", {1024, 16, -16, 48, -48, 8, -8}, 4, {64, 1, -1, 3, -3, 1, -1}},
  };
  for (const auto& c : cases) {
    const std::size_t n = c.x.size();
    std::vector<std::int8_t> y(n + kGuardTail, kGuardS8);
    EXPECT_EQ(rq(c.x.data(), n, y.data()), c.s) << c.name;
    for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(y[i], c.y[i]) << c.name << " i=" << i;
    for (std::size_t t = 0; t < kGuardTail; ++t) EXPECT_EQ(y[n + t], kGuardS8) << c.name;
  }
  std::int8_t guard = kGuardS8;
  EXPECT_EQ(rq(nullptr, 0, &guard), 0);
  EXPECT_EQ(guard, kGuardS8);
}

TEST_P(QuantS8Test, RequantizeBitExactSweepWithGuards) {
  const auto rq = select_requantize_s32_s8(GetParam());
  for (std::size_t n : kSizes) {
    for (int bits : {3, 8, 12, 20, 31, 32}) {
      const auto x = random_s32(n, 1000 * n + bits, bits);
      std::vector<std::int8_t> want(n);
      const int s_want = requantize_s32_s8_ref(x.data(), n, want.data());
      for (int t : {1, 2, 3}) {
        std::vector<std::int8_t> y(n + kGuardTail, kGuardS8);
        int s = -1;
        with_threads(t, [&] { s = rq(x.data(), n, y.data()); });
        EXPECT_EQ(s, s_want) << "n=" << n << " bits=" << bits;
        EXPECT_TRUE(std::equal(want.begin(), want.end(), y.begin())) << "n=" << n << " bits=" << bits;
        for (std::size_t g = 0; g < kGuardTail; ++g) ASSERT_EQ(y[n + g], kGuardS8) << "n=" << n;
      }
    }
  }
}

TEST_P(QuantS8Test, RequantizeIsTheDefinitionElementwise) {
  // Independent of the reference: y = clamp(RoundShift(x, s), ±127) with s from the maximum.
  const auto rq = select_requantize_s32_s8(GetParam());
  const auto x = random_s32(4099, 77, 19);
  std::vector<std::int8_t> y(x.size());
  const int s = rq(x.data(), x.size(), y.data());
  std::uint32_t mx = 0;
  for (auto v : x) mx = std::max(mx, magnitude(v));
  ASSERT_EQ(s, bitlen(mx) - 7);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::int64_t m = std::abs(static_cast<std::int64_t>(x[i]));
    std::int64_t q = (m + (std::int64_t{1} << (s - 1))) >> s;
    q = std::min<std::int64_t>(q, 127);
    ASSERT_EQ(y[i], x[i] < 0 ? -q : q) << "i=" << i;
  }
}

TEST_P(QuantS8Test, UpdateWeightsZeroGradientChangesNothing) {
  const auto up = select_update_weights_s8(GetParam());
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{33}, std::size_t{70000}}) {
    auto w = random_s8(n, n + 3);
    w.resize(n + kGuardTail, kGuardS8);
    const auto before = w;
    const std::vector<std::int32_t> g(n, 0);
    EXPECT_EQ(up(w.data(), g.data(), n, 5), 0);
    EXPECT_EQ(w, before) << "n=" << n;
  }
}

TEST_P(QuantS8Test, UpdateWeightsSmallGradientUsedAsIs) {
  const auto up = select_update_weights_s8(GetParam());
  // max |g| = 9: b = 4 ≤ bits = 5, so s = −1 and ĝ = g.
  std::vector<std::int8_t> w = {10, -10, 0, 127, -127, 5, kGuardS8};
  const std::vector<std::int32_t> g = {9, -9, 1, -3, 3, 0};
  EXPECT_EQ(up(w.data(), g.data(), 6, 5), -1);
  const std::vector<std::int8_t> want = {1, -1, -1, 127, -127, 5, kGuardS8};
  EXPECT_EQ(w, want);
  // b == bits exactly: s = 0, still used as is.
  std::vector<std::int8_t> w2 = {0, 0};
  const std::vector<std::int32_t> g2 = {31, -17};
  EXPECT_EQ(up(w2.data(), g2.data(), 2, 5), 0);
  EXPECT_EQ(w2[0], -31);
  EXPECT_EQ(w2[1], 17);
}

TEST_P(QuantS8Test, UpdateWeightsClampsAtPlusMinus127) {
  const auto up = select_update_weights_s8(GetParam());
  // bits large enough that g is used as is (s < 1), including huge magnitudes.
  std::vector<std::int8_t> w = {100, -100, -128, 127, 0, 0, -127};
  const std::vector<std::int32_t> g = {-100, 100, 1, -1, INT32_MIN, INT32_MAX, -254};
  EXPECT_EQ(up(w.data(), g.data(), w.size(), 40), 32 - 40);
  const std::vector<std::int8_t> want = {127, -127, -127, 127, 127, -127, 127};
  EXPECT_EQ(w, want);
}

TEST_P(QuantS8Test, UpdateWeightsPstoShiftPath) {
  const auto up = select_update_weights_s8(GetParam());
  // max |g| = 100: b = 7, bits = 5 → s = 2. PstoShift(·, 2) adds 1 to |x| >> 2 exactly when
  // |x| mod 4 = 2 (P = r >> 1 > R = r & 1), as in the reference vector 0 0 1 0 1 1 2 1.
  std::vector<std::int8_t> w = {0, 0, 0, 0, 0, 0, 0, 0, 50, -127};
  const std::vector<std::int32_t> g = {100, -100, 5, 6, -6, 7, 3, 2, -7, 99};
  EXPECT_EQ(up(w.data(), g.data(), w.size(), 5), 2);
  // 100 → 25; 5 → 1; 6 → 2; 7 → 1; 3 → 0; 2 → 1; 99 = 24·4 + 3 → 24 + (1 > 1) = 24.
  const std::vector<std::int8_t> want = {-25, 25, -1, -2, 2, -1, 0, -1, 51, -127};
  EXPECT_EQ(w, want);
}

TEST_P(QuantS8Test, UpdateWeightsBitExactSweepWithGuards) {
  const auto up = select_update_weights_s8(GetParam());
  for (std::size_t n : kSizes) {
    for (int gbits : {1, 4, 9, 17, 31, 32}) {
      for (int bits : {0, 1, 3, 5}) {  // 0: the update's largest element becomes 0 or 1
        const auto g = random_s32(n, 7 * n + gbits, gbits);
        const auto w0 = random_s8(n, n + 17 * gbits);
        auto want = w0;
        const int s_want = update_weights_s8_ref(want.data(), g.data(), n, bits);
        for (int t : {1, 2, 3}) {
          auto w = w0;
          w.resize(n + kGuardTail, kGuardS8);
          int s = -99;
          with_threads(t, [&] { s = up(w.data(), g.data(), n, bits); });
          EXPECT_EQ(s, s_want) << "n=" << n << " gbits=" << gbits << " bits=" << bits;
          EXPECT_TRUE(std::equal(want.begin(), want.end(), w.begin()))
              << "n=" << n << " gbits=" << gbits << " bits=" << bits << " t=" << t;
          for (std::size_t q = 0; q < kGuardTail; ++q) ASSERT_EQ(w[n + q], kGuardS8) << "n=" << n;
        }
      }
    }
  }
}

// Saturation extremes everywhere: every x = INT32_MIN (|x| = 2^31) or INT32_MAX, every weight
// −128 or 127 with the largest gradients, against the reference.
TEST_P(QuantS8Test, ExtremesEverywhereMatchTheReference) {
  const auto rq = select_requantize_s32_s8(GetParam());
  const auto up = select_update_weights_s8(GetParam());
  for (std::size_t n : kSizes) {
    for (std::int32_t xv : {INT32_MIN, INT32_MAX, -1, 1 << 30}) {
      std::vector<std::int32_t> x(n, xv);
      if (n > 2) x[n / 2] = -(xv / 3);  // not -xv / 3: -INT32_MIN overflows
      std::vector<std::int8_t> want(n), y(n + kGuardTail, kGuardS8);
      const int s_want = requantize_s32_s8_ref(x.data(), n, want.data());
      EXPECT_EQ(rq(x.data(), n, y.data()), s_want) << "n=" << n << " x=" << xv;
      EXPECT_TRUE(std::equal(want.begin(), want.end(), y.begin())) << "n=" << n << " x=" << xv;
      for (std::size_t g = 0; g < kGuardTail; ++g) ASSERT_EQ(y[n + g], kGuardS8) << "n=" << n;
      for (std::int8_t wv : {std::int8_t{-128}, std::int8_t{127}}) {
        for (int bits : {0, 1, 5, 31, 40}) {
          auto w_want = std::vector<std::int8_t>(n, wv);
          auto w = w_want;
          w.resize(n + kGuardTail, kGuardS8);
          EXPECT_EQ(up(w.data(), x.data(), n, bits), update_weights_s8_ref(w_want.data(), x.data(), n, bits));
          EXPECT_TRUE(std::equal(w_want.begin(), w_want.end(), w.begin()))
              << "n=" << n << " x=" << xv << " w=" << int{wv} << " bits=" << bits;
          for (std::size_t g = 0; g < kGuardTail; ++g) ASSERT_EQ(w[n + g], kGuardS8) << "n=" << n;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(QuantS8, QuantS8Test,
                         ::testing::ValuesIn(kAllIsas),
                         [](const auto& info) { return test::param_name(isa_name(info.param)); });

}  // namespace
}  // namespace zt::kernels
