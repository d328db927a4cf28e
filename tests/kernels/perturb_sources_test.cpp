// The non-Gaussian perturbation sources (src/kernels/perturb/perturb_sources.cpp): the fast path
// equals the one-element reference bit for bit at any offset, length and thread count, the
// values are what the definitions say (±1; √3·U(−1, 1) with mean 0, variance 1; XORShift's
// signs are the paper's generator stepped once per element), and the names of zo.perturbation
// map to them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#ifdef ZT_OPENMP
#include <omp.h>
#endif

#include "../support.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/kernels/perturb.hpp"

namespace zt::kernels {
namespace {

constexpr PerturbSource kOthers[] = {PerturbSource::kRademacher, PerturbSource::kUniform};

std::uint32_t bits(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}

TEST(PerturbSources, FastPathMatchesReferenceBitForBit) {
  const std::size_t sizes[] = {1, 5, 31, 32, 33, 100, 2049, 70001};
  const std::uint64_t offsets[] = {0, 7, 32, 1000003, (std::uint64_t{1} << 33) - 37};
  for (PerturbSource s : kOthers) {
    for (std::size_t n : sizes) {
      for (std::uint64_t off : offsets) {
        std::vector<float> got(n + 1, -7.0f), theta(n + 1, 0.25f), want(n + 1, 0.25f);
        select_fill_f32(s, best_isa())(got.data(), n, 11, 3, off);
        select_perturb_f32(s, best_isa())(theta.data(), n, 11, 3, off, 0.5f);
        perturb_f32_ref(s, want.data(), n, 11, 3, off, 0.5f);
        const std::string what = std::string(perturb_source_name(s)) + " n " +
                                 std::to_string(n) + " offset " + std::to_string(off);
        for (std::size_t i = 0; i < n; ++i) {
          ASSERT_EQ(bits(got[i]), bits(perturbation_ref(s, 11, 3, off + i))) << what << " " << i;
          ASSERT_EQ(bits(theta[i]), bits(want[i])) << what << " " << i;
        }
        EXPECT_EQ(got[n], -7.0f) << what;  // nothing written past the end
        EXPECT_EQ(theta[n], 0.25f) << what;
      }
    }
  }
}

#ifdef ZT_OPENMP
TEST(PerturbSources, ThreadCountDoesNotChangeBits) {
  const std::size_t n = 107786;
  const int saved = omp_get_max_threads();
  for (PerturbSource s : {PerturbSource::kRademacher, PerturbSource::kUniform,
                          PerturbSource::kXorshift}) {
    std::vector<float> want(n);
    omp_set_num_threads(1);
    select_fill_f32(s, best_isa())(want.data(), n, 5, 1, 3);
    for (int threads : {2, 3}) {
      omp_set_num_threads(threads);
      std::vector<float> got(n);
      select_fill_f32(s, best_isa())(got.data(), n, 5, 1, 3);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), n * sizeof(float)), 0)
          << perturb_source_name(s) << " " << threads << " threads";
    }
  }
  omp_set_num_threads(saved);
}
#endif

// Recorded on x86-64; the aarch64 and armhf builds run this test under qemu and must agree.
TEST(PerturbSources, GoldenValuesAreArchitectureIndependent) {
  struct Golden {
    PerturbSource s;
    std::uint64_t index;
    std::uint32_t z_bits;
  };
  const Golden golden[] = {
      {PerturbSource::kRademacher, 0, 0x3f800000u},
      {PerturbSource::kRademacher, 17, 0xbf800000u},
      {PerturbSource::kRademacher, 31, 0xbf800000u},
      {PerturbSource::kRademacher, 1000003, 0x3f800000u},
      {PerturbSource::kUniform, 0, 0xbfd909d0u},
      {PerturbSource::kUniform, 17, 0x3fcbd5f7u},
      {PerturbSource::kUniform, (std::uint64_t{1} << 33) + 5, 0xbfb5d76du},
      {PerturbSource::kXorshift, 0, 0x3f800000u},
      {PerturbSource::kXorshift, 1, 0xbf800000u},
      {PerturbSource::kXorshift, 4097, 0x3f800000u},
      {PerturbSource::kXorshift, 1000003, 0xbf800000u},
  };
  // XORShift's start state (a hash of seed and stream) and a jump, whole words.
  EXPECT_EQ(xorshift_state(42, 3), 0x4e28fb44u);
  EXPECT_EQ(xorshift_jump(xorshift_state(42, 3), 1000004), 0x50bada2bu);
  for (const Golden& g : golden)
    EXPECT_EQ(bits(perturbation_ref(g.s, 42, 3, g.index)), g.z_bits)
        << perturb_source_name(g.s) << " index " << g.index << std::hex << " got 0x"
        << bits(perturbation_ref(g.s, 42, 3, g.index));
}

