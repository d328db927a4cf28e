// Seeded Gaussian perturbation: every path bit-identical to the reference (all tail lengths, odd
// offsets, sub-ranges, thread counts, guard bytes), exact regeneration, the ZO ±ε round trip,
// the accuracy of the in-project log/sqrt/sin/cos against libm, and the statistics of z.
// Tolerance policy: path vs path and call vs call are bit-exact; statistics use 5σ bounds of
// their sampling error with fixed seeds (so the tests are deterministic).
#include "zotrain/kernels/perturb.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "../../src/kernels/perturb/perturb_internal.hpp"
#include "zotrain/core/rng.hpp"
#include "../support.hpp"

#ifdef ZT_OPENMP
#include <omp.h>
#endif

namespace {

using namespace zt::kernels;
namespace pd = zt::kernels::perturb_detail;

constexpr std::size_t kGuard = 16;
constexpr std::uint32_t kGuardBits = 0x7fc0dead;  // a NaN payload no kernel writes

std::uint32_t bits(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}

// Buffer of n floats followed by kGuard guard words.
struct Guarded {
  std::vector<float> v;
  explicit Guarded(std::size_t n, float fill = 0.0f) : v(n + kGuard, fill) {
    for (std::size_t i = 0; i < kGuard; ++i) std::memcpy(&v[n + i], &kGuardBits, 4);
  }
  float* data() { return v.data(); }
  bool guards_intact(std::size_t n) const {
    for (std::size_t i = 0; i < kGuard; ++i) {
      if (bits(v[n + i]) != kGuardBits) return false;
    }
    return true;
  }
};

std::vector<float> random_theta(std::size_t n, std::uint64_t seed) {
  zt::SplitMix64 g(seed);
  std::vector<float> t(n);
  for (auto& x : t) x = 2.0f * g.uniform() - 1.0f;
  return t;
}

// First index where two float arrays differ in bits, or -1.
std::string sci(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

long first_mismatch(const float* a, const float* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (bits(a[i]) != bits(b[i])) return static_cast<long>(i);
  }
  return -1;
}

const std::size_t kSizes[] = {0, 1, 3, 5, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 1000, 107786};
const std::uint64_t kOffsets[] = {0,  1,       13, 31, 32, 1000003,
                                  (1ULL << 33) - 37};  // straddles the 2^32-pair key switch

// ---- paths -------------------------------------------------------------------------------

// Runs fn(n, off) for every size of kSizes and offset of kOffsets; past n = 1000 only for the
// offsets 0 and 13 (the reference is slow under qemu).
template <class Fn>
void for_each_size_offset(Fn fn) {
  for (std::size_t n : kSizes)
    for (std::uint64_t off : kOffsets) {
      if (n > 1000 && off != 0 && off != 13) continue;
      fn(n, off);
    }
}

using PerturbPathTest = zt::test::IsaTest;

TEST_P(PerturbPathTest, SelectReturnsThePathAsked) {
  const Isa isa = GetParam();
  if (isa == Isa::kReference) {
    EXPECT_EQ(select_fill_gaussian_f32(isa), &fill_gaussian_f32_ref);
    EXPECT_EQ(select_perturb_gaussian_f32(isa), &perturb_gaussian_f32_ref);
    EXPECT_EQ(select_perturb_fill_gaussian_f32(isa), &perturb_fill_gaussian_f32_ref);
#if defined(ZT_HAVE_NEON)
  } else if (isa == Isa::kNeon || isa == Isa::kNeonDot) {
    EXPECT_EQ(select_fill_gaussian_f32(isa), &fill_gaussian_f32_neon);
    EXPECT_EQ(select_perturb_gaussian_f32(isa), &perturb_gaussian_f32_neon);
    EXPECT_EQ(select_perturb_fill_gaussian_f32(isa), &perturb_fill_gaussian_f32_neon);
#endif
  } else {
    EXPECT_EQ(select_fill_gaussian_f32(isa), &fill_gaussian_f32_portable);
    EXPECT_EQ(select_perturb_gaussian_f32(isa), &perturb_gaussian_f32_portable);
    EXPECT_EQ(select_perturb_fill_gaussian_f32(isa), &perturb_fill_gaussian_f32_portable);
    EXPECT_EQ(select_update_perturb_fill_gaussian_f32(isa),
              &update_perturb_fill_gaussian_f32_portable);
  }
}

TEST_P(PerturbPathTest, FillMatchesReferenceBitForBit) {
  const Isa isa = GetParam();
  const FillGaussianF32Fn fill = select_fill_gaussian_f32(isa);
  for_each_size_offset([&](std::size_t n, std::uint64_t off) {
    Guarded want(n), got(n);
    fill_gaussian_f32_ref(want.data(), n, 42, 3, off);
    fill(got.data(), n, 42, 3, off);
    EXPECT_EQ(first_mismatch(want.data(), got.data(), n), -1) << "n=" << n << " off=" << off;
    EXPECT_TRUE(got.guards_intact(n)) << "n=" << n << " off=" << off;
  });
}

TEST_P(PerturbPathTest, PerturbMatchesReferenceBitForBit) {
  const Isa isa = GetParam();
  const PerturbGaussianF32Fn perturb = select_perturb_gaussian_f32(isa);
  for_each_size_offset([&](std::size_t n, std::uint64_t off) {
    const std::vector<float> theta = random_theta(n, n + off);
    Guarded want(n), got(n);
    std::copy(theta.begin(), theta.end(), want.v.begin());
    std::copy(theta.begin(), theta.end(), got.v.begin());
    perturb_gaussian_f32_ref(want.data(), n, 7, 11, off, -2.5e-3f);
    perturb(got.data(), n, 7, 11, off, -2.5e-3f);
    EXPECT_EQ(first_mismatch(want.data(), got.data(), n), -1) << "n=" << n << " off=" << off;
    EXPECT_TRUE(got.guards_intact(n)) << "n=" << n << " off=" << off;
  });
}

// One pass that perturbs θ and keeps z (perturb_fill): θ as perturb leaves it, z as fill writes
// it. Then one pass that applies the update of the direction z holds and perturbs θ by the next
// one, keeping it (update_perturb_fill): θ as add_scaled_f32 then perturb leave it.
TEST_P(PerturbPathTest, PerturbFillIsPerturbAndFillBitForBit) {
  const Isa isa = GetParam();
  const PerturbFillF32Fn perturb_fill = select_perturb_fill_gaussian_f32(isa);
  const UpdatePerturbFillF32Fn update_perturb_fill = select_update_perturb_fill_gaussian_f32(isa);
  for_each_size_offset([&](std::size_t n, std::uint64_t off) {
    const std::vector<float> theta = random_theta(n, n + off + 5);
    Guarded want_theta(n), want_z(n), got_theta(n), got_z(n);
    std::copy(theta.begin(), theta.end(), want_theta.v.begin());
    std::copy(theta.begin(), theta.end(), got_theta.v.begin());
    const auto check = [&](const char* what) {
      const std::string at = std::string(what) + " n=" + std::to_string(n) + " off=" +
                             std::to_string(off);
      EXPECT_EQ(first_mismatch(want_theta.data(), got_theta.data(), n), -1) << at;
      EXPECT_EQ(first_mismatch(want_z.data(), got_z.data(), n), -1) << at;
      EXPECT_TRUE(got_theta.guards_intact(n)) << at;
      EXPECT_TRUE(got_z.guards_intact(n)) << at;
    };
    perturb_gaussian_f32_ref(want_theta.data(), n, 3, 6, off, 1e-3f);
    fill_gaussian_f32_ref(want_z.data(), n, 3, 6, off);
    perturb_fill(got_theta.data(), got_z.data(), n, 3, 6, off, 1e-3f);
    check("perturb_fill");
    add_scaled_f32(want_theta.data(), want_z.data(), n, -7.5e-3f);
    perturb_gaussian_f32_ref(want_theta.data(), n, 9, 4, off, 2e-3f);
    fill_gaussian_f32_ref(want_z.data(), n, 9, 4, off);
    update_perturb_fill(got_theta.data(), got_z.data(), n, 9, 4, off, -7.5e-3f, 2e-3f);
    check("update_perturb_fill");
  });
}

#ifdef ZT_OPENMP
TEST_P(PerturbPathTest, ThreadCountDoesNotChangeBits) {
  const Isa isa = GetParam();
  const std::size_t n = 107786;
  std::vector<float> want(n), theta0 = random_theta(n, 1), theta_ref = theta0;
  fill_gaussian_f32_ref(want.data(), n, 5, 1, 3);
  perturb_gaussian_f32_ref(theta_ref.data(), n, 5, 1, 3, 0.01f);
  const int saved = omp_get_max_threads();
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    std::vector<float> got(n);
    select_fill_gaussian_f32(isa)(got.data(), n, 5, 1, 3);
    EXPECT_EQ(first_mismatch(want.data(), got.data(), n), -1) << threads << " threads";
    std::vector<float> theta = theta0;
    select_perturb_gaussian_f32(isa)(theta.data(), n, 5, 1, 3, 0.01f);
    EXPECT_EQ(first_mismatch(theta_ref.data(), theta.data(), n), -1) << threads << " threads";
    std::vector<float> z(n);
    theta = theta0;
    select_perturb_fill_gaussian_f32(isa)(theta.data(), z.data(), n, 5, 1, 3, 0.01f);
    EXPECT_EQ(first_mismatch(theta_ref.data(), theta.data(), n), -1) << threads << " threads";
    EXPECT_EQ(first_mismatch(want.data(), z.data(), n), -1) << threads << " threads";
  }
  omp_set_num_threads(saved);
}
#endif

