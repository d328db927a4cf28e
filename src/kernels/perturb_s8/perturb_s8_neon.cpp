// NEON sparse uniform int8 perturbation: z(j) of perturb_s8.hpp for 16 or 32 consecutive
// counters at a time — hash32 in 32-bit lanes (multiplies, shifts, xors), the mask
// m = (w1 ≥ threshold) as a lane compare, u = ⌊w2·(2·r_max + 1) / 2^32⌋ − r_max from the high
// halves of widening 32×32 multiplies. θ is updated in int8 lanes by saturating arithmetic for
// the probes (k = 1, −2) and, on AArch64, for the update of ElasticZO-INT8 (|g| ≤ 1,
// r_max ≤ 31), whose rounded step û is looked up by TBL; other k and g go through 16- and 32-bit
// lanes. Tail elements go to the reference. Counter-based and elementwise, so large calls split
// over OpenMP threads with bit-identical results. Integer arithmetic only.
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

// The hash chains of a group of counters (keep and value words of V vectors) advance one
// statement at a time, all 2V before the next: the in-order A53 waits out each NEON result's
// latency, which that many independent chains cover (one vector's two hashes back to back left
// the pipe idle a third of the time: docs/results/a53-model.md).
#define ZT_EACH(i) _Pragma("GCC unroll 16") for (int i = 0; i < 2 * V; ++i)

// hash32(key, x) of rng.hpp per lane from its third step (the first multiply) on, for x[0..V)
// with key[0] and x[V..2V) with key[1]; mix = key · 0x9e3779b9. The first two steps,
// x ^= key, x ^= x >> 16, are ZGen::zv's.
template <int V>
[[gnu::always_inline]] inline void hash32xv_rest(uint32x4_t (&x)[2 * V], const uint32x4_t (&mix)[2]) {
  ZT_EACH(i) x[i] = vmulq_n_u32(x[i], 0x7feb352dU);
  ZT_EACH(i) x[i] = veorq_u32(x[i], vshrq_n_u32(x[i], 15));
  ZT_EACH(i) x[i] = vmulq_n_u32(x[i], 0x846ca68bU);
  ZT_EACH(i) x[i] = veorq_u32(x[i], vshrq_n_u32(x[i], 16));
  ZT_EACH(i) x[i] = vaddq_u32(x[i], mix[i / V]);
  ZT_EACH(i) x[i] = veorq_u32(x[i], vshrq_n_u32(x[i], 17));
  ZT_EACH(i) x[i] = vmulq_n_u32(x[i], 0xed5ad4bbU);
  ZT_EACH(i) x[i] = veorq_u32(x[i], vshrq_n_u32(x[i], 11));
  ZT_EACH(i) x[i] = vmulq_n_u32(x[i], 0xac4c1b51U);
  ZT_EACH(i) x[i] = veorq_u32(x[i], vshrq_n_u32(x[i], 15));
}

#undef ZT_EACH

// ⌊w · c / 2^32⌋ per lane (exact: widening multiplies; on AArch64 the high words gathered by one
// UZP2 instead of two narrowing shifts).
inline uint32x4_t mul_high(uint32x4_t w, uint32x2_t c) {
  const uint64x2_t lo = vmull_u32(vget_low_u32(w), c);
#if defined(__aarch64__)
  const uint64x2_t hi = vmull_high_u32(w, vcombine_u32(c, c));
  return vuzp2q_u32(vreinterpretq_u32_u64(lo), vreinterpretq_u32_u64(hi));
#else
  const uint64x2_t hi = vmull_u32(vget_high_u32(w), c);
  return vcombine_u32(vshrn_n_u64(lo, 32), vshrn_n_u64(hi, 32));
#endif
}