TEST(PerturbSources, ValuesFollowTheirDefinitions) {
  const std::size_t n = 1 << 20;
  std::vector<float> z(n);
  select_fill_f32(PerturbSource::kRademacher, best_isa())(z.data(), n, 7, 0, 0);
  double sum = 0;
  for (float v : z) {
    ASSERT_TRUE(v == 1.0f || v == -1.0f) << v;
    sum += v;
  }
  EXPECT_LT(std::abs(sum / n), 5.0 / std::sqrt(double(n)));  // mean 0 within 5 sigma
  select_fill_f32(PerturbSource::kUniform, best_isa())(z.data(), n, 7, 0, 0);
  double m1 = 0, m2 = 0, m4 = 0;
  for (float v : z) {
    ASSERT_LT(std::abs(v), std::sqrt(3.0f)) << v;
    m1 += v;
    m2 += double(v) * v;
    m4 += double(v) * v * v * v;
  }
  m1 /= n, m2 /= n, m4 /= n;
  EXPECT_LT(std::abs(m1), 5.0 / std::sqrt(double(n)));
  EXPECT_NEAR(m2, 1.0, 5.0 * std::sqrt(0.8 / n));     // Var(z²) = 9/5 − 1
  EXPECT_NEAR(m4, 1.8, 0.02);                          // E z⁴ = 9/5 for √3·U(−1, 1)
  // Distinct streams and seeds give unrelated directions.
  std::vector<float> a(4096), b(4096);
  select_fill_f32(PerturbSource::kUniform, best_isa())(a.data(), a.size(), 7, 0, 0);
  select_fill_f32(PerturbSource::kUniform, best_isa())(b.data(), b.size(), 7, 1, 0);
  double dot = 0;
  for (std::size_t i = 0; i < a.size(); ++i) dot += double(a[i]) * b[i];
  EXPECT_LT(std::abs(dot / a.size()), 5.0 / std::sqrt(double(a.size())));
}

// ---- XORShift ------------------------------------------------------------------------------

// Poor Man's Training's generator as its paper prints it (xor_rand(), shifts 13, 17, 5), and its
// sign rule (least significant bit 1 → −1).
struct PaperXorshift {
  unsigned int xor_seed;
  unsigned int xor_rand() {
    xor_seed ^= xor_seed << 13;
    xor_seed ^= xor_seed >> 17;
    xor_seed ^= xor_seed << 5;
    return xor_seed;
  }
  float rademacher() { return (xor_rand() & 1U) != 0 ? -1.0f : 1.0f; }
};

