// NEON int8 requantisation and b-bit weight update: the reference's sign-magnitude arithmetic in
// 32-bit lanes, 16 elements per step, the tail elements through the reference helpers
// (quant.hpp). The maximum is an exact reduction (over OpenMP chunks for large tensors) and
// everything else is elementwise, so results are bit-identical to the reference for any thread
// count. Integer arithmetic only.
#include <arm_neon.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "quant_driver.hpp"
#include "zotrain/kernels/quant.hpp"

namespace zt::kernels {
namespace {

// |x| as unsigned: vabsq_s32 leaves INT32_MIN unchanged, which read unsigned is 2^31 = |x|.
inline uint32x4_t magnitudes(int32x4_t x) { return vreinterpretq_u32_s32(vabsq_s32(x)); }
// The magnitude q with the sign of x: (q ^ sm) − sm, sm = all-ones for x < 0 (0 stays 0).
inline int32x4_t with_signs(uint32x4_t q, int32x4_t x) {
  const uint32x4_t sm = vreinterpretq_u32_s32(vshrq_n_s32(x, 31));
  return vreinterpretq_s32_u32(vsubq_u32(veorq_u32(q, sm), sm));
}
inline std::uint32_t max_lanes(uint32x4_t v) {
#if defined(__aarch64__)
  return vmaxvq_u32(v);
#else
  uint32x2_t m = vpmax_u32(vget_low_u32(v), vget_high_u32(v));
  m = vpmax_u32(m, m);
  return vget_lane_u32(m, 0);
#endif
}
// int8 of 16 int16 values already in [−127, 127].
inline int8x16_t narrow16(int16x8_t lo, int16x8_t hi) { return vcombine_s8(vmovn_s16(lo), vmovn_s16(hi)); }

std::uint32_t max_abs_span(const std::int32_t* x, std::size_t n) {
  uint32x4_t m0 = vdupq_n_u32(0), m1 = m0, m2 = m0, m3 = m0;
  std::size_t i = 0;
  // 32 at a time: the magnitudes in pairs first, so each running maximum takes one operation
  // per 8 lanes (its chain is what an in-order core waits on).
  for (; i + 32 <= n; i += 32) {
    uint32x4_t a[8];
    for (int k = 0; k < 8; ++k) a[k] = magnitudes(vld1q_s32(x + i + 4 * k));
    for (int k = 0; k < 4; ++k) a[k] = vmaxq_u32(a[k], a[k + 4]);
    m0 = vmaxq_u32(m0, a[0]);
    m1 = vmaxq_u32(m1, a[1]);
    m2 = vmaxq_u32(m2, a[2]);
    m3 = vmaxq_u32(m3, a[3]);
  }
  for (; i + 16 <= n; i += 16) {
    m0 = vmaxq_u32(m0, magnitudes(vld1q_s32(x + i)));
    m1 = vmaxq_u32(m1, magnitudes(vld1q_s32(x + i + 4)));
    m2 = vmaxq_u32(m2, magnitudes(vld1q_s32(x + i + 8)));
    m3 = vmaxq_u32(m3, magnitudes(vld1q_s32(x + i + 12)));
  }
  for (; i + 4 <= n; i += 4) m0 = vmaxq_u32(m0, magnitudes(vld1q_s32(x + i)));
  std::uint32_t mx = max_lanes(vmaxq_u32(vmaxq_u32(m0, m1), vmaxq_u32(m2, m3)));
  for (; i < n; ++i) mx = std::max(mx, magnitude(x[i]));
  return mx;
}

// 4·K elements (K a multiple of 4), the K vectors through each operation together: one vector's
// chain alone (7 dependent operations) leaves an in-order core waiting on every step.
template <int K>
[[gnu::always_inline]] inline void round_shift_vectors(const std::int32_t* x, std::int8_t* y, int32x4_t shift,
                                                       uint32x4_t lim) {
  int32x4_t v[K];
  uint32x4_t q[K];
  for (int k = 0; k < K; ++k) v[k] = vld1q_s32(x + 4 * k);
  for (int k = 0; k < K; ++k) q[k] = magnitudes(v[k]);
  for (int k = 0; k < K; ++k) q[k] = vrshlq_u32(q[k], shift);
  for (int k = 0; k < K; ++k) q[k] = vminq_u32(q[k], lim);
  int32x4_t r[K];
  for (int k = 0; k < K; ++k) r[k] = with_signs(q[k], v[k]);
  int16x8_t h[K / 2];
  for (int k = 0; k < K / 2; ++k) h[k] = vcombine_s16(vmovn_s32(r[2 * k]), vmovn_s32(r[2 * k + 1]));
  int8x16_t b[K / 4];
  for (int k = 0; k < K / 4; ++k) b[k] = narrow16(h[2 * k], h[2 * k + 1]);
  for (int k = 0; k < K / 4; ++k) vst1q_s8(y + 16 * k, b[k]);
}

// y = clamp(RoundShift(x, s), ±127), 0 ≤ s ≤ 25: vrshlq_u32 by −s is (m + 2^(s−1)) >> s on the
// magnitude, exact (m ≤ 2^31).
void round_shift_span(const std::int32_t* x, std::size_t n, int s, std::int8_t* y) {
  const int32x4_t shift = vdupq_n_s32(-s);
  const uint32x4_t lim = vdupq_n_u32(kInt8Max);
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) round_shift_vectors<8>(x + i, y + i, shift, lim);
  if (i + 16 <= n) {
    round_shift_vectors<4>(x + i, y + i, shift, lim);
    i += 16;
  }
  for (; i < n; ++i) y[i] = clamp_s8(round_shift(x[i], s));
}

// w = clamp(w − ĝ, ±127) for 16 weights, ĝ given as int16 in [−255, 255].
inline void subtract16(std::int8_t* w, int16x8_t g_lo, int16x8_t g_hi) {
  const int8x16_t wv = vld1q_s8(w);
  const int16x8_t lim = vdupq_n_s16(kInt8Max), nlim = vdupq_n_s16(-kInt8Max);
  const int16x8_t lo = vmaxq_s16(vminq_s16(vsubq_s16(vmovl_s8(vget_low_s8(wv)), g_lo), lim), nlim);
  const int16x8_t hi = vmaxq_s16(vminq_s16(vsubq_s16(vmovl_s8(vget_high_s8(wv)), g_hi), lim), nlim);
  vst1q_s8(w, narrow16(lo, hi));
}

// w = clamp(w − g, ±127); g clamped to ±255 first (with |w| ≤ 128 that changes nothing).
void subtract_span(std::int8_t* w, const std::int32_t* g, std::size_t n) {
  const int32x4_t lim = vdupq_n_s32(255), nlim = vdupq_n_s32(-255);
  const auto lanes4 = [&](const std::int32_t* p) { return vmovn_s32(vmaxq_s32(vminq_s32(vld1q_s32(p), lim), nlim)); };
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16)
    subtract16(w + i, vcombine_s16(lanes4(g + i), lanes4(g + i + 4)), vcombine_s16(lanes4(g + i + 8), lanes4(g + i + 12)));
  for (; i < n; ++i) w[i] = clamp_s8(std::int64_t{w[i]} - g[i]);
}

