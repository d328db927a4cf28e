// Bit-reproducible sin/cos and Gaussian noise for the point-cloud code (augmentation, synthetic
// shapes): the same bits on x86-64, aarch64 and armv7 with any libm. Only +, −, ×, / and sqrt
// (all correctly rounded in IEEE 754) on doubles, plus integer arithmetic. Files including this
// header must be listed in zt_bit_exact_sources() (cmake/BitExact.cmake: no FMA contraction, so no
// fused multiply-add changes a rounding), which the check below enforces. Private to src/data.
#pragma once

#if !defined(ZT_BIT_EXACT)
#error "exact_math.hpp: list this file in zt_bit_exact_sources() (cmake/BitExact.cmake)"
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "zotrain/core/rng.hpp"

namespace zt::data::exact {

// c[0]·y^(N−1) + … + c[N−1] by Horner's rule, ((c[0]·y + c[1])·y + …)·y + c[N−1]: the same
// operations in the same order everywhere.
template <std::size_t N>
inline double horner(double y, const double (&c)[N]) {
  double acc = c[0];
  for (std::size_t i = 1; i < N; ++i) acc = acc * y + c[i];
  return acc;
}

// sin and cos of 2π·t (t in turns). The reduction to [−1/8, 1/8] turn is exact (t − q/4 with q
// an integer); the Taylor series to x^17 / x^16 on |x| ≤ π/4 errs by < 2e-16 relative, far below
// float resolution. |t| < 2^40.
inline void sincos_turns(double t, double* s, double* c) {
  constexpr double kTwoPi = 6.283185307179586476925;
  const double q = std::nearbyint(t * 4.0);  // quadrant, exact for |t| < 2^50
  const double x = (t - q * 0.25) * kTwoPi;  // t − q/4 exact (Sterbenz), |x| ≤ π/4
  const double x2 = x * x;
  // Taylor coefficients 1/k!, highest first: sin 1/17!, 1/15!, …, 1/3!; cos 1/16!, …, 1/2!.
  constexpr double kSin[] = {1.0 / 355687428096000.0, 1.0 / 1307674368000.0, 1.0 / 6227020800.0,
                             1.0 / 39916800.0,        1.0 / 362880.0,        1.0 / 5040.0,
                             1.0 / 120.0,             1.0 / 6.0};
  constexpr double kCos[] = {1.0 / 20922789888000.0, 1.0 / 87178291200.0, 1.0 / 479001600.0,
                             1.0 / 3628800.0,        1.0 / 40320.0,       1.0 / 720.0,
                             1.0 / 24.0,             0.5};
  const double sn = x - x * x2 * horner(-x2, kSin);
  const double cs = 1.0 - x2 * horner(-x2, kCos);
  // Rotate by the quadrant: (sin, cos)(x + qπ/2).
  switch (static_cast<std::int64_t>(q) & 3) {
    case 0: *s = sn, *c = cs; break;
    case 1: *s = cs, *c = -sn; break;
    case 2: *s = -sn, *c = -cs; break;
    default: *s = -cs, *c = sn; break;
  }
}

// Uniform in [0, 1) with 53 bits (exact).
inline double uniform53(SplitMix64& rng) {
  return static_cast<double>(rng.next() >> 11) * (1.0 / 9007199254740992.0);
}

// Approximately N(0, 1): Irwin–Hall sum of twelve 16-bit uniforms (three 64-bit draws), centred.
// Integer sum, then one exact conversion: the result is k/131072 for an odd integer |k| < 2^21,
// bounded by ±6, variance 1 − 2^-32. Tails beyond ~4σ are thinner than a Gaussian's — harmless
// for jitter and shape noise, and exactly reproducible.
inline double gauss12(SplitMix64& rng) {
  std::int64_t sum = 0;
  for (int k = 0; k < 3; ++k) {
    const std::uint64_t w = rng.next();
    sum += static_cast<std::int64_t>(w & 0xffff) + static_cast<std::int64_t>((w >> 16) & 0xffff) +
           static_cast<std::int64_t>((w >> 32) & 0xffff) + static_cast<std::int64_t>(w >> 48);
  }
  // Each term is (u + 1/2)/65536 with mean 1/2: Σ − 6 = (2·sum + 12 − 12·65536) / 131072.
  return static_cast<double>(2 * sum + 12 - 12 * 65536) * (1.0 / 131072.0);
}

}  // namespace zt::data::exact