TEST(Xorshift, IsThePapersGeneratorSteppedOncePerElement) {
  // Marsaglia's xorshift32 from state 1: 1 ^ 1<<13 = 0x2001, >>17 changes nothing, ^ 0x2001<<5.
  EXPECT_EQ(xorshift32(1), 0x42021u);
  EXPECT_EQ(PaperXorshift{1}.xor_rand(), 270369u);
  // A jump of k equals k steps (the tabled powers of the GF(2) matrix).
  std::uint32_t x = 0x12345678u;
  std::uint64_t stepped = 0;
  for (std::uint64_t k : {0, 1, 2, 31, 32, 33, 1000, 65536, 70001}) {
    for (; stepped < k; ++stepped) x = xorshift32(x);
    EXPECT_EQ(xorshift_jump(0x12345678u, k), x) << "k " << k;
  }
  EXPECT_EQ(xorshift_jump(0x12345678u, 0xffffffffULL + 70001), x) << "taken mod the period";
  // A perturbation is the paper's sequence from xorshift_state(seed, stream), any slice of it
  // starting where it should, and perturb adds scale · z with one rounding.
  const std::size_t n = 70001;
  PaperXorshift paper{xorshift_state(11, 3)};
  std::vector<float> want(n);
  for (float& z : want) z = paper.rademacher();
  const auto fill = select_fill_f32(PerturbSource::kXorshift, best_isa());
  const auto perturb = select_perturb_f32(PerturbSource::kXorshift, best_isa());
  for (std::uint64_t off : {0, 7, 4096, 40000}) {
    const std::size_t len = n - off;
    std::vector<float> got(len + 1, -7.0f), theta(len + 1, 0.25f);
    fill(got.data(), len, 11, 3, off);
    perturb(theta.data(), len, 11, 3, off, 0.5f);
    for (std::size_t i = 0; i < len; ++i) {
      ASSERT_EQ(got[i], want[off + i]) << "offset " << off << " element " << i;
      ASSERT_EQ(theta[i], 0.25f + 0.5f * want[off + i]) << "offset " << off << " element " << i;
    }
    EXPECT_EQ(got[len], -7.0f) << "nothing written past the end";
    EXPECT_EQ(theta[len], 0.25f);
  }
  for (std::uint64_t i : {0, 1, 999, 70000})
    EXPECT_EQ(perturbation_ref(PerturbSource::kXorshift, 11, 3, i), want[i]) << i;
  // Balanced signs; distinct (seed, stream) give distinct start states.
  double sum = 0;
  for (float z : want) sum += z;
  EXPECT_LT(std::abs(sum / n), 5.0 / std::sqrt(double(n)));
  EXPECT_NE(xorshift_state(11, 3), xorshift_state(11, 4));
  EXPECT_NE(xorshift_state(11, 3), xorshift_state(12, 3));
}

TEST(PerturbSources, NamesMapToSources) {
  for (PerturbSource s : {PerturbSource::kGaussian, PerturbSource::kRademacher,
                          PerturbSource::kUniform, PerturbSource::kXorshift})
    EXPECT_EQ(perturb_source(perturb_source_name(s)), s);
  try {
    perturb_source("gauss");
    FAIL() << "an unknown name must throw";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("zo.perturbation"), std::string::npos) << m;
    EXPECT_NE(m.find("rademacher"), std::string::npos) << m;
  }
  // The Gaussian source is the Gaussian kernel.
  EXPECT_EQ(select_fill_f32(PerturbSource::kGaussian, Isa::kPortable),
            select_fill_gaussian_f32(Isa::kPortable));
}

