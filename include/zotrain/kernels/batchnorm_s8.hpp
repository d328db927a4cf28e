// Integer batch normalisation of int8 PointNet (docs/design.md §5.8): the per-point linear
// layers' int32 products are standardised per channel with the batch's statistics over every
// row (sample × point), in integer arithmetic only (int64 sums, an integer square root, a
// fixed-point reciprocal), before the usual per-tensor requantisation. No affine γ, β (an int8
// network has no biases either). Backward is the exact BatchNorm gradient of the standardised
// output, rounded like every other error. Integer-only: compiled with -mgeneral-regs-only in
// the aarch64 check build. One portable path: the backward's per-element steps are inline and
// branch-free so that they vectorise where the ISA allows (docs/results/paper/pointnet-cls1-200.md).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "zotrain/kernels/quant.hpp"

namespace zt::kernels {

// The standardised value x̂ = (y − μ) / σ is formed with kNormFracBits fractional bits
// (an int32 with exponent −kNormFracBits), through a reciprocal of σ with kNormRecipBits more.
inline constexpr int kNormFracBits = 8;
inline constexpr int kNormRecipBits = 16;

// Per channel: the rounded mean and round(2^(F+R) / σ), σ = max(1, ⌊√var⌋).
struct ChannelNorm {
  std::int64_t mean = 0;
  std::int64_t recip = 0;
};

// The largest rows·(max |y|)² the int64 sums may see: callers check
// rows · (127² · K)² < 2^62 (K = the product's inner dimension).
bool batchnorm_sums_fit(std::size_t rows, int inner);

// Streaming statistics: adds Σy and Σy² of y [rows, C] per channel into s1, s2.
void batchnorm_accumulate(std::size_t rows, int C, const std::int32_t* y, std::int64_t* s1,
                          std::int64_t* s2);
// From the sums over `rows` rows: μ = round(Σy / rows), var = Σ(y − μ)² / rows (floor),
// σ = max(1, isqrt(var)), recip = round(2^(F+R) / σ).
void batchnorm_finish(std::size_t rows, int C, const std::int64_t* s1, const std::int64_t* s2,
                      ChannelNorm* norm);
// x̂ · 2^F = RoundShift((y − μ) · recip, R), saturated to int32. Monotone non-decreasing in y.
std::int32_t batchnorm_apply(std::int32_t y, const ChannelNorm& n);

// acc [rows, C] ← x̂ · 2^F in place, with the channels' statistics.
void batchnorm_apply_rows(std::size_t rows, int C, std::int32_t* acc, const ChannelNorm* norm);
// Streaming extremes: lo[c] ← min(lo[c], y[r, c]), hi[c] ← max(hi[c], y[r, c]) over the rows.
void batchnorm_extremes(std::size_t rows, int C, const std::int32_t* y, std::int32_t* lo,
                        std::int32_t* hi);

// Whole tensor: statistics of acc [rows, C], then acc ← x̂ · 2^F in place.
// `sums` is scratch for 2·C int64.
void batchnorm_forward_s32(std::size_t rows, int C, std::int32_t* acc, ChannelNorm* norm,
                           std::int64_t* sums);

// Backward: e [rows, C] is the error of x̂ (int8, any exponent), xhat the int8 x̂ of the forward
// pass with exponent xhat_exp (its real value xhat · 2^xhat_exp). Overwrites e with the error of
// y, RoundShift-requantised to 7 bits for the whole tensor (its scale is dropped, as NITI's
// weight update normalises it away):
//   dy = (1/σ) · (e − mean(e) − x̂ · mean(e · x̂)).
// `sums` is scratch for 5·C int64.
void batchnorm_backward_s8(std::size_t rows, int C, const std::int8_t* xhat, int xhat_exp,
                           std::int8_t* e, const ChannelNorm* norm, std::int64_t* sums);

// int64 helpers of the backward below, shared with src/kernels/batchnorm_s8/batchnorm_s8.cpp.
namespace bn_detail {
constexpr std::uint64_t magnitude64(std::int64_t x) {
  return x < 0 ? 0u - static_cast<std::uint64_t>(x) : static_cast<std::uint64_t>(x);
}
constexpr int bitlen64(std::uint64_t m) { return m == 0 ? 0 : 64 - std::countl_zero(m); }
// RoundShift of an int64 (magnitude, ties away from zero, sign put back), s ≥ 0.
constexpr std::int64_t round_shift64(std::int64_t x, int s) {
  if (s <= 0) return x;
  const std::uint64_t m = (magnitude64(x) + (std::uint64_t{1} << (s - 1))) >> s;
  return x < 0 ? -static_cast<std::int64_t>(m) : static_cast<std::int64_t>(m);
}
}  // namespace bn_detail

// The same backward in pieces, for a tensor that is streamed in chunks of rows and never whole
// (src/train/int8_point_stack.cpp): (1) Σe and Σe·x̂ per channel over every row into sums [2C];
// (2) dy() of every element, for the largest magnitude; (3) error(dy(), shift(largest)) of
// every element. Same bits as batchnorm_backward_s8. coef is the caller's buffer of 3·C int64
// (no allocation in a training step).
class BatchNormBackward {
 public:
  BatchNormBackward(std::size_t rows, int C, int xhat_exp, const ChannelNorm* norm,
                    const std::int64_t* sums, std::int64_t* coef);
  // The unrequantised error of y at one element of channel c. Scaled by rows · 2^(−2 xhat_exp)
  // · σ (common to every element, so dropped):
  //   T = (rows · e − Σe) · 2^k − x̂ · Σ(e · x̂),  k = −2 · xhat_exp,
  // then dy = T · rb with rb ∝ 1/σ, at most 2^12 (the channels' reciprocals share one shift).
  // T · rb is affine in (e, x̂) per channel, so the constructor folds rb, rows, 2^k and the sums
  // into three int64 coefficients and dy is two products and two sums (exact, the same bits).
  std::int64_t dy(std::int8_t e, std::int8_t xhat, int c) const {
    const auto i = static_cast<std::size_t>(c);
    const std::int64_t* a = coef_;
    return a[i] * e + a[C_ + i] * xhat + a[2 * C_ + i];
  }
  // One row of the C channels: the largest |dy|, and every error(dy, shift) into out (which may
  // be e). Branch-free, so the compiler can vectorise them where the ISA has 64-bit lanes.
  std::uint64_t row_largest(const std::int8_t* e, const std::int8_t* xhat) const {
    const std::int64_t *a = coef_, *b = a + C_, *g = b + C_;
    std::uint64_t mx = 0;
    for (std::size_t c = 0; c < C_; ++c) {
      const std::uint64_t m = bn_detail::magnitude64(a[c] * e[c] + b[c] * xhat[c] + g[c]);
      mx = m > mx ? m : mx;
    }
    return mx;
  }
  void row_errors(const std::int8_t* e, const std::int8_t* xhat, int shift, std::int8_t* out) const {
    const std::int64_t *a = coef_, *b = a + C_, *g = b + C_;
    for (std::size_t c = 0; c < C_; ++c)
      out[c] = round_shift_clamp_s8(a[c] * e[c] + b[c] * xhat[c] + g[c], shift);
  }
  static std::uint64_t magnitude(std::int64_t dy) { return bn_detail::magnitude64(dy); }
  // The tensor's requantisation shift.
  static int shift(std::uint64_t largest) {
    const int bl = bn_detail::bitlen64(largest);
    return bl > kInt8Bits ? bl - kInt8Bits : 0;
  }
  // RoundShift, clamped to int8.
  static std::int8_t error(std::int64_t dy, int shift) {
    return clamp_s8(bn_detail::round_shift64(dy, shift));
  }

 private:
  std::size_t C_;
  std::int64_t* coef_;  // [3C]: the factors of e, the factors of x̂, the constants
};

}  // namespace zt::kernels
