// Sparse uniform int8 perturbation (ElasticZO-INT8): statistics of z (fraction of zeros against
// p_zero, per-value frequencies by chi-square), exact regeneration and sub-ranges, the
// perturb(+1) / perturb(−2) / update cycle, and every path bit-exact against the reference on
// random spans with arbitrary `first` offsets, split points, guard bytes and thread counts.
// Statistical bounds are 5σ (or a chi-square quantile far in the tail) with fixed seeds.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#ifdef ZT_OPENMP
#include <omp.h>
#endif

#include "../support.hpp"
#include "zotrain/core/rng.hpp"
#include "zotrain/kernels/perturb_s8.hpp"
#include "zotrain/kernels/quant.hpp"

namespace zt::kernels {
namespace {

constexpr std::size_t kGuardTail = 19;
using test::kGuardS8;

using test::with_threads;

std::uint64_t threshold_for(double p_zero) {
  return static_cast<std::uint64_t>(p_zero * 4294967296.0);
}

PerturbS8Params params(std::uint64_t seed, double p_zero, int r_max) {
  PerturbS8Params p;
  p.seed = seed;
  p.zero_threshold = threshold_for(p_zero);
  p.r_max = r_max;
  return p;
}

// Full int8 range including −128 (which every path must clamp to −127 when it touches it).
std::vector<std::int8_t> random_theta(std::size_t n, std::uint64_t seed, int lo = -128, int hi = 127) {
  SplitMix64 rng(seed);
  std::vector<std::int8_t> v(n);
  for (auto& x : v) x = static_cast<std::int8_t>(lo + static_cast<int>(rng.below(hi - lo + 1)));
  return v;
}

// ---- the definition of z ------------------------------------------------------------------

TEST(PerturbS8Z, MatchesTheHeaderDefinition) {
  const auto p = params(99, 0.5, 7);
  const std::uint32_t k1 = hash_key(99, 1), k2 = hash_key(99, 2);
  const std::uint32_t first = 0xfffffff0u;  // wraps past 2^32
  std::vector<std::int8_t> z(40);
  perturbation_s8(p, first, z.size(), z.data());
  for (std::uint32_t i = 0; i < z.size(); ++i) {
    const std::uint32_t j = first + i;
    const bool m = hash32(k1, j) >= p.zero_threshold;
    const int u = static_cast<int>((std::uint64_t{hash32(k2, j)} * 15) >> 32) - 7;
    EXPECT_EQ(z[i], m ? u : 0) << "i=" << i;
  }
}

struct ZStats { double p_zero; int r_max; };

TEST(PerturbS8Z, FractionOfZerosAndUniformValues) {
  const ZStats cases[] = {{0.33, 1}, {0.5, 3}, {0.9, 7}, {0.33, 63}, {0.5, 127}, {0.0, 15}};
  constexpr std::size_t kN = std::size_t{1} << 21;
  for (const auto& c : cases) {
    const auto p = params(1234 + c.r_max, c.p_zero, c.r_max);
    std::vector<std::int8_t> z(kN);
    perturbation_s8(p, 77, kN, z.data());
    const int bins = 2 * c.r_max + 1;
    std::vector<double> count(bins, 0.0);
    for (auto v : z) {
      ASSERT_LE(std::abs(static_cast<int>(v)), c.r_max);
      count[v + c.r_max] += 1;
    }
    // P(z = 0) = p + (1 − p)/(2r + 1): m = 0, or m = 1 and u = 0.
    const double q = 1.0 - c.p_zero, pu = 1.0 / bins;
    const double p0 = c.p_zero + q * pu;
    const double zeros = count[c.r_max] / kN;
    EXPECT_NEAR(zeros, p0, 5 * std::sqrt(p0 * (1 - p0) / kN)) << "p_zero=" << c.p_zero;
    // Non-zero values: each has probability q/(2r+1); chi-square over the 2r non-zero bins.
    double chi2 = 0;
    const double expect = kN * q * pu;
    for (int v = 0; v < bins; ++v) {
      if (v == c.r_max) continue;
      chi2 += (count[v] - expect) * (count[v] - expect) / expect;
    }
    const double df = bins - 1;
    // Wilson–Hilferty: the 1 − 10^−6 quantile is ≈ df·(1 − 2/(9df) + 4.75·√(2/(9df)))^3.
    const double a = 2.0 / (9.0 * df);
    const double limit = df * std::pow(1.0 - a + 4.75 * std::sqrt(a), 3);
    std::printf("[ z p_zero=%.2f r_max=%d ] zeros %.4f (want %.4f), chi2 %.1f (df %.0f, limit %.1f)\n",
                c.p_zero, c.r_max, zeros, p0, chi2, df, limit);
    EXPECT_LE(chi2, limit) << "p_zero=" << c.p_zero << " r_max=" << c.r_max;
  }
}

TEST(PerturbS8Z, ThresholdEndsAndSeedsDiffer) {
  std::vector<std::int8_t> z(5000);
  auto p = params(5, 0.0, 3);
  p.zero_threshold = std::uint64_t{1} << 32;  // p_zero = 1: every z is 0
  perturbation_s8(p, 0, z.size(), z.data());
  EXPECT_TRUE(std::all_of(z.begin(), z.end(), [](std::int8_t v) { return v == 0; }));
  p.zero_threshold = 0;  // p_zero = 0, r_max = 3: z = 0 only when u = 0 (≈ 1/7)
  perturbation_s8(p, 0, z.size(), z.data());
  const auto zeros = std::count(z.begin(), z.end(), std::int8_t{0});
  EXPECT_NEAR(static_cast<double>(zeros) / 5000, 1.0 / 7, 0.03);
  std::vector<std::int8_t> z2(5000);
  p.seed = 6;
  perturbation_s8(p, 0, z2.size(), z2.data());
  EXPECT_NE(z, z2);
}

TEST(PerturbS8Z, RegenerationAndSubRangesAreIdentical) {
  const auto p = params(0xabcdef, 0.33, 31);
  const std::size_t n = 100003;
  std::vector<std::int8_t> a(n), b(n);
  perturbation_s8(p, 4000000000u, n, a.data());
  perturbation_s8(p, 4000000000u, n, b.data());
  EXPECT_EQ(a, b);
  for (std::size_t off : {std::size_t{1}, std::size_t{17}, std::size_t{4096}, std::size_t{99999}}) {
    std::vector<std::int8_t> c(n - off);
    perturbation_s8(p, 4000000000u + static_cast<std::uint32_t>(off), c.size(), c.data());
    EXPECT_TRUE(std::equal(c.begin(), c.end(), a.begin() + static_cast<std::ptrdiff_t>(off)))
        << "off=" << off;
  }
}

// ---- perturb / update, parametrised over the paths ------------------------------------------

using PerturbS8Test = test::IsaTest;

TEST_P(PerturbS8Test, SelectsTheRequestedPath) {
  ZT_EXPECT_REF_PORTABLE_NEON_SELECTED(perturb_s8, GetParam());
  ZT_EXPECT_REF_PORTABLE_NEON_SELECTED(zo_update_s8, GetParam());
}

TEST_P(PerturbS8Test, PerturbAddsKTimesZWithClamp) {
  const auto perturb = select_perturb_s8(GetParam());
  const auto p = params(31337, 0.5, 63);
  const std::size_t n = 5003;
  std::vector<std::int8_t> z(n);
  perturbation_s8(p, 1000, n, z.data());
  for (int k : {1, -2, 3}) {
    const auto theta0 = random_theta(n, 8 + k);
    auto theta = theta0;
    perturb(theta.data(), n, 1000, p, k);
    for (std::size_t i = 0; i < n; ++i) {
      const int want = std::clamp(theta0[i] + k * z[i], -127, 127);
      ASSERT_EQ(theta[i], want) << "k=" << k << " i=" << i;
    }
  }
}

TEST_P(PerturbS8Test, PlusMinusTwoThenZeroUpdateRestoresTheta) {
  const auto perturb = select_perturb_s8(GetParam());
  const auto update = select_zo_update_s8(GetParam());
  for (int r_max : {1, 3, 15, 31}) {
    const auto p = params(777 + r_max, 0.33, r_max);
    const std::size_t n = 70001;
    // |θ| ≤ 60 and |z| ≤ 31: θ ± z and θ − z ± z never reach ±127, so nothing clamps.
    const auto theta0 = random_theta(n, 55 + r_max, -60, 60);
    auto theta = theta0;
    perturb(theta.data(), n, 12345, p, +1);
    EXPECT_NE(theta, theta0);
    perturb(theta.data(), n, 12345, p, -2);
    update(theta.data(), n, 12345, p, 0, 1);
    EXPECT_EQ(theta, theta0) << "r_max=" << r_max;
  }
}

TEST_P(PerturbS8Test, UpdateSubtractsPstoRoundedSignedZ) {
  const auto perturb = select_perturb_s8(GetParam());
  const auto update = select_zo_update_s8(GetParam());
  for (int r_max : {1, 3, 7, 63}) {
    for (int g : {-1, 1}) {
      for (int b_zo : {1, 2}) {
        const auto p = params(4242 + r_max, 0.5, r_max);
        const std::size_t n = 20011;
        const auto theta0 = random_theta(n, 66 + r_max, -50, 50);
        std::vector<std::int8_t> z(n);
        perturbation_s8(p, 9, n, z.data());
        auto theta = theta0;
        perturb(theta.data(), n, 9, p, +1);
        perturb(theta.data(), n, 9, p, -2);  // θ − z
        update(theta.data(), n, 9, p, g, b_zo);
        const int s_l = bitlen(static_cast<std::uint32_t>(r_max)) - b_zo;
        for (std::size_t i = 0; i < n; ++i) {
          const int u_hat = s_l >= 1 ? psto_shift(g * z[i], s_l) : g * z[i];
          const int want = std::clamp(theta0[i] - u_hat, -127, 127);
          ASSERT_EQ(theta[i], want) << "r_max=" << r_max << " g=" << g << " i=" << i;
        }
      }
    }
  }
}

const std::size_t kSizes[] = {0, 1, 2, 15, 16, 17, 31, 32, 33, 63, 65, 1000, 4097, 100003, 1000003};
const std::uint32_t kFirsts[] = {0, 1, 31, 4095, 123456789, 0xffffff00u};

// Setting number `variant` of the sweeps below: r_max, p_zero (every 11th: p_zero 1, a threshold
// of 2^32), the multiple k, the sign g and b_zo cycle with different periods.
struct Setting {
  PerturbS8Params p;
  int r_max, k, g, b_zo;
};
Setting setting(int variant, std::uint64_t seed_base) {
  Setting st;
  st.r_max = std::array<int, 7>{1, 3, 7, 15, 31, 63, 127}[variant % 7];
  const double p_zero = std::array<double, 4>{0.33, 0.5, 0.9, 0.0}[variant % 4];
  st.k = std::array<int, 5>{1, -2, 1, 300, -1000}[variant % 5];
  st.g = variant % 3 - 1;
  st.b_zo = 1 + variant % 3;
  st.p = params(seed_base + static_cast<std::uint64_t>(variant), p_zero, st.r_max);
  if (variant % 11 == 0) st.p.zero_threshold = std::uint64_t{1} << 32;
  return st;
}

// Case (n, first) of setting st on t threads, for failure messages.
std::string describe(const Setting& st, std::size_t n, std::uint32_t first, int t) {
  return "n=" + std::to_string(n) + " first=" + std::to_string(first) + " r=" + std::to_string(st.r_max) +
         " k=" + std::to_string(st.k) + " g=" + std::to_string(st.g) + " b_zo=" + std::to_string(st.b_zo) +
         " t=" + std::to_string(t);
}

// One case of the sweeps: n values from index `first`, setting st, θ0 before the call.
struct SweepCase {
  std::size_t n;
  std::uint32_t first;
  Setting st;
  std::vector<std::int8_t> theta0;
};

// Runs fn(case) for every size of kSizes and first index of kFirsts, each with the next setting
// (setting(variant, seed_base)) and θ0 = random_theta(n, theta_base + variant); stops at the
// first fatal failure.
template <class Fn>
void for_each_sweep_case(std::uint64_t seed_base, std::uint64_t theta_base, Fn fn) {
  int variant = 0;
  for (std::size_t n : kSizes)
    for (std::uint32_t first : kFirsts) {
      ++variant;
      fn(SweepCase{n, first, setting(variant, seed_base), random_theta(n, theta_base + static_cast<std::uint64_t>(variant))});
      if (::testing::Test::HasFatalFailure()) return;
    }
}

TEST_P(PerturbS8Test, BitExactAgainstReferenceWithGuardsAndThreads) {
  const auto perturb = select_perturb_s8(GetParam());
  const auto update = select_zo_update_s8(GetParam());
  for_each_sweep_case(1000, 300, [&](const SweepCase& c) {
    const std::size_t n = c.n;
    const std::uint32_t first = c.first;
    const Setting& st = c.st;
    const std::vector<std::int8_t>& theta0 = c.theta0;
    auto want_p = theta0, want_u = theta0;
    perturb_s8_ref(want_p.data(), n, first, st.p, st.k);
    zo_update_s8_ref(want_u.data(), n, first, st.p, st.g, st.b_zo);
    for (int t : {1, 2, 3}) {
      auto got_p = theta0, got_u = theta0;
      got_p.resize(n + kGuardTail, kGuardS8);
      got_u.resize(n + kGuardTail, kGuardS8);
      with_threads(t, [&] {
        perturb(got_p.data(), n, first, st.p, st.k);
        update(got_u.data(), n, first, st.p, st.g, st.b_zo);
      });
      const auto what = [&] { return describe(st, n, first, t); };
      EXPECT_TRUE(std::equal(want_p.begin(), want_p.end(), got_p.begin())) << "perturb " << what();
      EXPECT_TRUE(std::equal(want_u.begin(), want_u.end(), got_u.begin())) << "update " << what();
      for (std::size_t q = 0; q < kGuardTail; ++q) {
        ASSERT_EQ(got_p[n + q], kGuardS8) << what();
        ASSERT_EQ(got_u[n + q], kGuardS8) << what();
      }
    }
  });
}

// A cached direction: z filled once, then the probes and the update from it, equal the
// regenerating reference for every setting above (and the fill equals perturbation_s8).
TEST_P(PerturbS8Test, CachedDirectionEqualsRegenerating) {
  const auto fill = select_fill_perturbation_s8(GetParam());
  const auto perturb = select_perturb_cached_s8(GetParam());
  const auto update = select_zo_update_cached_s8(GetParam());
  for_each_sweep_case(2000, 500, [&](const SweepCase& c) {
    const std::size_t n = c.n;
    const std::uint32_t first = c.first;
    const Setting& st = c.st;
    const std::vector<std::int8_t>& theta0 = c.theta0;
    std::vector<std::int8_t> want_z(n);
    perturbation_s8(st.p, first, n, want_z.data());
    auto want_p = theta0, want_u = theta0, want_m = theta0;
    perturb_s8_ref(want_p.data(), n, first, st.p, st.k);
    perturb_s8_ref(want_m.data(), n, first, st.p, -2);
    zo_update_s8_ref(want_u.data(), n, first, st.p, st.g, st.b_zo);
    for (int t : {1, 2}) {
      std::vector<std::int8_t> z(n + kGuardTail, kGuardS8);
      auto got_p = theta0, got_u = theta0, got_m = theta0;
      got_p.resize(n + kGuardTail, kGuardS8);
      got_u.resize(n + kGuardTail, kGuardS8);
      with_threads(t, [&] {
        fill(st.p, first, n, z.data());
        perturb(got_p.data(), z.data(), n, st.k);
        perturb(got_m.data(), z.data(), n, -2);
        update(got_u.data(), z.data(), n, st.p, st.g, st.b_zo);
      });
      const auto what = [&] { return describe(st, n, first, t); };
      EXPECT_TRUE(std::equal(want_z.begin(), want_z.end(), z.begin())) << "fill " << what();
      EXPECT_TRUE(std::equal(want_p.begin(), want_p.end(), got_p.begin())) << "perturb " << what();
      EXPECT_TRUE(std::equal(want_m.begin(), want_m.end(), got_m.begin())) << "perturb -2 " << what();
      EXPECT_TRUE(std::equal(want_u.begin(), want_u.end(), got_u.begin())) << "update " << what();
      for (std::size_t q = 0; q < kGuardTail; ++q) {
        ASSERT_EQ(z[n + q], kGuardS8) << what();
        ASSERT_EQ(got_p[n + q], kGuardS8) << what();
        ASSERT_EQ(got_u[n + q], kGuardS8) << what();
      }
    }
  });
}

TEST_P(PerturbS8Test, OneCallEqualsTwoCallsOnSplitRanges) {
  const auto perturb = select_perturb_s8(GetParam());
  const auto update = select_zo_update_s8(GetParam());
  const std::size_t n = 300007;
  const auto p = params(2024, 0.5, 15);
  const std::uint32_t first = 0xfffe0000u;  // the split range wraps past 2^32
  const auto theta0 = random_theta(n, 1);
  auto whole_p = theta0, whole_u = theta0;
  perturb(whole_p.data(), n, first, p, -2);
  update(whole_u.data(), n, first, p, 1, 1);
  for (std::size_t split : {std::size_t{0}, std::size_t{1}, std::size_t{33}, std::size_t{4096},
                            std::size_t{131072}, std::size_t{299999}, n}) {
    auto parts_p = theta0, parts_u = theta0;
    const auto f2 = first + static_cast<std::uint32_t>(split);
    perturb(parts_p.data(), split, first, p, -2);
    perturb(parts_p.data() + split, n - split, f2, p, -2);
    update(parts_u.data(), split, first, p, 1, 1);
    update(parts_u.data() + split, n - split, f2, p, 1, 1);
    EXPECT_EQ(parts_p, whole_p) << "split=" << split;
    EXPECT_EQ(parts_u, whole_u) << "split=" << split;
  }
}

// Saturation extremes: θ = −128 or 127 everywhere, the widest r_max and the widest of the
// update's table path (31), every element perturbed, large k and g, against the reference.
TEST_P(PerturbS8Test, ExtremesEverywhereMatchTheReference) {
  const auto perturb = select_perturb_s8(GetParam());
  const auto update = select_zo_update_s8(GetParam());
  for (std::size_t n : {std::size_t{1}, std::size_t{15}, std::size_t{16}, std::size_t{17}, std::size_t{47},
                        std::size_t{4099}}) {
    for (int r_max : {31, 127})
    for (std::int8_t tv : {std::int8_t{-128}, std::int8_t{127}}) {
      const auto p = params(99, 0.0, r_max);
      for (int k : {1, -2, 255, -1000}) {
        std::vector<std::int8_t> want(n, tv), got(n + kGuardTail, kGuardS8);
        std::fill_n(got.begin(), n, tv);
        perturb_s8_ref(want.data(), n, 7, p, k);
        perturb(got.data(), n, 7, p, k);
        EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin())) << "n=" << n << " k=" << k;
        for (std::size_t q = 0; q < kGuardTail; ++q) ASSERT_EQ(got[n + q], kGuardS8);
      }
      for (int g : {-1, 1, (1 << 24) - 1, -((1 << 24) - 1)})
        for (int b_zo : {1, 3, 7, 8}) {
          std::vector<std::int8_t> want(n, tv), got(n + kGuardTail, kGuardS8);
          std::fill_n(got.begin(), n, tv);
          zo_update_s8_ref(want.data(), n, 7, p, g, b_zo);
          update(got.data(), n, 7, p, g, b_zo);
          EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin())) << "n=" << n << " g=" << g << " b=" << b_zo;
          for (std::size_t q = 0; q < kGuardTail; ++q) ASSERT_EQ(got[n + q], kGuardS8);
        }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(PerturbS8, PerturbS8Test,
                         ::testing::ValuesIn(kAllIsas),
                         [](const auto& info) { return test::param_name(isa_name(info.param)); });

}  // namespace
}  // namespace zt::kernels