// w = clamp(w − PstoShift(g, s), ±127), 1 ≤ s ≤ 31: r = m & (2^s − 1), round up iff
// (r >> h) > ((r & (2^h − 1)) << (s & 1)); the magnitude is clamped to 255 (changes nothing).
void psto_subtract_span(std::int8_t* w, const std::int32_t* g, std::size_t n, int s) {
  const int h = s / 2;
  const uint32x4_t rmask = vdupq_n_u32((std::uint32_t{1} << s) - 1u);
  const uint32x4_t lmask = vdupq_n_u32((std::uint32_t{1} << h) - 1u);
  const int32x4_t shr_s = vdupq_n_s32(-s), shr_h = vdupq_n_s32(-h), shl_odd = vdupq_n_s32(s & 1);
  const uint32x4_t lim = vdupq_n_u32(255);
  const auto lanes4 = [&](const std::int32_t* p) {
    const int32x4_t v = vld1q_s32(p);
    const uint32x4_t m = magnitudes(v);
    const uint32x4_t r = vandq_u32(m, rmask);
    const uint32x4_t up = vcgtq_u32(vshlq_u32(r, shr_h), vshlq_u32(vandq_u32(r, lmask), shl_odd));  // all-ones = 1
    const uint32x4_t q = vminq_u32(vsubq_u32(vshlq_u32(m, shr_s), up), lim);
    return vmovn_s32(with_signs(q, v));
  };
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16)
    subtract16(w + i, vcombine_s16(lanes4(g + i), lanes4(g + i + 4)), vcombine_s16(lanes4(g + i + 8), lanes4(g + i + 12)));
  for (; i < n; ++i) w[i] = clamp_s8(std::int64_t{w[i]} - psto_shift(g[i], s));
}

}  // namespace

int requantize_s32_s8_neon(const std::int32_t* x, std::size_t n, std::int8_t* y) {
  return quant_detail::requantize<max_abs_span, round_shift_span>(x, n, y);
}

int requantize_max_s32_s8_neon(const std::int32_t* x, std::size_t n, std::uint32_t max_abs,
                               std::int8_t* y) {
  return quant_detail::requantize_max<round_shift_span>(x, n, max_abs, y);
}

int update_weights_s8_neon(std::int8_t* w, const std::int32_t* g, std::size_t n, int bits) {
  return quant_detail::update_weights<max_abs_span, subtract_span, psto_subtract_span>(w, g, n, bits);
}

}  // namespace zt::kernels