// The low halves of a's and b's lanes, a's first: one UZP1 on AArch64, two narrowing moves on
// ARMv7.
inline int16x8_t narrow(int32x4_t a, int32x4_t b) {
#if defined(__aarch64__)
  return vuzp1q_s16(vreinterpretq_s16_s32(a), vreinterpretq_s16_s32(b));
#else
  return vcombine_s16(vmovn_s32(a), vmovn_s32(b));
#endif
}
inline int8x16_t narrow(int16x8_t a, int16x8_t b) {
#if defined(__aarch64__)
  return vuzp1q_s8(vreinterpretq_s8_s16(a), vreinterpretq_s8_s16(b));
#else
  return vcombine_s8(vmovn_s16(a), vmovn_s16(b));
#endif
}

struct ZGen {
  std::uint32_t ks[2];        // keep (1) and value (2) streams' keys
  uint32x4_t key[2], mix[2];  // the same, and key · 0x9e3779b9, in every lane
  uint32x4_t threshold;
  uint32x2_t span;
  int32x4_t r;
  explicit ZGen(const PerturbS8Params& p) {
    const std::uint32_t a = hash_key(p.seed, seeds::kPerturbKeepStream);
    const std::uint32_t b = hash_key(p.seed, seeds::kPerturbValueStream);
    ks[0] = a, ks[1] = b;
    key[0] = vdupq_n_u32(a), mix[0] = vdupq_n_u32(a * 0x9e3779b9U);
    key[1] = vdupq_n_u32(b), mix[1] = vdupq_n_u32(b * 0x9e3779b9U);
    threshold = vdupq_n_u32(static_cast<std::uint32_t>(p.zero_threshold));
    span = vdup_n_u32(2u * static_cast<std::uint32_t>(p.r_max) + 1u);
    r = vdupq_n_s32(p.r_max);
  }
  // z for the counters j .. j + 4V − 1 in 32-bit lanes, four per vector.
  template <int V>
  [[gnu::always_inline]] void zv(std::uint32_t j, int32x4_t (&z)[V]) const {
    static constexpr std::uint32_t kIota[4] = {0, 1, 2, 3};
    uint32x4_t lane = vld1q_u32(kIota);
    uint32x4_t w[2 * V];
    if ((j & (4u * V - 1u)) == 0) {
      // j a multiple of 4V (every call from the trainers, whose ranges start at 0): j + l = j ^ l
      // for l < 4V < 2^16, so after x ^= key, x ^= x >> 16 lane l holds base ^ l with
      // base = (j ^ key) ^ ((j ^ key) >> 16) the same in every lane: the first two steps once
      // per group of 4V counters (3 NEON instructions per 4 counters instead of 7).
      const std::uint32_t xa = j ^ ks[0], xb = j ^ ks[1];
      const uint32x4_t ba = vdupq_n_u32(xa ^ (xa >> 16)), bb = vdupq_n_u32(xb ^ (xb >> 16));
      for (int v = 0; v < V; ++v) {
        w[v] = veorq_u32(ba, lane);
        w[v + V] = veorq_u32(bb, lane);
        lane = vaddq_u32(lane, vdupq_n_u32(4));
      }
    } else {
      const uint32x4_t idx = vaddq_u32(vdupq_n_u32(j), lane);
      for (int v = 0; v < V; ++v) w[v] = w[v + V] = vaddq_u32(idx, vdupq_n_u32(4u * static_cast<std::uint32_t>(v)));
      for (int i = 0; i < 2 * V; ++i) w[i] = veorq_u32(w[i], key[i / V]);
      for (int i = 0; i < 2 * V; ++i) w[i] = veorq_u32(w[i], vshrq_n_u32(w[i], 16));
    }
    hash32xv_rest<V>(w, mix);
    for (int v = 0; v < V; ++v) {
      const uint32x4_t m = vcgeq_u32(w[v], threshold);
      const int32x4_t u = vsubq_s32(vreinterpretq_s32_u32(mul_high(w[v + V], span)), r);
      z[v] = vandq_s32(u, vreinterpretq_s32_u32(m));
    }
  }
  // The same as int16 (|z| ≤ 127): counters j .. j + 7 in lo, j + 8 .. j + 15 in hi.
  [[gnu::always_inline]] void z16(std::uint32_t j, int16x8_t& lo, int16x8_t& hi) const {
    int32x4_t z[4];
    zv<4>(j, z);
    lo = narrow(z[0], z[1]);
    hi = narrow(z[2], z[3]);
  }
  // And as int8, G groups of 16 counters from j.
  template <int G>
  [[gnu::always_inline]] void z8(std::uint32_t j, int8x16_t (&out)[G]) const {
    int32x4_t z[4 * G];
    zv<4 * G>(j, z);
    for (int q = 0; q < G; ++q) {
      const int16x8_t lo = narrow(z[4 * q], z[4 * q + 1]);
      const int16x8_t hi = narrow(z[4 * q + 2], z[4 * q + 3]);
      out[q] = narrow(lo, hi);
    }
  }
};

