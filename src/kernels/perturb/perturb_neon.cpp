// NEON Gaussian perturbation: the definition of perturb_internal.hpp written with intrinsics,
// one 32-element block (16 Box–Muller pairs = 4 q registers of counters) at a time, the four
// vectors interleaved to hide latency. Every floating-point operation is the reference's, in the
// reference's order (products and sums as separate vmulq/vaddq — this file is compiled with
// -ffp-contract=off, since GCC's vmulq_f32 is a plain multiply it could otherwise fuse), so each
// lane is bit-identical to gaussian_ref. The one correctly rounded division and sqrt use
// vdivq/vsqrtq on aarch64; armv7 NEON has neither, so there they run on the lanes with scalar
// VFP instructions (IEEE too). armv7 NEON flushes subnormals to zero, which changes nothing:
// no operand or result of the transform is subnormal (|x| ≥ 3.7e-7 in sin/cos, s = 0 or
// |s| ≥ 2^-25 in the log). Ranges and threads: perturb_driver.hpp.
#include <arm_neon.h>

#include <cstdint>

#include "../issue_order.hpp"
#include "perturb_driver.hpp"
#include "perturb_internal.hpp"
#include "zotrain/kernels/perturb.hpp"

namespace zt::kernels {

using namespace perturb_detail;

namespace {

constexpr int kV = kPairsPerBlock / 4;  // q registers per block

using U4 = uint32x4_t;
using F4 = float32x4_t;

inline F4 f(float x) { return vdupq_n_f32(x); }
inline F4 as_f(U4 x) { return vreinterpretq_f32_u32(x); }
inline U4 as_u(F4 x) { return vreinterpretq_u32_f32(x); }
inline F4 to_f(U4 x) { return vcvtq_f32_s32(vreinterpretq_s32_u32(x)); }  // exact: |x| ≤ 2^24

// The helpers below work on M independent vectors at once (a block's kV = 4), one operation for
// all of them before the next: the A53 issues in order, and one vector's chain alone (FMUL
// latency 6 cycles, FDIV and FSQRT 17–18) stalls it on every step; interleaved chains keep the
// FP pipe busy (8 vectors spill registers and model no faster). Statement order within each
// chain is the reference's, so every lane keeps its bits.
constexpr int kN = kV;

#define ZT_EACH(i) _Pragma("GCC unroll 4") for (int i = 0; i < M; ++i)

// pair_hash of perturb_internal.hpp from its third step on: the first two (x ^= k0,
// x ^= x >> 17) are start_hash's, for a whole block at once.
template <int M>
[[gnu::always_inline]] inline void finish_hash(U4 (&x)[M], std::uint32_t k1) {
  const U4 vk1 = vdupq_n_u32(k1);
  ZT_EACH(i) x[i] = vmulq_n_u32(x[i], 0xed5ad4bbU);
  ZT_EACH(i) x[i] = veorq_u32(x[i], vshrq_n_u32(x[i], 11));
  ZT_EACH(i) x[i] = veorq_u32(x[i], vk1);
  ZT_EACH(i) x[i] = vmulq_n_u32(x[i], 0xac4c1b51U);
  ZT_EACH(i) x[i] = veorq_u32(x[i], vshrq_n_u32(x[i], 15));
  ZT_EACH(i) x[i] = vmulq_n_u32(x[i], 0x31848babU);
  ZT_EACH(i) x[i] = veorq_u32(x[i], vshrq_n_u32(x[i], 14));
  ZT_EACH(i) x[i] = vshrq_n_u32(x[i], 8);  // the 24 bits the transform uses
}

// The first two steps of pair_hash, x = c ^ k0 then x ^= x >> 17, for the counters c0 + j of a
// block: one XOR of j with the per-block constant pair_hash_block_base (perturb_internal.hpp).
// Exact for every counter; one XOR per vector and hash, where there were three and the
// counter's add.
template <int M>
[[gnu::always_inline]] inline void start_hash(U4 (&x)[M], std::uint32_t c0, std::uint32_t k0) {
  static_assert(4 * M <= kPairsPerBlock);
  ZT_DCHECK(c0 % kPairsPerBlock == 0);
  static constexpr std::uint32_t kLane[kPairsPerBlock] = {0, 1, 2,  3,  4,  5,  6,  7,
                                                          8, 9, 10, 11, 12, 13, 14, 15};
  const U4 base = vdupq_n_u32(pair_hash_block_base(c0, k0));
  ZT_EACH(i) x[i] = veorq_u32(base, vld1q_u32(kLane + 4 * i));
}

inline F4 div(F4 a, F4 b) {
#if defined(__aarch64__)
  return vdivq_f32(a, b);
#else
  float x[4], y[4];
  vst1q_f32(x, a);
  vst1q_f32(y, b);
  for (int i = 0; i < 4; ++i) x[i] = x[i] / y[i];
  return vld1q_f32(x);
#endif
}

inline F4 sqrt(F4 a) {
#if defined(__aarch64__)
  return vsqrtq_f32(a);
#else
  float x[4];
  vst1q_f32(x, a);
  for (float& v : x) v = __builtin_sqrtf(v);
  return vld1q_f32(x);
#endif
}

// The Box–Muller transform of M vectors of pairs from their 24-bit hashes a24 (radius) and b24
// (angle): z0 = r·cos φ, z1 = r·sin φ, with r = sqrt(−2 ln u1) as neg2_log_from_bits +
// radius_from_bits and (cos φ, sin φ) as cossin_from_bits. The radius and angle chains are
// independent; their steps alternate so that each hides the other's latency.
template <int M>
[[gnu::always_inline]] inline void box_muller(const U4 (&a24)[M], const U4 (&b24)[M], F4 (&z0)[M], F4 (&z1)[M]) {
  F4 e[M], s[M], z[M], q[M];  // radius
  U4 qr[M];
  F4 x[M], y[M], ps[M], pc[M];  // angle (y = x²)
  ZT_EACH(i) {
    const F4 fj = to_f(vsubq_u32(vdupq_n_u32(0x01000000U), a24[i]));
    const U4 ix = vsubq_u32(as_u(fj), vdupq_n_u32(0x3f3504f3U));
    e[i] = vcvtq_f32_s32(vsubq_s32(vshrq_n_s32(vreinterpretq_s32_u32(ix), 23), vdupq_n_s32(24)));
    s[i] = as_f(vaddq_u32(vandq_u32(ix, vdupq_n_u32(0x007fffffU)), vdupq_n_u32(0x3f3504f3U)));
  }
  ZT_EACH(i) {
    qr[i] = vaddq_u32(b24[i], vdupq_n_u32(0x00200000U));
    const U4 t = vsubq_u32(b24[i], vandq_u32(qr[i], vdupq_n_u32(0xffc00000U)));
    x[i] = vmulq_f32(to_f(t), f(3.74507028e-7f));
  }
  ZT_EACH(i) s[i] = vsubq_f32(s[i], f(1.0f));  // f = m − 1
  ZT_EACH(i) y[i] = vmulq_f32(x[i], x[i]);
  ZT_EACH(i) {
    s[i] = div(s[i], vaddq_f32(f(2.0f), s[i]));  // s = f / (2 + f)
    ps[i] = vmulq_f32(y[i], f(-1.9515295891e-4f));
    pc[i] = vmulq_f32(y[i], f(2.443315711809948e-5f));
  }
  ZT_EACH(i) {
    z[i] = vmulq_f32(s[i], s[i]);
    ps[i] = vmulq_f32(y[i], vaddq_f32(f(8.3321608736e-3f), ps[i]));
    pc[i] = vmulq_f32(y[i], vaddq_f32(f(-1.388731625493765e-3f), pc[i]));
  }
  ZT_EACH(i) {
    q[i] = vmulq_f32(z[i], f(1.11111112e-1f));
    ps[i] = vaddq_f32(f(-1.6666654611e-1f), ps[i]);
    pc[i] = vaddq_f32(f(4.166664568298827e-2f), pc[i]);
  }
  ZT_EACH(i) {
    q[i] = vmulq_f32(z[i], vaddq_f32(f(1.42857149e-1f), q[i]));
    ps[i] = vaddq_f32(x[i], vmulq_f32(vmulq_f32(x[i], y[i]), ps[i]));  // sin x
  }
  ZT_EACH(i) {
    q[i] = vmulq_f32(z[i], vaddq_f32(f(2.00000003e-1f), q[i]));
    pc[i] = vaddq_f32(vsubq_f32(f(1.0f), vmulq_f32(f(0.5f), y[i])),
                      vmulq_f32(vmulq_f32(y[i], y[i]), pc[i]));  // cos x
  }
  ZT_EACH(i) q[i] = vaddq_f32(f(3.33333343e-1f), q[i]);
  const U4 sign = vdupq_n_u32(0x80000000U);
  ZT_EACH(i) {
    q[i] = vaddq_f32(s[i], vmulq_f32(vmulq_f32(s[i], z[i]), q[i]));  // ½ ln m
    // Quadrant: swap and negate (cossin_from_bits); x, y reused for cos φ, sin φ.
    const U4 q1 = vshlq_n_u32(qr[i], 9);
    const U4 q2 = vshlq_n_u32(qr[i], 8);
    const U4 swap = vreinterpretq_u32_s32(vshrq_n_s32(vreinterpretq_s32_u32(q1), 31));
    const U4 cos_b = vbslq_u32(swap, as_u(ps[i]), as_u(pc[i]));
    const U4 sin_b = vbslq_u32(swap, as_u(pc[i]), as_u(ps[i]));
    x[i] = as_f(veorq_u32(cos_b, vandq_u32(veorq_u32(q1, q2), sign)));
    y[i] = as_f(veorq_u32(sin_b, vandq_u32(q2, sign)));
  }
  ZT_EACH(i) e[i] = vaddq_f32(vmulq_f32(e[i], f(-1.38629436e+0f)), vmulq_f32(q[i], f(-4.0f)));
  ZT_EACH(i) e[i] = sqrt(e[i]);  // r
  ZT_EACH(i) {
    z0[i] = vmulq_f32(e[i], x[i]);
    z1[i] = vmulq_f32(e[i], y[i]);
  }
}

struct NeonGen {
  using Scale = F4;
  static Scale splat(float s) { return vdupq_n_f32(s); }
  // Blocks per call of step(), one after another (the loop keeps the transform's constants
  // inside: ZT_PER_ITERATION): a call per block, its arguments and the callee's register saves,
  // cost about 0.5 cycles per weight on the A53 model. 16 divides a thread's group of blocks
  // (perturb_driver.hpp).
  static constexpr std::uint64_t kStep = 16;
  static_assert(kGroupBlocks % kStep == 0);