// Perturber::perturb_fill (a cached direction's first perturbation) is perturb plus fill of the
// same elements, and Perturber::update_perturb_fill (its deferred update and the next
// direction's first perturbation) add_scaled_f32 of the old direction then perturb_fill of the
// new one, bit for bit, for every source: in one pass where the source has one, else by the
// fallbacks (XORShift, PeZO).
TEST(PerturbSources, PerturbFillIsPerturbAndFill) {
  const std::size_t n = 70001;
  for (PerturbSource s : {PerturbSource::kGaussian, PerturbSource::kRademacher,
                          PerturbSource::kUniform, PerturbSource::kXorshift,
                          PerturbSource::kPezoPool, PerturbSource::kPezoOnTheFly}) {
    PezoOptions o;
    o.size = 4099;
    const Perturber pz(s, best_isa(), o);
    for (std::uint64_t off : {std::uint64_t{0}, std::uint64_t{13}}) {
      std::vector<float> theta(n + 1, 0.75f), z(n + 1, -7.0f);
      for (std::size_t i = 0; i < n; i += 3) theta[i] = 0.001f * static_cast<float>(i % 97);
      const std::string what = std::string(perturb_source_name(s)) + " offset " + std::to_string(off);
      const auto same = [&](const std::vector<float>& a, const std::vector<float>& b) {
        return std::memcmp(a.data(), b.data(), (n + 1) * sizeof(float)) == 0;
      };
      std::vector<float> want_theta = theta, want_z = z;
      pz.perturb(want_theta.data(), n, 5, 1, off, -0.03f);
      pz.fill(want_z.data(), n, 5, 1, off);
      pz.perturb_fill(theta.data(), z.data(), n, 5, 1, off, -0.03f);
      EXPECT_TRUE(same(theta, want_theta)) << what << ": perturb_fill";
      EXPECT_TRUE(same(z, want_z)) << what << ": perturb_fill";
      add_scaled_f32(want_theta.data(), want_z.data(), n, 0.021f);
      pz.perturb_fill(want_theta.data(), want_z.data(), n, 11, 2, off, 0.04f);
      pz.update_perturb_fill(theta.data(), z.data(), n, 11, 2, off, 0.021f, 0.04f);
      EXPECT_TRUE(same(theta, want_theta)) << what << ": update_perturb_fill";
      EXPECT_TRUE(same(z, want_z)) << what << ": update_perturb_fill";
      EXPECT_NE(theta[1], 0.75f) << what;
    }
  }
  EXPECT_EQ(select_perturb_fill_f32(PerturbSource::kXorshift, best_isa()), nullptr);
  EXPECT_NE(select_perturb_fill_f32(PerturbSource::kUniform, best_isa()), nullptr);
  EXPECT_EQ(select_update_perturb_fill_f32(PerturbSource::kXorshift, best_isa()), nullptr);
  EXPECT_NE(select_update_perturb_fill_f32(PerturbSource::kRademacher, best_isa()), nullptr);
}

// ---- PeZO's pool ---------------------------------------------------------------------------

TEST(PezoPool, ScaledToTheExpectedGaussianNorm) {
  for (double d : {31.0, 100.0, 4095.0, 107786.0}) {  // the series against the Γ-function form
    const double want = std::exp(0.5 * std::log(2.0) + std::lgamma((d + 1) / 2) - std::lgamma(d / 2));
    EXPECT_NEAR(expected_gaussian_norm(static_cast<std::size_t>(d)), want, 2e-9 * want) << d;
  }
  for (std::size_t n : {31u, 4095u}) {
    const Perturber exact(PerturbSource::kPezoPool, best_isa(), {n, false, 42});
    const Perturber pow2(PerturbSource::kPezoPool, best_isa(), {n, true, 42});
    ASSERT_EQ(exact.pool().size(), n);
    double sq = 0;
    for (float v : exact.pool()) sq += double(v) * v;
    EXPECT_NEAR(std::sqrt(sq), expected_gaussian_norm(n), 1e-6 * std::sqrt(double(n))) << n;
    // The power-of-two variant differs from the raw U(−1, 1) pool by a power of two: each value
    // is the exact one times the same ratio, and that ratio over √3-ish is 2/√3-ish.
    const double ratio = double(pow2.pool()[0]) / exact.pool()[0];
    for (std::size_t k = 0; k < n; ++k)
      EXPECT_NEAR(double(pow2.pool()[k]), ratio * exact.pool()[k], 1e-6) << n << " " << k;
    if (n == 4095) {
      EXPECT_NEAR(ratio, 2.0 / std::sqrt(3.0), 0.01);  // scale 2 instead of ≈ √3
    }
  }
}