INSTANTIATE_TEST_SUITE_P(AllIsas, PerturbPathTest,
                         ::testing::ValuesIn(kAllIsas), zt::test::isa_test_name);

TEST(PerturbTest, ElementIsPureFunctionOfIndex) {
  // Filling [off, off + n) in one call equals filling it in irregular sub-ranges, and each
  // element equals gaussian_ref(seed, stream, off + i).
  const std::size_t n = 5000;
  const std::uint64_t off = 777;
  std::vector<float> whole(n), parts(n);
  fill_gaussian_f32_portable(whole.data(), n, 9, 2, off);
  const std::size_t cuts[] = {0, 1, 3, 34, 35, 100, 1031, 1032, 2048, 4999, n};
  for (std::size_t c = 0; c + 1 < std::size(cuts); ++c) {
    fill_gaussian_f32_portable(parts.data() + cuts[c], cuts[c + 1] - cuts[c], 9, 2, off + cuts[c]);
  }
  EXPECT_EQ(first_mismatch(whole.data(), parts.data(), n), -1);
  for (std::size_t i = 0; i < n; i += 37) {
    ASSERT_EQ(bits(whole[i]), bits(gaussian_ref(9, 2, off + i))) << i;
  }
}

TEST(PerturbTest, GoldenValuesAreArchitectureIndependent) {
  // Recorded on x86-64 (AVX-512 build); reproduced bit for bit by an aarch64 build under qemu.
  struct Golden {
    std::uint64_t seed, stream, index;
    std::uint32_t z_bits;
  };
  const Golden golden[] = {
      {42, 3, 0, 0x3e0281c5u},
      {42, 3, 1, 0x3fd64f77u},
      {42, 3, 17, 0xbeddcb01u},
      {42, 3, 1000003, 0xbf2521efu},
      {1, 0, (1ULL << 33) + 5, 0xbecb7d40u},
      {0xdeadbeefcafeULL, 123456789, 31, 0x3fb24050u},
  };
  for (const auto& g : golden) {
    EXPECT_EQ(bits(gaussian_ref(g.seed, g.stream, g.index)), g.z_bits)
        << std::hex << "seed " << g.seed << " stream " << g.stream << " index " << g.index
        << " got 0x" << bits(gaussian_ref(g.seed, g.stream, g.index));
  }
}