inline int16x8_t clamp127(int16x8_t v) { return vmaxq_s16(vminq_s16(v, vdupq_n_s16(kInt8Max)), vdupq_n_s16(-kInt8Max)); }

// The 32-bit lanes need 2·r_max + 1 < 2^32 and |z| ≤ 127, and the mask a threshold below 2^32
// (p_zero 1, every m = 0, is not a 32-bit compare); other settings take the reference.
bool lanes_ok(const PerturbS8Params& p) {
  return p.r_max >= 0 && p.r_max <= kInt8Max && p.zero_threshold <= 0xffffffffu;
}

// In int8 lanes, clamp(a + b) and clamp(a − b) to ±127 for |a|, |b| ≤ 127 (a may be −128) are
// the saturating sum and difference raised to −127. Chained, clamp(clamp(a − b) − c) equals
// clamp(a − b − c) when b and c have the same sign, so θ − 2z needs no wider lanes.
inline int8x16_t add127(int8x16_t a, int8x16_t b) { return vmaxq_s8(vqaddq_s8(a, b), vdupq_n_s8(-kInt8Max)); }
inline int8x16_t sub127(int8x16_t a, int8x16_t b) { return vmaxq_s8(vqsubq_s8(a, b), vdupq_n_s8(-kInt8Max)); }

// θ = clamp(θ + k·z). K = 1 and −2 (the probes of ElasticZO-INT8) in int8 lanes; K = 0: any
// |k| ≤ 255 in int16 lanes (|k·z| ≤ 32385, so θ + k·z fits).
template <int K>
void perturb_span(std::int8_t* theta, std::size_t n, std::uint32_t first, const PerturbS8Params& p, const ZGen& zg,
                  std::int16_t k) {
  std::size_t i = 0;
  if constexpr (K != 0) {
    const auto groups = [&]<int G>(std::size_t i) __attribute__((always_inline)) {
      int8x16_t z[G];
      zg.z8<G>(first + static_cast<std::uint32_t>(i), z);
      for (int q = 0; q < G; ++q) {
        const int8x16_t t = vld1q_s8(theta + i + 16 * q);
        vst1q_s8(theta + i + 16 * q, K == 1 ? add127(t, z[q]) : sub127(sub127(t, z[q]), z[q]));
      }
    };
    for (; i + 32 <= n; i += 32) groups.template operator()<2>(i);
    for (; i + 16 <= n; i += 16) groups.template operator()<1>(i);
  } else {
    for (; i + 16 <= n; i += 16) {
      int16x8_t zlo, zhi;
      zg.z16(first + static_cast<std::uint32_t>(i), zlo, zhi);
      const int8x16_t t = vld1q_s8(theta + i);
      const int16x8_t lo = clamp127(vmlaq_n_s16(vmovl_s8(vget_low_s8(t)), zlo, k));
      const int16x8_t hi = clamp127(vmlaq_n_s16(vmovl_s8(vget_high_s8(t)), zhi, k));
      vst1q_s8(theta + i, narrow(lo, hi));
    }
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
    int32x4_t z[4];
    zg.zv<4>(first + static_cast<std::uint32_t>(i), z);
    const int16x8_t zlo = narrow(z[0], z[1]);
    const int16x8_t zhi = narrow(z[2], z[3]);
    const int16x8_t ulo = vcombine_s16(u_hat4(z[0]), u_hat4(z[1])), uhi = vcombine_s16(u_hat4(z[2]), u_hat4(z[3]));
    const int8x16_t t = vld1q_s8(theta + i);
    const int16x8_t lo = clamp127(vsubq_s16(clamp127(vaddq_s16(vmovl_s8(vget_low_s8(t)), zlo)), ulo));
    const int16x8_t hi = clamp127(vsubq_s16(clamp127(vaddq_s16(vmovl_s8(vget_high_s8(t)), zhi)), uhi));
    vst1q_s8(theta + i, narrow(lo, hi));
  }
  if (i < n) zo_update_s8_ref(theta + i, n - i, first + static_cast<std::uint32_t>(i), p, g, b_zo);
}