// z = fill(seed 11, stream 2) of n elements: a range filled in two pieces (cut at 12,345) is
// the range in one, and perturb gives θ + 0.25·z bit for bit with 1, 2 and 3 threads.
void expect_regenerable(const Perturber& pz, const std::vector<float>& z) {
  const std::size_t n = z.size(), cut = 12345;
  std::vector<float> part(n);
  pz.fill(part.data(), cut, 11, 2, 0);
  pz.fill(part.data() + cut, n - cut, 11, 2, cut);
  EXPECT_EQ(std::memcmp(part.data(), z.data(), n * sizeof(float)), 0);
  std::vector<float> want(n, 0.5f);
  for (std::size_t i = 0; i < n; ++i) want[i] = want[i] + 0.25f * z[i];
  for (int threads : {1, 2, 3}) {
    test::with_threads(threads, [&] {
      std::vector<float> theta(n, 0.5f);
      pz.perturb(theta.data(), n, 11, 2, 0, 0.25f);
      EXPECT_EQ(std::memcmp(theta.data(), want.data(), n * sizeof(float)), 0) << threads;
    });
  }
}

TEST(PezoPool, WindowsArePeriodicAndThreadIndependent) {
  const std::size_t N = 4095, n = 107786;
  const Perturber pz(PerturbSource::kPezoPool, best_isa(), {N, false, 7});
  const std::size_t o = pz.pool_offset(11, 2);
  std::vector<float> z(n);
  pz.fill(z.data(), n, 11, 2, 0);
  for (std::size_t i = 0; i < n; i += 13) ASSERT_EQ(bits(z[i]), bits(pz.pool()[(o + i) % N])) << i;
  for (std::size_t i = 0; i + N < n; i += 97) ASSERT_EQ(bits(z[i]), bits(z[i + N])) << i;
  expect_regenerable(pz, z);
  EXPECT_NE(pz.pool_offset(11, 2), pz.pool_offset(12, 2));  // the step seed moves the window
}

// Recorded on x86-64; the ARM builds must draw the same pool.
TEST(PezoPool, GoldenValuesAreArchitectureIndependent) {
  const Perturber exact(PerturbSource::kPezoPool, best_isa(), {4095, false, 42});
  const Perturber pow2(PerturbSource::kPezoPool, best_isa(), {4095, true, 42});
  EXPECT_EQ(bits(exact.pool()[0]), 0x3eb32897u);
  EXPECT_EQ(bits(exact.pool()[100]), 0xbf08a195u);
  EXPECT_EQ(bits(exact.pool()[4094]), 0x3e4b9fceu);
  EXPECT_EQ(bits(pow2.pool()[0]), 0x3ecefe94u);
  EXPECT_EQ(bits(pow2.pool()[100]), 0xbf1ddc0eu);
  EXPECT_EQ(exact.pool_offset(7, 0), 154u);
}

// ---- PeZO's stream offsets ------------------------------------------------------------------

PezoOptions stream_options(std::size_t pool, std::uint64_t elements) {
  PezoOptions o{pool, false, 7};
  o.rngs = 5;
  o.rng_bits = 6;
  o.stream_offsets = true;
  o.elements = elements;
  return o;
}

TEST(PezoStreamOffsets, EachPerturbationContinuesWhereTheLastStopped) {
  // D = 10 elements per perturbation, N = 7: perturbation t reads pool[(10·t + i) mod 7], so
  // perturbations 0, 1, 2 read one unbroken cyclic stream through the pool.
  const std::uint64_t D = 10;
  const Perturber pz(PerturbSource::kPezoPool, best_isa(), stream_options(7, D));
  std::vector<float> run;
  for (std::uint64_t t = 0; t < 3; ++t) {
    std::vector<float> z(D);
    pz.fill(z.data(), D, t, /*stream, ignored*/ 99, 0);
    EXPECT_EQ(pz.pool_offset(t, 5), (t * D) % 7);
    run.insert(run.end(), z.begin(), z.end());
    // perturb adds the same numbers
    std::vector<float> theta(D, 1.0f);
    pz.perturb(theta.data(), D, t, 3, 0, 0.5f);
    for (std::size_t i = 0; i < D; ++i) ASSERT_EQ(bits(theta[i]), bits(1.0f + 0.5f * z[i])) << i;
  }
  for (std::size_t e = 0; e < run.size(); ++e)
    ASSERT_EQ(bits(run[e]), bits(pz.pool()[e % 7])) << e;
  // The seeded mode's windows depend on (seed, stream), not on a running count.
  const Perturber seeded(PerturbSource::kPezoPool, best_isa(), {7, false, 7});
  EXPECT_EQ(seeded.pool_offset(1, 0), seeded.pool_offset(1, 0));
  EXPECT_NE(pz.pool_offset(1, 0), pz.pool_offset(2, 0));
}