// ---- ZO use ------------------------------------------------------------------------------

TEST(PerturbTest, RegenerationIsExactAndScaleIsElementwise) {
  const std::size_t n = 10007;
  std::vector<float> z1(n), z2(n);
  fill_gaussian_f32_portable(z1.data(), n, 123, 4, 0);
  fill_gaussian_f32_portable(z2.data(), n, 123, 4, 0);
  EXPECT_EQ(first_mismatch(z1.data(), z2.data(), n), -1);
  // perturb computes theta + scale·z with exactly those z (the product rounded on its own).
  std::vector<float> theta = random_theta(n, 3), before = theta;
  perturb_gaussian_f32_portable(theta.data(), n, 123, 4, 0, 0.37f);
  for (std::size_t i = 0; i < n; ++i) {
    volatile float prod = 0.37f * z1[i];  // volatile: keep the test compiler from fusing (FMA)
    ASSERT_EQ(bits(theta[i]), bits(before[i] + prod)) << i;
  }
}

TEST(PerturbTest, PlusMinusPlusRoundTripReturnsTheta) {
  // θ += εz; θ −= 2εz; θ += εz. fl(−2ε·z) = −2·fl(ε·z) exactly (power-of-two scale), so only the
  // three additions round, each by at most 2^-24 of its result:
  //   |θ_end − θ_0| ≤ 3·2^-24·(|θ_0| + 2ε|z|).
  const std::size_t n = 107786;
  const float eps = 1e-3f;
  const std::vector<float> theta0 = random_theta(n, 17);
  std::vector<float> theta = theta0, z(n);
  fill_gaussian_f32_portable(z.data(), n, 2024, 6, 100);
  perturb_gaussian_f32_portable(theta.data(), n, 2024, 6, 100, eps);
  perturb_gaussian_f32_portable(theta.data(), n, 2024, 6, 100, -2.0f * eps);
  perturb_gaussian_f32_portable(theta.data(), n, 2024, 6, 100, eps);
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double bound =
        3.0 * 0x1p-24 * (std::fabs(theta0[i]) + 2.0 * eps * std::fabs(z[i]));
    const double err = std::fabs(static_cast<double>(theta[i]) - theta0[i]);
    ASSERT_LE(err, bound) << i;
    worst = std::max(worst, err / bound);
  }
  RecordProperty("worst_fraction_of_bound", sci(worst));
}

