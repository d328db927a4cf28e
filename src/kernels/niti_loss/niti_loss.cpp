// NITI's integer cross-entropy error (docs/design.md §5.4) and the integer ZO gradient sign
// (docs/design.md §6, Eqs. 9–12). Small per-sample work ([batch, classes] logits), so plain serial
// loops; no scratch memory (each sample's row is re-read instead of storing T_j). Integer
// arithmetic only.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "zotrain/core/rng.hpp"
#include "zotrain/kernels/niti_loss.hpp"
#include "zotrain/core/seeds.hpp"
#include "zotrain/kernels/quant.hpp"
#include "log2_tables.hpp"

namespace zt::kernels {
namespace {

constexpr std::int64_t kLog2E = 47274;  // log2(e) · 2^15
constexpr int kLog2EShift = 15;
constexpr int kP = 11;        // P ≈ 2^11 · (softmax − onehot)
constexpr int kErrShift = 4;  // err = StoShift(P, 4)
constexpr int kTop = 10;      // the largest base-2 exponent after the offset

// floor(d · 47274 · 2^e / 2^15) in int64 (C++20 >> on a negative value is the floor);
// |d| ≤ 254 and e ≤ 40 keep it below 2^49.
std::int64_t log2e_scaled(std::int64_t d, int e) {
  const std::int64_t v = d * kLog2E;
  return e >= kLog2EShift ? v * (std::int64_t{1} << (e - kLog2EShift)) : v >> (kLog2EShift - e);
}

// ---- fixed-point log2 / exp2 (kF fractional bits in the log2 domain) ----
constexpr int kF = 16;
// log2(e) · d · 2^e with kF fractional bits, floored; e ≤ 24 keeps it below 2^49.
std::int64_t log2e_scaled_fixed(std::int64_t d, int e) { return log2e_scaled(d, e + kF); }
constexpr std::int64_t kFracMask = (std::int64_t{1} << kF) - 1;

// 2^30 · 2^(−u / 2^kF) for 0 ≤ u < 2^kF: the table's knot below and linear interpolation on the
// low 8 bits (relative error < 3e-6).
std::int64_t exp2_neg_q30(std::int64_t u) {
  using log2_tables::kExp2Neg;
  const auto i = static_cast<std::size_t>(u >> 8);
  const std::int64_t r = u & 255, lo = kExp2Neg[i], hi = kExp2Neg[i + 1];
  return lo - (((lo - hi) * r) >> 8);
}

// log2(s) · 2^kF for s ≥ 2^30: bit length for the integer part, then the mantissa's top 8 bits
// index the table and the next 22 interpolate (error < 3e-6).
std::int64_t log2_fixed(std::uint64_t s) {
  using log2_tables::kLog2;
  const int n = static_cast<int>(std::bit_width(s)) - 1;  // ≥ 30
  const std::uint64_t m = s >> (n - 30);                    // [2^30, 2^31)
  const std::int64_t frac = static_cast<std::int64_t>(m) - (std::int64_t{1} << 30);
  const auto i = static_cast<std::size_t>(frac >> 22);
  const std::int64_t r = frac & ((std::int64_t{1} << 22) - 1), lo = kLog2[i], hi = kLog2[i + 1];
  const std::int64_t l = lo + (((hi - lo) * r) >> 22);  // log2 of the mantissa, Q30
  return (std::int64_t{n - 30} << kF) + (l >> (30 - kF));
}

// One sample's cross-entropy in log2 units, Q kF: log2 Σ_j 2^(x_j) with x_j = log2(e)·(z_j − z_t)
// = p + log2 Σ_j 2^(x_j − p), p = max_j x_j ≥ 0 (x_t = 0), so the sum is in [2^30, classes·2^30].
std::int64_t xent_log2_fixed(const std::int8_t* row, int classes, int t, int e) {
  std::int64_t p = 0;
  for (int j = 0; j < classes; ++j)
    p = std::max(p, log2e_scaled_fixed(std::int64_t{row[j]} - row[t], e));
  std::uint64_t sum = 0;
  for (int j = 0; j < classes; ++j) {
    const std::int64_t y = p - log2e_scaled_fixed(std::int64_t{row[j]} - row[t], e);  // ≥ 0
    const std::int64_t k = y >> kF;
    if (k < 31) sum += static_cast<std::uint64_t>(exp2_neg_q30(y & kFracMask) >> k);
  }
  return p + log2_fixed(sum);
}

std::int64_t row_max(const std::int8_t* row, int classes) {
  std::int64_t m = row[0];
  for (int j = 1; j < classes; ++j) m = std::max<std::int64_t>(m, row[j]);
  return m;
}

}  // namespace

void xent_error_s8(int n, int classes, const std::int8_t* logits, int exponent,
                   const std::uint8_t* labels, std::uint64_t seed, std::int8_t* err) {
  if (n <= 0 || classes <= 0) return;
  const std::uint32_t key = hash_key(seed, seeds::kLossRoundingStream);
  const bool exp2_branch = exponent > -7;
  // Exactness of the clamps: for e ≥ 15 distinct logits give t_j at least 47274 apart, so every
  // non-maximal T_j is 0 and the result no longer depends on e; for e < −24 see the header.
  const int e = exp2_branch ? std::min(exponent, 24) : std::max(exponent, -24);
  const int k = -e;  // Taylor branch: T = 2^(2k+1) + A·2^(k+1) + A²
  for (int b = 0; b < n; ++b) {
    const std::int8_t* row = logits + static_cast<std::size_t>(b) * classes;
    std::int8_t* out = err + static_cast<std::size_t>(b) * classes;
    // t is monotonic in A, so max_j t_j = t(max_j A_j).
    const std::int64_t offset = exp2_branch ? log2e_scaled(row_max(row, classes), e) - kTop : 0;
    auto T = [&](std::int64_t a) -> std::int64_t {
      if (exp2_branch) {
        const std::int64_t t = std::max<std::int64_t>(log2e_scaled(a, e) - offset, 0);
        return (std::int64_t{1} << t) - 1;
      }
      return (std::int64_t{1} << (2 * k + 1)) + a * (std::int64_t{1} << (k + 1)) + a * a;
    };
    std::int64_t sum_t = 0;
    for (int j = 0; j < classes; ++j) sum_t += T(row[j]);
    // The maximal logit has T = 1023 (exp2) or T > 2^(2k) > 0 (Taylor), so sum_t > 0.
    std::int64_t sum_p = 0;
    for (int j = 0; j < classes; ++j) sum_p += (T(row[j]) << kP) / sum_t;
    const int target = labels[b];
    for (int j = 0; j < classes; ++j) {
      std::int64_t p = (T(row[j]) << kP) / sum_t;  // T ≥ 0: division is the floor
      if (j == target) p -= sum_p;
      const std::uint32_t i = static_cast<std::uint32_t>(b) * static_cast<std::uint32_t>(classes) +
                              static_cast<std::uint32_t>(j);
      out[j] = clamp_s8(sto_shift(static_cast<std::int32_t>(p), kErrShift, hash32(key, i)));
    }
  }
}

int zo_sign_s8(int n, int classes, const std::int8_t* a, int ea, const std::int8_t* b, int eb,
               const std::uint8_t* labels) {
  // Exponents are clamped to [−40, 24]: int64 headroom above (logits 2^24 · 127 apart are far
  // outside what a network produces); below −40 every x_j is 0 or −2^−kF, as at −40.
  ea = std::clamp(ea, -40, 24);
  eb = std::clamp(eb, -40, 24);
  std::int64_t d = 0;
  for (int s = 0; s < n; ++s) {
    const std::size_t row = static_cast<std::size_t>(s) * static_cast<std::size_t>(classes);
    d += xent_log2_fixed(a + row, classes, labels[s], ea) -
         xent_log2_fixed(b + row, classes, labels[s], eb);
  }
  return d > 0 ? 1 : (d < 0 ? -1 : 0);
}

int zo_sign_s8_eq12(int n, int classes, const std::int8_t* a, int ea, const std::int8_t* b,
                    int eb, const std::uint8_t* labels) {
  // α̂_j = floor(47274 · (α_j − α_t) · 2^ea / 2^15): identical to Eq. 9–10's
  // (47274 · dα_j) shifted by (15 − s) with dα_j = (α_j − α_t) · 2^(ea − s), for any s, because
  // the shifted product is the floor of the same rational number. Exponents are clamped to
  // [−40, 40]: exact below (for e ≤ −9 every α̂ is already 0 or −1), and int64-safe above.
  ea = std::clamp(ea, -40, 40);
  eb = std::clamp(eb, -40, 40);
  std::int64_t d = 0;
  for (int s = 0; s < n; ++s) {
    const std::int8_t* ra = a + static_cast<std::size_t>(s) * classes;
    const std::int8_t* rb = b + static_cast<std::size_t>(s) * classes;
    const int t = labels[s];
    auto ah = [&](int j) { return log2e_scaled(std::int64_t{ra[j]} - ra[t], ea); };
    auto bh = [&](int j) { return log2e_scaled(std::int64_t{rb[j]} - rb[t], eb); };
    // α̂_t = β̂_t = 0, so the maximum is ≥ 0 and α̃_j = max(α̂_j − p_b, 0) ∈ [0, 10].
    std::int64_t mx = 0;
    for (int j = 0; j < classes; ++j) mx = std::max({mx, ah(j), bh(j)});
    const std::int64_t p = mx - kTop;
    std::uint64_t sa = 0, sb = 0;  // A_b, B_b ≤ classes · 2^10
    for (int j = 0; j < classes; ++j) {
      sa += std::uint64_t{1} << std::max<std::int64_t>(ah(j) - p, 0);
      sb += std::uint64_t{1} << std::max<std::int64_t>(bh(j) - p, 0);
    }
    // floor(log2 A) − floor(log2 B) = bitlen(A) − bitlen(B) (both ≥ 1).
    d += static_cast<int>(std::bit_width(sa)) - static_cast<int>(std::bit_width(sb));
  }
  return d > 0 ? 1 : (d < 0 ? -1 : 0);
}

}  // namespace zt::kernels