TEST(PezoStreamOffsets, OnTheFlyPerturbationsAreSlicesOfOneRunLongStream) {
  const std::uint64_t D = 37;  // not a multiple of the 5 generators: chunks straddle perturbations
  const Perturber pz(PerturbSource::kPezoOnTheFly, best_isa(), stream_options(7, D));
  std::vector<float> two(2 * D), second(D), offset_half(D);
  pz.fill(two.data(), 2 * D, 0, 0, 0);    // perturbation 0 and, running on, perturbation 1
  pz.fill(second.data(), D, 1, 0, 0);     // perturbation 1
  pz.fill(offset_half.data(), D - 4, 1, 0, 4);  // its elements 4.., as a layer at offset 4
  for (std::size_t i = 0; i < D; ++i) ASSERT_EQ(bits(second[i]), bits(two[D + i])) << i;
  for (std::size_t i = 0; i + 4 < D; ++i) ASSERT_EQ(bits(offset_half[i]), bits(second[4 + i])) << i;
  EXPECT_NE(bits(second[0]), bits(two[0]));
}

TEST(PezoStreamOffsets, DistinctWindowsAreNOverGcd) {
  EXPECT_EQ(pezo_stream_windows(4095, 107786), 585u);  // LeNet-5 FP32: gcd 7
  EXPECT_EQ(pezo_stream_windows(4095, 107550), 91u);   // LeNet-5 int8: gcd 45
  EXPECT_EQ(pezo_stream_windows(4093, 107786), 4093u);  // a prime N: every window
  EXPECT_EQ(pezo_stream_windows(7, 14), 1u);            // D a multiple of N: one window
}

// ---- PeZO's on-the-fly generator -----------------------------------------------------------

TEST(PezoOnTheFly, LfsrSequencesAreMaximalLength) {
  for (int b = 4; b <= 16; ++b) {
    const std::vector<std::uint16_t> seq = lfsr_sequence(b);  // checks its period itself
    ASSERT_EQ(seq.size(), (std::size_t{1} << b) - 1) << b;
    std::vector<bool> seen(std::size_t{1} << b, false);
    for (std::uint16_t v : seq) {
      ASSERT_TRUE(v >= 1 && v < (1u << b)) << b;
      ASSERT_FALSE(seen[v]) << b << " repeats " << v;
      seen[v] = true;
    }
  }
  EXPECT_THROW(lfsr_sequence(3), Error);
  EXPECT_THROW(lfsr_sequence(17), Error);
}

TEST(PezoOnTheFly, SmallDimensionNormIsTheGammaRatio) {
  for (std::size_t d = 1; d < 70; ++d) {
    const double x = static_cast<double>(d);
    const double want = std::exp(0.5 * std::log(2.0) + std::lgamma((x + 1) / 2) - std::lgamma(x / 2));
    EXPECT_NEAR(expected_gaussian_norm(d), want, 1e-10 * want) << d;
  }
}