// ---- the transform against libm (test-only reference) ---------------------------------------

TEST(GaussianTransformTest, LogMatchesLibm) {
  double worst = 0;
  for (std::uint32_t a = 0; a < (1u << 24); a += (a < 4096 || a > (1u << 24) - 4096) ? 1 : 251) {
    const double u1 = static_cast<double>((1u << 24) - a) * 0x1p-24;
    const double want = -2.0 * std::log(u1);
    const double got = pd::neg2_log_from_bits_exact(a);
    // Relative error, with an absolute floor at the smallest nonzero w (2·2^-24).
    worst = std::max(worst, std::fabs(got - want) / std::max(want, 0x1p-23));
  }
  EXPECT_LT(worst, 3e-7);
  RecordProperty("log_max_rel_error", sci(worst));
}

TEST(GaussianTransformTest, RadiusMatchesLibmAndNeverNaN) {
  double worst = 0;
  // Every input within 2^16 of either end of the domain (u1 → 1 and u1 → 2^-24, where a NaN/Inf
  // or a negative w would come from), every 13th in between.
  for (std::uint32_t a = 0; a < (1u << 24); a += (a < (1u << 16) || a >= (1u << 24) - (1u << 16)) ? 1 : 13) {
    const float r = pd::radius_from_bits_exact(a);
    ASSERT_TRUE(std::isfinite(r)) << a;
    ASSERT_GE(r, 0.0f) << a;
    ASSERT_LE(r, 5.7684f) << a;
    if (a % 97 == 0 || a > (1u << 24) - 64) {
      const double want = std::sqrt(-2.0 * std::log(((1u << 24) - a) * 0x1p-24));
      worst = std::max(worst, std::fabs(r - want) / std::max(want, 1e-3));
    }
  }
  EXPECT_LT(worst, 5e-7);
  EXPECT_EQ(pd::radius_from_bits_exact(0), 0.0f);  // u1 = 1
  EXPECT_NEAR(pd::radius_from_bits_exact((1u << 24) - 1), std::sqrt(48.0 * std::log(2.0)), 1e-5);
  RecordProperty("radius_max_rel_error", sci(worst));
}

TEST(GaussianTransformTest, CosSinMatchLibm) {
  const double two_pi = 6.283185307179586;
  double worst = 0;
  auto check = [&](std::uint32_t b) {
    const pd::CosSin cs = pd::cossin_from_bits_exact(b);
    ASSERT_TRUE(std::isfinite(cs.c) && std::isfinite(cs.s)) << b;
    const double phi = two_pi * b * 0x1p-24;
    worst = std::max({worst, std::fabs(cs.c - std::cos(phi)), std::fabs(cs.s - std::sin(phi))});
  };
  for (std::uint32_t b = 0; b < (1u << 24); b += 61) check(b);
  for (std::uint32_t b : {0u, 1u, (1u << 21) - 1, 1u << 21, 1u << 22, 3u << 22, (1u << 24) - 1}) {
    check(b);
  }
  // Both sides of every quadrant rounding edge (the quadrant swap/sign bits come from b + 2^21).
  for (std::uint32_t k = 0; k < 4; ++k) {
    const std::uint32_t edge = (2 * k + 1) << 21;
    for (std::uint32_t b : {edge - 2, edge - 1, edge, edge + 1}) check(b);
  }
  EXPECT_LT(worst, 2e-7);
  RecordProperty("cossin_max_abs_error", sci(worst));
}