  // M q registers of pair counters from c0: one block (M = kV; start_hash takes one block).
  template <Pass P, int M>
  [[gnu::always_inline]] static void vectors(Dst out, const Keys& k, std::uint32_t c0, Scale scale,
                                             Scale prev) {
    U4 a[M], b[M];
    start_hash<M>(a, c0, k.a0);
    start_hash<M>(b, c0, k.b0);
    finish_hash<M>(a, k.a1);
    finish_hash<M>(b, k.b1);
    F4 z0[M], z1[M];
    box_muller<M>(a, b, z0, z1);
    const auto at = [&](int i) { return kBlock * (i / kV) + 4 * (i % kV); };
    if constexpr (P == Pass::kFill) {
      ZT_EACH(i) {
        vst1q_f32(out.x + at(i), z0[i]);
        vst1q_f32(out.x + at(i) + kPairsPerBlock, z1[i]);
      }
      return;
    }
    // θ read before anything is stored (θ and z's copy do not overlap, but the compiler cannot know),
    // the products formed together, each store well after what it stores was computed: the A53
    // holds a store until its data is ready, and a store right behind its FMUL costs the FMUL's
    // whole latency.
    F4 t0[M], t1[M];
    ZT_EACH(i) {
      t0[i] = vld1q_f32(out.x + at(i));
      t1[i] = vld1q_f32(out.x + at(i) + kPairsPerBlock);
    }
    if constexpr (P == Pass::kUpdateTee) {  // the old direction's update, before z' replaces it
      F4 y0[M], y1[M];
      ZT_EACH(i) {
        y0[i] = vld1q_f32(out.z + at(i));
        y1[i] = vld1q_f32(out.z + at(i) + kPairsPerBlock);
      }
      ZT_EACH(i) {
        y0[i] = vmulq_f32(prev, y0[i]);
        y1[i] = vmulq_f32(prev, y1[i]);
      }
      ZT_EACH(i) {
        t0[i] = vaddq_f32(t0[i], y0[i]);
        t1[i] = vaddq_f32(t1[i], y1[i]);
      }
    }
    F4 p0[M], p1[M];
    ZT_EACH(i) {
      p0[i] = vmulq_f32(scale, z0[i]);
      p1[i] = vmulq_f32(scale, z1[i]);
    }
    if constexpr (P == Pass::kTee || P == Pass::kUpdateTee) {
      ZT_EACH(i) {
        vst1q_f32(out.z + at(i), z0[i]);
        vst1q_f32(out.z + at(i) + kPairsPerBlock, z1[i]);
      }
    }
    ZT_EACH(i) {
      t0[i] = vaddq_f32(t0[i], p0[i]);
      t1[i] = vaddq_f32(t1[i], p1[i]);
    }
    ZT_EACH(i) {
      vst1q_f32(out.x + at(i), t0[i]);
      vst1q_f32(out.x + at(i) + kPairsPerBlock, t1[i]);
    }
  }

  template <Pass P>
  static void block(Dst out, const Keys& k, std::uint32_t c0, Scale scale, Scale prev) {
    vectors<P, kV>(out, k, c0, scale, prev);
  }

  template <Pass P>
  ZT_PER_ITERATION static void step(Dst out, const Keys& k, std::uint32_t c0, Scale scale,
                                    Scale prev) {
#pragma GCC unroll 1
    for (std::uint32_t j = 0; j < kStep; ++j)
      vectors<P, kN>(out + j * kBlock, k, c0 + j * kPairsPerBlock, scale, prev);
  }
};

#undef ZT_EACH

using NeonDriver = Driver<NeonGen>;

}  // namespace

ZT_PERTURB_F32_PATH(neon, NeonDriver)

}  // namespace zt::kernels
