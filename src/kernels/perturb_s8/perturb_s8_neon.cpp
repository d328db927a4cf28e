// NEON sparse uniform int8 perturbation: z(j) of perturb_s8.hpp for 16 consecutive counters at
// a time — hash32 in 32-bit lanes (multiplies, shifts, xors), the mask m = (w1 ≥ threshold) as
// a lane compare, u = ⌊w2·(2·r_max + 1) / 2^32⌋ − r_max from the high halves of widening 32×32
// multiplies — then θ updated in 16-bit lanes. Tail elements go to the reference. Counter-based
// and elementwise, so large calls split over OpenMP threads with bit-identical results.
// Integer arithmetic only.
#include <arm_neon.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "zotrain/core/rng.hpp"
#include "zotrain/core/seeds.hpp"
#include "zotrain/kernels/perturb_s8.hpp"
#include "zotrain/kernels/quant.hpp"
#include "../chunked_parallel.hpp"

namespace zt::kernels {
namespace {

// Elementwise threading (../chunked_parallel.hpp): fork from this many elements, in pieces.
using Chunks = detail::Chunking<std::size_t{1} << 15, 4096>;

inline uint32x4_t xorshr16(uint32x4_t x) { return veorq_u32(x, vshrq_n_u32(x, 16)); }

// hash32(key, x) of rng.hpp per lane; key_mix = key · 0x9e3779b9.
inline uint32x4_t hash32x4(uint32x4_t x, uint32x4_t key, uint32x4_t key_mix) {
  x = xorshr16(veorq_u32(x, key));
  x = vmulq_n_u32(x, 0x7feb352dU);
  x = veorq_u32(x, vshrq_n_u32(x, 15));
  x = vmulq_n_u32(x, 0x846ca68bU);
  x = xorshr16(x);
  x = vaddq_u32(x, key_mix);
  x = veorq_u32(x, vshrq_n_u32(x, 17));
  x = vmulq_n_u32(x, 0xed5ad4bbU);
  x = veorq_u32(x, vshrq_n_u32(x, 11));
  x = vmulq_n_u32(x, 0xac4c1b51U);
  return veorq_u32(x, vshrq_n_u32(x, 15));
}

// ⌊w · c / 2^32⌋ per lane (exact: widening multiplies).
inline uint32x4_t mul_high(uint32x4_t w, uint32x2_t c) {
  const uint64x2_t lo = vmull_u32(vget_low_u32(w), c);
  const uint64x2_t hi = vmull_u32(vget_high_u32(w), c);
  return vcombine_u32(vshrn_n_u64(lo, 32), vshrn_n_u64(hi, 32));
}

struct ZGen {
  uint32x4_t k1, k1_mix, k2, k2_mix, threshold, keep;
  uint32x2_t span;
  int32x4_t r;
  explicit ZGen(const PerturbS8Params& p) {
    const std::uint32_t a = hash_key(p.seed, seeds::kPerturbKeepStream);
    const std::uint32_t b = hash_key(p.seed, seeds::kPerturbValueStream);
    k1 = vdupq_n_u32(a), k1_mix = vdupq_n_u32(a * 0x9e3779b9U);
    k2 = vdupq_n_u32(b), k2_mix = vdupq_n_u32(b * 0x9e3779b9U);
    threshold = vdupq_n_u32(static_cast<std::uint32_t>(p.zero_threshold));
    keep = vdupq_n_u32(p.zero_threshold > 0xffffffffu ? 0u : ~0u);  // threshold 2^32: every m = 0
    span = vdup_n_u32(2u * static_cast<std::uint32_t>(p.r_max) + 1u);
    r = vdupq_n_s32(p.r_max);
  }
  // z for the counters j .. j + 3.
  int32x4_t z4(std::uint32_t j) const {
    static constexpr std::uint32_t kIota[4] = {0, 1, 2, 3};
    const uint32x4_t idx = vaddq_u32(vdupq_n_u32(j), vld1q_u32(kIota));
    const uint32x4_t m = vandq_u32(vcgeq_u32(hash32x4(idx, k1, k1_mix), threshold), keep);
    const int32x4_t u = vsubq_s32(vreinterpretq_s32_u32(mul_high(hash32x4(idx, k2, k2_mix), span)), r);
    return vandq_s32(u, vreinterpretq_s32_u32(m));
  }
  // z for the counters j .. j + 15 as int16 (|z| ≤ 127).
  void z16(std::uint32_t j, int16x8_t& lo, int16x8_t& hi) const {
    lo = vcombine_s16(vmovn_s32(z4(j)), vmovn_s32(z4(j + 4)));
    hi = vcombine_s16(vmovn_s32(z4(j + 8)), vmovn_s32(z4(j + 12)));
  }
};

inline int16x8_t clamp127(int16x8_t v) { return vmaxq_s16(vminq_s16(v, vdupq_n_s16(kInt8Max)), vdupq_n_s16(-kInt8Max)); }

// The 32-bit lanes need 2·r_max + 1 < 2^32 and |z| ≤ 127; other settings take the reference.
bool lanes_ok(const PerturbS8Params& p) { return p.r_max >= 0 && p.r_max <= kInt8Max; }

// θ = clamp(θ + k·z), |k| ≤ 255: |k·z| ≤ 32385, so θ + k·z fits int16.
void perturb_span(std::int8_t* theta, std::size_t n, std::uint32_t first, const PerturbS8Params& p, const ZGen& zg,
                  std::int16_t k) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    int16x8_t zlo, zhi;
    zg.z16(first + static_cast<std::uint32_t>(i), zlo, zhi);
    const int8x16_t t = vld1q_s8(theta + i);
    const int16x8_t lo = clamp127(vmlaq_n_s16(vmovl_s8(vget_low_s8(t)), zlo, k));
    const int16x8_t hi = clamp127(vmlaq_n_s16(vmovl_s8(vget_high_s8(t)), zhi, k));
    vst1q_s8(theta + i, vcombine_s8(vmovn_s16(lo), vmovn_s16(hi)));
  }
  if (i < n) perturb_s8_ref(theta + i, n - i, first + static_cast<std::uint32_t>(i), p, k);
}