TEST(GaussianTransformTest, HashIsAKeyedPermutationWithAvalanche) {
  // Changing one counter bit flips about half of the output bits; keys change the output.
  double flips = 0;
  int count = 0;
  for (std::uint32_t x = 0; x < 4000; x += 3) {
    for (int bit = 0; bit < 32; ++bit) {
      flips += __builtin_popcount(pd::pair_hash_exact(x, 0x1234, 0x9876) ^
                                  pd::pair_hash_exact(x ^ (1u << bit), 0x1234, 0x9876));
      ++count;
    }
  }
  EXPECT_NEAR(flips / count, 16.0, 0.1);
  EXPECT_NE(pd::pair_hash_exact(5, 1, 2), pd::pair_hash_exact(5, 1, 3));
  EXPECT_NE(pd::pair_hash_exact(5, 1, 2), pd::pair_hash_exact(5, 2, 2));
}

// ---- statistics --------------------------------------------------------------------------

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

// Chi-square statistic of Φ(z) over k equiprobable bins.
double chi_square_normal(const std::vector<float>& z, int k) {
  std::vector<double> counts(k, 0.0);
  for (float v : z) {
    const int bin = std::min(k - 1, static_cast<int>(normal_cdf(v) * k));
    counts[bin] += 1;
  }
  const double expect = static_cast<double>(z.size()) / k;
  double chi2 = 0;
  for (double c : counts) chi2 += (c - expect) * (c - expect) / expect;
  return chi2;
}

// Kolmogorov–Smirnov distance of the sample from Φ.
double ks_normal(std::vector<float> z) {
  std::sort(z.begin(), z.end());
  const double n = static_cast<double>(z.size());
  double d = 0;
  for (std::size_t i = 0; i < z.size(); ++i) {
    const double f = normal_cdf(z[i]);
    d = std::max({d, f - i / n, (i + 1) / n - f});
  }
  return d;
}

constexpr std::size_t kDraws = 1u << 21;  // 2.1 M draws in one call (many groups, both halves)
// Thresholds: chi-square with 199 d.o.f. has mean 199 and sd 20: 199 + 5·20 ≈ 300. KS at
// p = 1e-4 for n = 2^21: sqrt(−ln(1e-4 / 2) / 2) / sqrt(n) ≈ 1.54e-3.
constexpr int kBins = 200;
constexpr double kChi2Max = 300.0;
const double kKsMax = std::sqrt(-std::log(1e-4 / 2) / 2) / std::sqrt(double(kDraws));

const std::vector<float>& draws() {
  static const std::vector<float> z = [] {
    std::vector<float> v(kDraws);
    fill_gaussian_f32_portable(v.data(), v.size(), 0x5eed, 7, 12345);
    return v;
  }();
  return z;
}

TEST(GaussianStatsTest, MeanVarianceTailsAndFinite) {
  const auto& z = draws();
  const double n = static_cast<double>(z.size());
  double s1 = 0, s2 = 0, gt2 = 0, gt3 = 0, gt4 = 0;
  for (float v : z) {
    ASSERT_TRUE(std::isfinite(v));
    ASSERT_LE(std::fabs(v), 5.7684f);
    s1 += v;
    s2 += static_cast<double>(v) * v;
    gt2 += std::fabs(v) > 2.0f;
    gt3 += std::fabs(v) > 3.0f;
    gt4 += std::fabs(v) > 4.0f;
  }
  const double mean = s1 / n, var = s2 / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 5.0 / std::sqrt(n));
  EXPECT_NEAR(var, 1.0, 5.0 * std::sqrt(2.0 / n));
  auto tail = [&](double count, double p, const char* name) {
    EXPECT_NEAR(count / n, p, 5.0 * std::sqrt(p * (1 - p) / n)) << name;
  };
  tail(gt2, 2 * normal_cdf(-2.0), "P(|z|>2)");
  tail(gt3, 2 * normal_cdf(-3.0), "P(|z|>3)");
  tail(gt4, 2 * normal_cdf(-4.0), "P(|z|>4)");
  RecordProperty("mean", sci(mean));
  RecordProperty("variance", sci(var));
  RecordProperty("p_gt2", sci(gt2 / n));
  RecordProperty("p_gt3", sci(gt3 / n));
  RecordProperty("p_gt4", sci(gt4 / n));
}