#if defined(__aarch64__)
// The same update when û takes at most 64 values that fit int8 — z in [−r_max, r_max] with
// r_max ≤ 31 and |g| ≤ 1 (ElasticZO-INT8's sign), so |û| ≤ |z| — by a table lookup (TBL) of û
// at z + r_max, the table made from the scalar PstoShift; the rest in int8 lanes.
constexpr int kTableRMax = 31;
void update_span_table(std::int8_t* theta, std::size_t n, std::uint32_t first, const PerturbS8Params& p,
                       const ZGen& zg, const int8x16x4_t& u_hat, std::int32_t g, int b_zo) {
  const int8x16_t r = vdupq_n_s8(static_cast<std::int8_t>(p.r_max));
  const auto groups = [&]<int G>(std::size_t i) __attribute__((always_inline)) {
    int8x16_t z[G];
    zg.z8<G>(first + static_cast<std::uint32_t>(i), z);
    for (int q = 0; q < G; ++q) {
      const int8x16_t u = vqtbl4q_s8(u_hat, vreinterpretq_u8_s8(vaddq_s8(z[q], r)));
      vst1q_s8(theta + i + 16 * q, sub127(add127(vld1q_s8(theta + i + 16 * q), z[q]), u));
    }
  };
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) groups.template operator()<2>(i);
  for (; i + 16 <= n; i += 16) groups.template operator()<1>(i);
  if (i < n) zo_update_s8_ref(theta + i, n - i, first + static_cast<std::uint32_t>(i), p, g, b_zo);
}

// Whether update_span_table applies, and its table: û of z at z + r_max.
bool table_ok(const PerturbS8Params& p, int g) { return p.r_max <= kTableRMax && g >= -1 && g <= 1; }
int8x16x4_t u_hat_table(const PerturbS8Params& p, int g, int s_l) {
  std::int8_t table[64] = {};
  for (int z = -p.r_max; z <= p.r_max; ++z)
    table[z + p.r_max] = static_cast<std::int8_t>(s_l >= 1 ? psto_shift(g * z, s_l) : g * z);
  return vld1q_s8_x4(table);
}
#endif

}  // namespace

void perturb_s8_neon(std::int8_t* theta, std::size_t n, std::uint32_t first, const PerturbS8Params& p, int k) {
  if (!lanes_ok(p)) return perturb_s8_ref(theta, n, first, p, k);
  const ZGen zg(p);
  // |z| ≥ 1 wherever z ≠ 0, so |k| beyond 255 saturates exactly like 255 does.
  const auto kc = static_cast<std::int16_t>(std::clamp(k, -255, 255));
  const auto span = kc == 1 ? perturb_span<1> : kc == -2 ? perturb_span<-2> : perturb_span<0>;
  Chunks::for_each(n, [&](std::size_t b, std::size_t len) {
    span(theta + b, len, first + static_cast<std::uint32_t>(b), p, zg, kc);
  });
}