// Element i is position i mod n of chunk c = i / n; position k comes from RNG (k + c) mod n at
// state S[(phase + c) mod P], mapped to (2v − 2^b)/2^b; each chunk is scaled to E‖g_n‖.
TEST(PezoOnTheFly, FollowsItsDefinitionChunkByChunk) {
  for (bool pow2 : {false, true}) {
    PezoOptions o;
    o.pow2_scale = pow2;
    o.rngs = 7;
    o.rng_bits = 5;
    const Perturber pz(PerturbSource::kPezoOnTheFly, best_isa(), o);
    const std::vector<std::uint16_t> S = lfsr_sequence(5);
    const std::size_t n = 7, P = S.size(), len = 1000;
    std::vector<float> z(len);
    pz.fill(z.data(), len, 3, 1, 0);
    for (std::size_t c = 0; c * n < len; ++c) {
      double sq = 0, zsq = 0;
      std::vector<double> x(n);
      for (std::size_t k = 0; k < n; ++k) {
        const std::size_t m = (k + c) % n;
        x[k] = (S[(pz.rng_phase(3, 1, static_cast<int>(m)) + c) % P] - 16.0) / 16.0;
        sq += x[k] * x[k];
      }
      const double sigma = expected_gaussian_norm(n) / std::sqrt(sq);
      for (std::size_t k = 0; k < n && c * n + k < len; ++k) {
        const double zk = z[c * n + k];
        zsq += zk * zk;
        if (pow2 && x[k] != 0) {  // a power of two within √2 of the exact factor
          const double r = zk / x[k];
          EXPECT_EQ(std::exp2(std::round(std::log2(r))), r) << c;
          EXPECT_LE(std::abs(std::log2(r / sigma)), 0.5 + 1e-9) << c;
        } else if (!pow2) {
          EXPECT_NEAR(zk, sigma * x[k], 1e-6) << c << " " << k;
        }
      }
      if (!pow2 && (c + 1) * n <= len) {
        EXPECT_NEAR(std::sqrt(zsq), expected_gaussian_norm(n), 1e-5);
      }
    }
    // The cycle period: RNG m's states repeat after P cycles, and the rotation after n, so
    // the element stream repeats after n·P·n elements at most; within one chunk, the n
    // positions use n different RNGs.
    std::vector<float> far(len);
    pz.fill(far.data(), len, 3, 1, n * P * n);
    EXPECT_EQ(std::memcmp(far.data(), z.data(), len * sizeof(float)), 0) << pow2;
  }
}

TEST(PezoOnTheFly, RegenerationIsSplitAndThreadIndependent) {
  PezoOptions o;
  o.pow2_scale = true;  // the preset's
  const Perturber pz(PerturbSource::kPezoOnTheFly, best_isa(), o);
  const std::size_t n = 107786;
  std::vector<float> z(n);
  pz.fill(z.data(), n, 11, 2, 0);
  double sq = 0, sum = 0;
  for (float v : z) sq += double(v) * v, sum += v;
  EXPECT_NEAR(sq / n, 4.0 / 3.0, 0.1);  // the ×2 power-of-two scale is PeZO's 15 % above 1
  EXPECT_NEAR(sum / n, 0.0, 0.02);
  expect_regenerable(pz, z);  // the cut is not a multiple of n = 31: a chunk straddles it
  std::vector<float> other(n);
  pz.fill(other.data(), n, 12, 2, 0);  // another step seed: other phases
  EXPECT_NE(std::memcmp(other.data(), z.data(), n * sizeof(float)), 0);
}

// Recorded on x86-64; the ARM builds must draw the same numbers.
TEST(PezoOnTheFly, GoldenValuesAreArchitectureIndependent) {
  PezoOptions pow2;
  pow2.pow2_scale = true;
  const Perturber a(PerturbSource::kPezoOnTheFly, best_isa(), {});
  const Perturber b(PerturbSource::kPezoOnTheFly, best_isa(), pow2);
  std::vector<float> za(200), zb(200);
  a.fill(za.data(), 200, 7, 3, 0);
  b.fill(zb.data(), 200, 7, 3, 0);
  EXPECT_EQ(bits(za[0]), 3217536281u);
  EXPECT_EQ(bits(za[199]), 1051340327u);
  EXPECT_EQ(bits(zb[0]), 3219521536u);
  EXPECT_EQ(bits(zb[77]), 1060110336u);
  EXPECT_EQ(a.rng_phase(7, 3, 30), 48u);
}

}  // namespace
}  // namespace zt::kernels