TEST(GaussianStatsTest, GoodnessOfFitAndItsPower) {
  const auto& z = draws();
  const double chi2 = chi_square_normal(z, kBins);
  const double ks = ks_normal(z);
  EXPECT_LT(chi2, kChi2Max);
  EXPECT_LT(ks, kKsMax);
  RecordProperty("chi2_199dof", sci(chi2));
  RecordProperty("ks_distance", sci(ks));
  // The same thresholds reject near misses: 2 % too wide, a first-order log (ln u ≈ u − 1), and
  // uniforms with the right variance.
  std::vector<float> wide(z.size()), crude(z.size()), unif(z.size());
  for (std::size_t i = 0; i < z.size(); ++i) wide[i] = 1.02f * z[i];
  for (std::size_t i = 0; i < z.size(); i += 2) {
    // Rebuild pairs with a bad log: r² = −2 (u − 1) for the same (u, φ) ⇒ r² ∈ [0, 2].
    const double r2 = double(z[i]) * z[i] + double(z[i + 1]) * z[i + 1];
    const double u = std::exp(-r2 / 2), scale = std::sqrt(2 * (1 - u) / std::max(r2, 1e-300));
    crude[i] = static_cast<float>(z[i] * scale);
    crude[i + 1] = static_cast<float>(z[i + 1] * scale);
    unif[i] = static_cast<float>(std::sqrt(3.0) * (2 * normal_cdf(z[i]) - 1));
    unif[i + 1] = static_cast<float>(std::sqrt(3.0) * (2 * normal_cdf(z[i + 1]) - 1));
  }
  const double chi2_wide = chi_square_normal(wide, kBins);
  const double chi2_crude = chi_square_normal(crude, kBins);
  const double chi2_unif = chi_square_normal(unif, kBins);
  EXPECT_GT(chi2_wide, kChi2Max);
  EXPECT_GT(chi2_crude, kChi2Max);
  EXPECT_GT(chi2_unif, kChi2Max);
  RecordProperty("chi2_wide", sci(chi2_wide));
  RecordProperty("chi2_crude_log", sci(chi2_crude));
  RecordProperty("chi2_uniform", sci(chi2_unif));
}

double correlation(const float* a, const float* b, std::size_t n) {
  double sa = 0, sb = 0, sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sa += a[i];
    sb += b[i];
    sab += double(a[i]) * b[i];
    saa += double(a[i]) * a[i];
    sbb += double(b[i]) * b[i];
  }
  const double cov = sab / n - (sa / n) * (sb / n);
  return cov / std::sqrt((saa / n - (sa / n) * (sa / n)) * (sbb / n - (sb / n) * (sb / n)));
}

TEST(GaussianStatsTest, StreamsSeedsAndNeighboursUncorrelated) {
  const std::size_t n = 1u << 18;
  const double tol = 5.0 / std::sqrt(double(n));
  std::vector<float> base(n), other(n);
  fill_gaussian_f32_portable(base.data(), n, 77, 0, 0);
  fill_gaussian_f32_portable(other.data(), n, 77, 1, 0);  // next stream
  EXPECT_NEAR(correlation(base.data(), other.data(), n), 0.0, tol) << "streams";
  fill_gaussian_f32_portable(other.data(), n, 78, 0, 0);  // next seed
  EXPECT_NEAR(correlation(base.data(), other.data(), n), 0.0, tol) << "seeds";
  // Squares too (Box–Muller partners share r): corr(z², z'²) ≈ 0 for the sin partner.
  const std::size_t m = n / 32;
  std::vector<float> c2(m * 16), s2(m * 16), lag(n - 1), lag1(n - 1);
  for (std::size_t b = 0; b < m; ++b) {
    for (int j = 0; j < 16; ++j) {
      c2[b * 16 + j] = base[b * 32 + j] * base[b * 32 + j];
      s2[b * 16 + j] = base[b * 32 + 16 + j] * base[b * 32 + 16 + j];
    }
  }
  EXPECT_NEAR(correlation(base.data(), base.data() + 16, n - 16), 0.0, tol) << "lag 16";
  EXPECT_NEAR(correlation(base.data(), base.data() + 1, n - 1), 0.0, tol) << "lag 1";
  EXPECT_NEAR(correlation(c2.data(), s2.data(), m * 16), 0.0, 5.0 / std::sqrt(double(m * 16)))
      << "squares of pair partners";
}

}  // namespace