// θ = clamp(clamp(θ + z) − û), û = PstoShift(g·z, s) (s = 0: g·z), |û| clamped to 255 (with
// |clamp(θ + z)| ≤ 127 that changes nothing).
void update_span(std::int8_t* theta, std::size_t n, std::uint32_t first, const PerturbS8Params& p, const ZGen& zg,
                 std::int32_t g, int s, int b_zo) {
  const int h = s / 2;
  const uint32x4_t rmask = vdupq_n_u32((std::uint32_t{1} << s) - 1u);
  const uint32x4_t lmask = vdupq_n_u32((std::uint32_t{1} << h) - 1u);
  const int32x4_t shr_s = vdupq_n_s32(-s), shr_h = vdupq_n_s32(-h), shl_odd = vdupq_n_s32(s & 1);
  const uint32x4_t lim = vdupq_n_u32(255);
  const auto u_hat4 = [&](int32x4_t z) {
    const int32x4_t gz = vmulq_n_s32(z, g);
    const uint32x4_t sm = vreinterpretq_u32_s32(vshrq_n_s32(gz, 31));
    const uint32x4_t m = vreinterpretq_u32_s32(vabsq_s32(gz));
    const uint32x4_t rem = vandq_u32(m, rmask);
    const uint32x4_t up = vcgtq_u32(vshlq_u32(rem, shr_h), vshlq_u32(vandq_u32(rem, lmask), shl_odd));
    const uint32x4_t q = vminq_u32(vsubq_u32(vshlq_u32(m, shr_s), up), lim);
    return vmovn_s32(vreinterpretq_s32_u32(vsubq_u32(veorq_u32(q, sm), sm)));
  };
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const std::uint32_t j = first + static_cast<std::uint32_t>(i);
    const int32x4_t z0 = zg.z4(j), z1 = zg.z4(j + 4), z2 = zg.z4(j + 8), z3 = zg.z4(j + 12);
    const int16x8_t zlo = vcombine_s16(vmovn_s32(z0), vmovn_s32(z1)), zhi = vcombine_s16(vmovn_s32(z2), vmovn_s32(z3));
    const int16x8_t ulo = vcombine_s16(u_hat4(z0), u_hat4(z1)), uhi = vcombine_s16(u_hat4(z2), u_hat4(z3));
    const int8x16_t t = vld1q_s8(theta + i);
    const int16x8_t lo = clamp127(vsubq_s16(clamp127(vaddq_s16(vmovl_s8(vget_low_s8(t)), zlo)), ulo));
    const int16x8_t hi = clamp127(vsubq_s16(clamp127(vaddq_s16(vmovl_s8(vget_high_s8(t)), zhi)), uhi));
    vst1q_s8(theta + i, vcombine_s8(vmovn_s16(lo), vmovn_s16(hi)));
  }
  if (i < n) zo_update_s8_ref(theta + i, n - i, first + static_cast<std::uint32_t>(i), p, g, b_zo);
}

}  // namespace

void perturb_s8_neon(std::int8_t* theta, std::size_t n, std::uint32_t first, const PerturbS8Params& p, int k) {
  if (!lanes_ok(p)) return perturb_s8_ref(theta, n, first, p, k);
  const ZGen zg(p);
  // |z| ≥ 1 wherever z ≠ 0, so |k| beyond 255 saturates exactly like 255 does.
  const auto kc = static_cast<std::int16_t>(std::clamp(k, -255, 255));
  Chunks::for_each(n, [&](std::size_t b, std::size_t len) {
    perturb_span(theta + b, len, first + static_cast<std::uint32_t>(b), p, zg, kc);
  });
}

void zo_update_s8_neon(std::int8_t* theta, std::size_t n, std::uint32_t first, const PerturbS8Params& p, int g,
                       int b_zo) {
  const int s_l = bitlen(static_cast<std::uint32_t>(p.r_max)) - b_zo;
  if (!lanes_ok(p) || s_l > 31) return zo_update_s8_ref(theta, n, first, p, g, b_zo);
  const ZGen zg(p);
  const int s = std::max(s_l, 0);
  Chunks::for_each(n, [&](std::size_t b, std::size_t len) {
    update_span(theta + b, len, first + static_cast<std::uint32_t>(b), p, zg, g, s, b_zo);
  });
}

}  // namespace zt::kernels
