// NEON sparse uniform int8 perturbation: z(j) of perturb_s8.hpp for 16 or 32 consecutive
// counters at a time — hash32 in 32-bit lanes (multiplies, shifts, xors), the mask
// m = (w1 ≥ threshold) as a lane compare, z = ⌊w·(2·r_max + 1) / 2^32⌋ − r_max from the high
// halves of widening 32×32 multiplies, with w = w2 where m holds and w = 2^31 (which gives
// exactly r_max, so z = 0) where it does not; the − r_max is taken after narrowing. θ is updated
// in int8 lanes by saturating arithmetic for the probes (k = 1, −2) and, on AArch64, for the
// update of ElasticZO-INT8 (|g| ≤ 1, r_max ≤ 31), whose rounded step û is looked up by TBL;
// other k and g go through 16- and 32-bit lanes. Tail elements go to the reference.
// Counter-based and elementwise, so large calls split over OpenMP threads with bit-identical
// results. Integer arithmetic only.
#include <arm_neon.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "zotrain/core/rng.hpp"
#include "zotrain/core/seeds.hpp"
#include "zotrain/kernels/perturb_s8.hpp"
#include "zotrain/kernels/quant.hpp"
#include "../chunked_parallel.hpp"
#include "../issue_order.hpp"

namespace zt::kernels {
namespace {

// Elementwise threading (../chunked_parallel.hpp): fork from this many elements, in pieces.
using Chunks = detail::Chunking<std::size_t{1} << 15, 4096>;

// Instruction order (../issue_order.hpp): the hash below is written in the order it should
// issue on the in-order A53 — each step over all chains before the next, each shift eight
// operations or more ahead of the xor that reads it, the θ update of one range of 32 spread over
// the next range's hash (pipelined()) — and the kernels that use it are compiled as written
// (ZT_AS_WRITTEN; docs/results/a53-model.md: 435 → 365 modelled cycles per 32 weights for the
// + probe). The generic paths (any k, any g) keep GCC's order, which suits their code better.

#define ZT_EACH(i) _Pragma("GCC unroll 16") for (int i = 0; i < 2 * V; ++i)

// x ^= x >> S for N ≥ 8 chains, each shift eight or more NEON operations ahead of the xor that
// reads it: eight shifts, then each xor beside the shift of the chain eight on, then the last
// eight xors.
template <int S, int N>
[[gnu::always_inline]] inline void xorshift(uint32x4_t (&x)[N]) {
  constexpr int K = 8;
  static_assert(N >= K);
  uint32x4_t t[K];
  _Pragma("GCC unroll 16") for (int i = 0; i < K; ++i) t[i] = vshrq_n_u32(x[i], S);
  _Pragma("GCC unroll 16") for (int i = 0; i < N - K; ++i) {
    x[i] = veorq_u32(x[i], t[i % K]);
    t[i % K] = vshrq_n_u32(x[i + K], S);
  }
  _Pragma("GCC unroll 16") for (int i = N - K; i < N; ++i) x[i] = veorq_u32(x[i], t[i % K]);
}

// hash32(key, x) of rng.hpp per lane from its third step (the first multiply) on, for x[0..V)
// with key[0] and x[V..2V) with key[1]; mix = key · 0x9e3779b9. The first two steps,
// x ^= key, x ^= x >> 16, are ZGen::uv's. `between(stage)` runs six times among the second
// step's multiplies, stage = std::integral_constant<int, 0..5> (pipelined()).
template <int V, class Between>
[[gnu::always_inline]] inline void hash32xv_rest(uint32x4_t (&x)[2 * V], const uint32x4_t (&mix)[2],
                                                 const Between& between) {
  ZT_EACH(i) x[i] = vmulq_n_u32(x[i], 0x7feb352dU);
  xorshift<15>(x);
  // Stage S after multiply ⌊(S + 1)·2V / 6⌋ − 1: spread evenly, stage 5 after the last.
  const auto stages_after = [&]<int I, int... S>(std::integer_sequence<int, S...>) __attribute__((always_inline)) {
    ((((S + 1) * 2 * V) / 6 - 1 == I ? between(std::integral_constant<int, S>{}) : void()), ...);
  };
  [&]<int... I>(std::integer_sequence<int, I...>) __attribute__((always_inline)) {
    ((x[I] = vmulq_n_u32(x[I], 0x846ca68bU),
      stages_after.template operator()<I>(std::make_integer_sequence<int, 6>{})),
     ...);
  }(std::make_integer_sequence<int, 2 * V>{});
  const uint32x4_t m[2] = {mix[0], mix[1]};  // read a step ahead of their use
  xorshift<16>(x);
  ZT_EACH(i) x[i] = vaddq_u32(x[i], m[i / V]);
  xorshift<17>(x);
  ZT_EACH(i) x[i] = vmulq_n_u32(x[i], 0xed5ad4bbU);
  xorshift<11>(x);
  ZT_EACH(i) x[i] = vmulq_n_u32(x[i], 0xac4c1b51U);
  xorshift<15>(x);
}

#undef ZT_EACH

// The high words of the two products of a widening 32×32 multiply of four lanes: one UZP2 on
// AArch64, two narrowing shifts on ARMv7.
inline uint32x4_t high_words(uint64x2_t lo, uint64x2_t hi) {
#if defined(__aarch64__)
  return vuzp2q_u32(vreinterpretq_u32_u64(lo), vreinterpretq_u32_u64(hi));
#else
  return vcombine_u32(vshrn_n_u64(lo, 32), vshrn_n_u64(hi, 32));
#endif
}

// The low halves of a's and b's lanes, a's first: one UZP1 on AArch64, two narrowing moves on
// ARMv7.
inline uint16x8_t narrow(uint32x4_t a, uint32x4_t b) {
#if defined(__aarch64__)
  return vuzp1q_u16(vreinterpretq_u16_u32(a), vreinterpretq_u16_u32(b));
#else
  return vcombine_u16(vmovn_u32(a), vmovn_u32(b));
#endif
}
inline uint8x16_t narrow(uint16x8_t a, uint16x8_t b) {
#if defined(__aarch64__)
  return vuzp1q_u8(vreinterpretq_u8_u16(a), vreinterpretq_u8_u16(b));
#else
  return vcombine_u8(vmovn_u16(a), vmovn_u16(b));
#endif
}
inline int16x8_t narrow(int32x4_t a, int32x4_t b) {
  return vreinterpretq_s16_u16(narrow(vreinterpretq_u32_s32(a), vreinterpretq_u32_s32(b)));
}
inline int8x16_t narrow(int16x8_t a, int16x8_t b) {
  return vreinterpretq_s8_u8(narrow(vreinterpretq_u16_s16(a), vreinterpretq_u16_s16(b)));
}

struct Nothing {
  template <class Stage>
  void operator()(Stage) const {}
};

struct ZGen {
  std::uint32_t ks[2];        // keep (1) and value (2) streams' keys
  uint32x4_t key[2], mix[2];  // the same, and key · 0x9e3779b9, in every lane
  uint32x4_t threshold;
  uint32x2_t span;            // 2·r_max + 1
  uint32x4_t span4, half;     // the same in every lane; 2^31
  int32x4_t r;                // r_max in 32-, 16- and 8-bit lanes
  int16x8_t r16;
  int8x16_t r8;
  explicit ZGen(const PerturbS8Params& p) {
    const std::uint32_t a = hash_key(p.seed, seeds::kPerturbKeepStream);
    const std::uint32_t b = hash_key(p.seed, seeds::kPerturbValueStream);
    const std::uint32_t s = 2u * static_cast<std::uint32_t>(p.r_max) + 1u;
    ks[0] = a, ks[1] = b;
    key[0] = vdupq_n_u32(a), mix[0] = vdupq_n_u32(a * 0x9e3779b9U);
    key[1] = vdupq_n_u32(b), mix[1] = vdupq_n_u32(b * 0x9e3779b9U);
    threshold = vdupq_n_u32(static_cast<std::uint32_t>(p.zero_threshold));
    span = vdup_n_u32(s), span4 = vdupq_n_u32(s), half = vdupq_n_u32(0x80000000U);
    r = vdupq_n_s32(p.r_max);
    r16 = vdupq_n_s16(static_cast<std::int16_t>(p.r_max));
    r8 = vdupq_n_s8(static_cast<std::int8_t>(p.r_max));
  }
  // The first two steps of the hash of counter j for both streams, x = j ^ key, x ^= x >> 16,
  // which are the same for a group of 4V counters from a multiple of 4V (uv).
  struct Words {
    std::uint32_t keep, value;
  };
  Words words(std::uint32_t j) const {
    const std::uint32_t xa = j ^ ks[0], xb = j ^ ks[1];
    return {xa ^ (xa >> 16), xb ^ (xb >> 16)};
  }
  uint64x2_t mull_high(uint32x4_t w) const {
#if defined(__aarch64__)
    return vmull_high_u32(w, span4);
#else
    return vmull_u32(vget_high_u32(w), span);
#endif
  }
  // u = z + r_max (in [0, 2·r_max]) for the counters j .. j + 4V − 1 in 32-bit lanes, four per
  // vector; `between(stage)` runs inside the hash (hash32xv_rest).
  template <int V, class Between = Nothing>
  [[gnu::always_inline]] void uv(std::uint32_t j, uint32x4_t (&u)[V], const Between& between = {}) const {
    uv<V>(j, u, words(j), between);
  }
  // The same with words(j) given (pipelined() computes them a group ahead).
  template <int V, class Between>
  [[gnu::always_inline]] void uv(std::uint32_t j, uint32x4_t (&u)[V], Words base, const Between& between) const {
    static_assert(V == 4 || V == 8);
    static constexpr std::uint32_t kLanes[32] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10,
                                                 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
                                                 22, 23, 24, 25, 26, 27, 28, 29, 30, 31};
    // The lanes are loaded together, after the per-group words and before their first use, from
    // a table the compiler cannot see through: as constants it rematerialises them one at a time
    // right before each use, a load-to-use stall per vector.
    const std::uint32_t* lanes = kLanes;
    asm("" : "+r"(lanes));
    uint32x4_t lane[V], w[2 * V];
    if ((j & (4u * V - 1u)) == 0) {
      // j a multiple of 4V (every call from the trainers, whose ranges start at 0): j + l = j ^ l
      // for l < 4V < 2^16, so after x ^= key, x ^= x >> 16 lane l holds base ^ l with
      // base = (j ^ key) ^ ((j ^ key) >> 16) the same in every lane: the first two steps once
      // per group of 4V counters (3 NEON instructions per 4 counters instead of 7).
      const uint32x4_t ba = vdupq_n_u32(base.keep), bb = vdupq_n_u32(base.value);
      for (int v = 0; v < V; ++v) lane[v] = vld1q_u32(lanes + 4 * v);
      for (int v = 0; v < V; ++v) w[v] = veorq_u32(ba, lane[v]);
      for (int v = 0; v < V; ++v) w[v + V] = veorq_u32(bb, lane[v]);
    } else {
      const uint32x4_t idx = vdupq_n_u32(j);
      for (int v = 0; v < V; ++v) lane[v] = vld1q_u32(lanes + 4 * v);
      for (int v = 0; v < V; ++v) w[v] = w[v + V] = vaddq_u32(idx, lane[v]);
      for (int i = 0; i < 2 * V; ++i) w[i] = veorq_u32(w[i], key[i / V]);
      xorshift<16>(w);
    }
    hash32xv_rest<V>(w, mix, between);
    // w_value where w_keep ≥ threshold, else 2^31; then ⌊· span / 2^32⌋. The constants are read
    // a step ahead of their first use.
    const uint32x4_t thr = threshold, hf = half;
    const uint32x2_t sp = span;
    for (int v = 0; v < V; ++v) w[v] = vcgeq_u32(w[v], thr);
    for (int v = 0; v < V; ++v) w[V + v] = vbslq_u32(w[v], w[V + v], hf);
    uint64x2_t lo[V], hi[V];
    for (int v = 0; v < V; ++v) lo[v] = vmull_u32(vget_low_u32(w[V + v]), sp);
    for (int v = 0; v < V; ++v) hi[v] = mull_high(w[V + v]);
    for (int v = 0; v < V; ++v) u[v] = high_words(lo[v], hi[v]);
  }
  // z as int16 (|z| ≤ 127): counters j .. j + 7 in lo, j + 8 .. j + 15 in hi.
  [[gnu::always_inline]] void z16(std::uint32_t j, int16x8_t& lo, int16x8_t& hi) const {
    uint32x4_t u[4];
    uv<4>(j, u);
    lo = vsubq_s16(vreinterpretq_s16_u16(narrow(u[0], u[1])), r16);
    hi = vsubq_s16(vreinterpretq_s16_u16(narrow(u[2], u[3])), r16);
  }
  // z as int8, G groups of 16 counters from j.
  template <int G, class Between = Nothing>
  [[gnu::always_inline]] void z8(std::uint32_t j, int8x16_t (&z)[G], Words base, const Between& between = {}) const {
    uint32x4_t u[4 * G];
    uv<4 * G>(j, u, base, between);
    uint16x8_t h[2 * G];
    for (int q = 0; q < 2 * G; ++q) h[q] = narrow(u[2 * q], u[2 * q + 1]);
    for (int q = 0; q < G; ++q) z[q] = vsubq_s8(vreinterpretq_s8_u8(narrow(h[2 * q], h[2 * q + 1])), r8);
  }
};

inline int16x8_t clamp127(int16x8_t v) { return vmaxq_s16(vminq_s16(v, vdupq_n_s16(kInt8Max)), vdupq_n_s16(-kInt8Max)); }

// The 32-bit lanes need 2·r_max + 1 < 2^32 and |z| ≤ 127, and the mask a threshold below 2^32
// (p_zero 1, every m = 0, is not a 32-bit compare); other settings take the reference.
bool lanes_ok(const PerturbS8Params& p) {
  return p.r_max >= 0 && p.r_max <= kInt8Max && p.zero_threshold <= 0xffffffffu;
}

// The six stages of a pipelined step (below) one after the other.
template <class Step, int G>
[[gnu::always_inline]] inline void all_stages(const Step& step, std::size_t b, const int8x16_t (&z)[G],
                                              int8x16_t (&t)[2][G]) {
  [&]<int... S>(std::integer_sequence<int, S...>) {
    (step(b, z, t, std::integral_constant<int, S>{}), ...);
  }(std::make_integer_sequence<int, 6>{});
}

// Runs a kernel's `step` over [0, n): whole ranges of 32 software-pipelined, the step of one
// range emitted inside the next range's hash in six stages, so that the in-order core issues
// hash operations while each of the step's dependent operations (load, saturating add, clamp,
// store) completes; then a last 16 if there is one. `step(b, z, t, stage)` does stage 0..5
// (std::integral_constant) of the work on elements [b, b + 16·G) given their z as G int8
// vectors, carrying what it needs between stages in t (two vectors per group). Returns the end
// of what it did; the caller finishes with the reference.
template <class Step>
[[gnu::always_inline]] inline std::size_t pipelined(std::size_t n, std::uint32_t first, const ZGen& zg,
                                                    const Step& step) {
  std::size_t i = 0;
  if (n >= 32) {
    int8x16_t z[2], t[2][2];
    zg.z8<2>(first, z, zg.words(first));
    ZGen::Words ahead = zg.words(first + 32);
    for (i = 32; i + 32 <= n; i += 32) {
      int8x16_t next[2];
      // This group's words were computed during the last one (stage 5).
      const ZGen::Words base = ahead;
      zg.z8<2>(first + static_cast<std::uint32_t>(i), next, base, [&](auto stage) __attribute__((always_inline)) {
        step(i - 32, z, t, stage);
        if constexpr (decltype(stage)::value == 5) ahead = zg.words(first + static_cast<std::uint32_t>(i + 32));
      });
      z[0] = next[0], z[1] = next[1];
    }
    all_stages(step, i - 32, z, t);
  }
  if (i + 16 <= n) {
    int8x16_t z[1], t[2][1];
    zg.z8<1>(first + static_cast<std::uint32_t>(i), z, zg.words(first + static_cast<std::uint32_t>(i)));
    all_stages(step, i, z, t);
    i += 16;
  }
  return i;
}

// In int8 lanes, clamp(a + b) and clamp(a − b) to ±127 for |a|, |b| ≤ 127 (a may be −128) are
// the saturating sum and difference raised to −127. Chained, clamp(clamp(a − b) − c) equals
// clamp(a − b − c) when b and c have the same sign, so θ − 2z needs no wider lanes. Each step
// runs over the G vectors before the next.
template <int G>
[[gnu::always_inline]] inline void clamp_low(int8x16_t (&t)[G]) {
  for (int q = 0; q < G; ++q) t[q] = vmaxq_s8(t[q], vdupq_n_s8(-kInt8Max));
}
inline int8x16_t add127(int8x16_t a, int8x16_t b) { return vmaxq_s8(vqaddq_s8(a, b), vdupq_n_s8(-kInt8Max)); }
inline int8x16_t sub127(int8x16_t a, int8x16_t b) { return vmaxq_s8(vqsubq_s8(a, b), vdupq_n_s8(-kInt8Max)); }

// θ = clamp(θ + k·z) for the probes of ElasticZO-INT8, K = 1 and −2, in int8 lanes.
template <int K>
ZT_AS_WRITTEN void probe_span(std::int8_t* theta, std::size_t n, std::uint32_t first, const PerturbS8Params& p,
                              const ZGen& zg) {
  // Stages: load; θ ± z; clamp; (K = −2: θ − z; clamp;) store.
  const auto step = [&]<int G, int S>(std::size_t b, const int8x16_t (&z)[G], int8x16_t (&t)[2][G],
                                      std::integral_constant<int, S>) __attribute__((always_inline)) {
    constexpr int kStore = K == 1 ? 3 : 5;
    if constexpr (S == 0) {
      for (int q = 0; q < G; ++q) t[0][q] = vld1q_s8(theta + b + 16 * q);
    } else if constexpr (S == 1 || (K == -2 && S == 3)) {
      for (int q = 0; q < G; ++q) t[0][q] = K == 1 ? vqaddq_s8(t[0][q], z[q]) : vqsubq_s8(t[0][q], z[q]);
    } else if constexpr (S == 2 || (K == -2 && S == 4)) {
      clamp_low(t[0]);
    } else if constexpr (S == kStore) {
      for (int q = 0; q < G; ++q) vst1q_s8(theta + b + 16 * q, t[0][q]);
    }
  };
  const std::size_t i = pipelined(n, first, zg, step);
  if (i < n) perturb_s8_ref(theta + i, n - i, first + static_cast<std::uint32_t>(i), p, K);
}

// θ = clamp(θ + k·z) for any |k| ≤ 255, in int16 lanes (|k·z| ≤ 32385, so θ + k·z fits).
void perturb_span(std::int8_t* theta, std::size_t n, std::uint32_t first, const PerturbS8Params& p, const ZGen& zg,
                  std::int16_t k) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    int16x8_t zlo, zhi;
    zg.z16(first + static_cast<std::uint32_t>(i), zlo, zhi);
    const int8x16_t t = vld1q_s8(theta + i);
    const int16x8_t lo = clamp127(vmlaq_n_s16(vmovl_s8(vget_low_s8(t)), zlo, k));
    const int16x8_t hi = clamp127(vmlaq_n_s16(vmovl_s8(vget_high_s8(t)), zhi, k));
    vst1q_s8(theta + i, narrow(lo, hi));
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
    uint32x4_t u[4];
    zg.uv<4>(first + static_cast<std::uint32_t>(i), u);
    int32x4_t z[4];
    for (int v = 0; v < 4; ++v) z[v] = vsubq_s32(vreinterpretq_s32_u32(u[v]), zg.r);
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
// at u = z + r_max, the table made from the scalar PstoShift; the rest in int8 lanes.
constexpr int kTableRMax = 31;
ZT_AS_WRITTEN void update_span_table(std::int8_t* theta, std::size_t n, std::uint32_t first,
                                     const PerturbS8Params& p, const ZGen& zg, const int8x16x4_t& u_hat,
                                     std::int32_t g, int b_zo) {
  // Stages: load, z + r_max; θ + z, û by TBL; clamp; θ − û; clamp; store.
  const auto step = [&]<int G, int S>(std::size_t b, const int8x16_t (&z)[G], int8x16_t (&t)[2][G],
                                      std::integral_constant<int, S>) __attribute__((always_inline)) {
    if constexpr (S == 0) {
      for (int q = 0; q < G; ++q) t[0][q] = vld1q_s8(theta + b + 16 * q);
      for (int q = 0; q < G; ++q) t[1][q] = vaddq_s8(z[q], zg.r8);
    } else if constexpr (S == 1) {
      for (int q = 0; q < G; ++q) t[0][q] = vqaddq_s8(t[0][q], z[q]);
      for (int q = 0; q < G; ++q) t[1][q] = vqtbl4q_s8(u_hat, vreinterpretq_u8_s8(t[1][q]));
    } else if constexpr (S == 2 || S == 4) {
      clamp_low(t[0]);
    } else if constexpr (S == 3) {
      for (int q = 0; q < G; ++q) t[0][q] = vqsubq_s8(t[0][q], t[1][q]);
    } else {
      for (int q = 0; q < G; ++q) vst1q_s8(theta + b + 16 * q, t[0][q]);
    }
  };
  const std::size_t i = pipelined(n, first, zg, step);
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

// z of [first, first + n) into out.
ZT_AS_WRITTEN void fill_span(const PerturbS8Params& p, std::uint32_t first, std::size_t n, std::int8_t* out,
                             const ZGen& zg) {
  const auto step = [&]<int G, int S>(std::size_t b, const int8x16_t (&z)[G], int8x16_t (&)[2][G],
                                      std::integral_constant<int, S>) __attribute__((always_inline)) {
    if constexpr (S == 0)
      for (int q = 0; q < G; ++q) vst1q_s8(out + b + 16 * q, z[q]);
  };
  const std::size_t i = pipelined(n, first, zg, step);
  if (i < n) perturbation_s8(p, first + static_cast<std::uint32_t>(i), n - i, out + i);
}

}  // namespace

void perturb_s8_neon(std::int8_t* theta, std::size_t n, std::uint32_t first, const PerturbS8Params& p, int k) {
  if (!lanes_ok(p)) return perturb_s8_ref(theta, n, first, p, k);
  const ZGen zg(p);
  // |z| ≥ 1 wherever z ≠ 0, so |k| beyond 255 saturates exactly like 255 does.
  const auto kc = static_cast<std::int16_t>(std::clamp(k, -255, 255));
  Chunks::for_each(n, [&](std::size_t b, std::size_t len) {
    const std::uint32_t j = first + static_cast<std::uint32_t>(b);
    if (kc == 1) return probe_span<1>(theta + b, len, j, p, zg);
    if (kc == -2) return probe_span<-2>(theta + b, len, j, p, zg);
    perturb_span(theta + b, len, j, p, zg, kc);
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
    fill_span(p, first + static_cast<std::uint32_t>(b), len, z + b, zg);
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