void zo_update_s8_neon(std::int8_t* theta, std::size_t n, std::uint32_t first, const PerturbS8Params& p, int g,
                       int b_zo) {
  const int s_l = bitlen(static_cast<std::uint32_t>(p.r_max)) - b_zo;
  if (!lanes_ok(p) || s_l > 31) return zo_update_s8_ref(theta, n, first, p, g, b_zo);
  const ZGen zg(p);
  const int s = std::max(s_l, 0);
#if defined(__aarch64__)
  if (table_ok(p, g)) {
    const int8x16x4_t u_hat = u_hat_table(p, g, s_l);
    return Chunks::for_each(n, [&](std::size_t b, std::size_t len) {
      update_span_table(theta + b, len, first + static_cast<std::uint32_t>(b), p, zg, u_hat, g, b_zo);
    });
  }
#endif
  Chunks::for_each(n, [&](std::size_t b, std::size_t len) {
    update_span(theta + b, len, first + static_cast<std::uint32_t>(b), p, zg, g, s, b_zo);
  });
}

// ---- a cached direction (perturb_s8.hpp) --------------------------------------------------

void fill_perturbation_s8_neon(const PerturbS8Params& p, std::uint32_t first, std::size_t n, std::int8_t* z) {
  if (!lanes_ok(p)) return perturbation_s8(p, first, n, z);
  const ZGen zg(p);
  Chunks::for_each(n, [&](std::size_t b, std::size_t len) {
    const std::uint32_t j = first + static_cast<std::uint32_t>(b);
    std::int8_t* out = z + b;
    const auto groups = [&]<int G>(std::size_t i) __attribute__((always_inline)) {
      int8x16_t v[G];
      zg.z8<G>(j + static_cast<std::uint32_t>(i), v);
      for (int q = 0; q < G; ++q) vst1q_s8(out + i + 16 * q, v[q]);
    };
    std::size_t i = 0;
    for (; i + 32 <= len; i += 32) groups.template operator()<2>(i);
    for (; i + 16 <= len; i += 16) groups.template operator()<1>(i);
    if (i < len) perturbation_s8(p, j + static_cast<std::uint32_t>(i), len - i, out + i);
  });
}

void perturb_cached_s8_neon(std::int8_t* theta, const std::int8_t* z, std::size_t n, int k) {
  if (k != 1 && k != -2) return perturb_cached_s8_ref(theta, z, n, k);
  Chunks::for_each(n, [&](std::size_t b, std::size_t len) {
    std::int8_t* t = theta + b;
    const std::int8_t* d = z + b;
    std::size_t i = 0;
    for (; i + 16 <= len; i += 16) {
      const int8x16_t zv = vld1q_s8(d + i);
      const int8x16_t tv = vld1q_s8(t + i);
      vst1q_s8(t + i, k == 1 ? add127(tv, zv) : sub127(sub127(tv, zv), zv));
    }
    if (i < len) perturb_cached_s8_ref(t + i, d + i, len - i, k);
  });
}

void zo_update_cached_s8_neon(std::int8_t* theta, const std::int8_t* z, std::size_t n, const PerturbS8Params& p,
                              int g, int b_zo) {
#if defined(__aarch64__)
  const int s_l = bitlen(static_cast<std::uint32_t>(p.r_max)) - b_zo;
  if (lanes_ok(p) && s_l <= 31 && table_ok(p, g)) {
    const int8x16x4_t u_hat = u_hat_table(p, g, s_l);
    const int8x16_t r = vdupq_n_s8(static_cast<std::int8_t>(p.r_max));
    return Chunks::for_each(n, [&](std::size_t b, std::size_t len) {
      std::int8_t* t = theta + b;
      const std::int8_t* d = z + b;
      std::size_t i = 0;
      for (; i + 16 <= len; i += 16) {
        const int8x16_t zv = vld1q_s8(d + i);
        const int8x16_t u = vqtbl4q_s8(u_hat, vreinterpretq_u8_s8(vaddq_s8(zv, r)));
        vst1q_s8(t + i, sub127(add127(vld1q_s8(t + i), zv), u));
      }
      if (i < len) zo_update_cached_s8_ref(t + i, d + i, len - i, p, g, b_zo);
    });
  }
#endif
  zo_update_cached_s8_ref(theta, z, n, p, g, b_zo);
}

}  // namespace zt::kernels
