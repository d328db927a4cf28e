// NEON Gaussian perturbation: the definition of perturb_internal.hpp written with intrinsics,
// one 32-element block (16 Box–Muller pairs = 4 q registers of counters) per step, the four
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

// pair_hash of perturb_internal.hpp.
inline U4 hash(U4 x, std::uint32_t k0, std::uint32_t k1) {
  x = veorq_u32(x, vdupq_n_u32(k0));
  x = veorq_u32(x, vshrq_n_u32(x, 17));
  x = vmulq_n_u32(x, 0xed5ad4bbU);
  x = veorq_u32(x, vshrq_n_u32(x, 11));
  x = veorq_u32(x, vdupq_n_u32(k1));
  x = vmulq_n_u32(x, 0xac4c1b51U);
  x = veorq_u32(x, vshrq_n_u32(x, 15));
  x = vmulq_n_u32(x, 0x31848babU);
  x = veorq_u32(x, vshrq_n_u32(x, 14));
  return x;
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

// sqrt(−2 ln u1) from the 24 hash bits a24 (neg2_log_from_bits + radius_from_bits).
inline F4 radius(U4 a24) {
  const F4 fj = to_f(vsubq_u32(vdupq_n_u32(0x01000000U), a24));
  const U4 ix = vsubq_u32(as_u(fj), vdupq_n_u32(0x3f3504f3U));
  const F4 e = vcvtq_f32_s32(vsubq_s32(vshrq_n_s32(vreinterpretq_s32_u32(ix), 23), vdupq_n_s32(24)));
  const F4 m = as_f(vaddq_u32(vandq_u32(ix, vdupq_n_u32(0x007fffffU)), vdupq_n_u32(0x3f3504f3U)));
  const F4 fm = vsubq_f32(m, f(1.0f));
  const F4 s = div(fm, vaddq_f32(f(2.0f), fm));
  const F4 z = vmulq_f32(s, s);
  F4 q = vmulq_f32(z, f(1.11111112e-1f));
  q = vmulq_f32(z, vaddq_f32(f(1.42857149e-1f), q));
  q = vmulq_f32(z, vaddq_f32(f(2.00000003e-1f), q));
  q = vaddq_f32(f(3.33333343e-1f), q);
  const F4 half_ln_m = vaddq_f32(s, vmulq_f32(vmulq_f32(s, z), q));
  const F4 w = vaddq_f32(vmulq_f32(e, f(-1.38629436e+0f)), vmulq_f32(half_ln_m, f(-4.0f)));
  return sqrt(w);
}

// (cos φ, sin φ) from the 24 hash bits b24 (cossin_from_bits).
inline void cossin(U4 b24, F4& cos_out, F4& sin_out) {
  const U4 qr = vaddq_u32(b24, vdupq_n_u32(0x00200000U));
  const U4 t = vsubq_u32(b24, vandq_u32(qr, vdupq_n_u32(0xffc00000U)));
  const F4 x = vmulq_f32(to_f(t), f(3.74507028e-7f));
  const F4 z = vmulq_f32(x, x);
  F4 ps = vmulq_f32(z, f(-1.9515295891e-4f));
  ps = vmulq_f32(z, vaddq_f32(f(8.3321608736e-3f), ps));
  ps = vaddq_f32(f(-1.6666654611e-1f), ps);
  const F4 s = vaddq_f32(x, vmulq_f32(vmulq_f32(x, z), ps));
  F4 pc = vmulq_f32(z, f(2.443315711809948e-5f));
  pc = vmulq_f32(z, vaddq_f32(f(-1.388731625493765e-3f), pc));
  pc = vaddq_f32(f(4.166664568298827e-2f), pc);
  const F4 c = vaddq_f32(vsubq_f32(f(1.0f), vmulq_f32(f(0.5f), z)), vmulq_f32(vmulq_f32(z, z), pc));
  const U4 q1 = vshlq_n_u32(qr, 9);
  const U4 q2 = vshlq_n_u32(qr, 8);
  const U4 swap = vreinterpretq_u32_s32(vshrq_n_s32(vreinterpretq_s32_u32(q1), 31));
  const U4 sign = vdupq_n_u32(0x80000000U);
  const U4 cos_b = vbslq_u32(swap, as_u(s), as_u(c));
  const U4 sin_b = vbslq_u32(swap, as_u(c), as_u(s));
  cos_out = as_f(veorq_u32(cos_b, vandq_u32(veorq_u32(q1, q2), sign)));
  sin_out = as_f(veorq_u32(sin_b, vandq_u32(q2, sign)));
}

struct NeonGen {
  using Scale = F4;
  static Scale splat(float s) { return vdupq_n_f32(s); }
  static constexpr std::uint64_t kStep = 1;

  template <bool kFill>
  static void block(float* out, const Keys& k, std::uint32_t c0, Scale scale) {
    static constexpr std::uint32_t kIota[4] = {0, 1, 2, 3};
    const U4 iota = vld1q_u32(kIota);
    F4 z0[kV], z1[kV];
    for (int v = 0; v < kV; ++v) {
      const U4 c = vaddq_u32(vdupq_n_u32(c0 + 4 * static_cast<std::uint32_t>(v)), iota);
      const F4 r = radius(vshrq_n_u32(hash(c, k.a0, k.a1), 8));
      F4 cs, sn;
      cossin(vshrq_n_u32(hash(c, k.b0, k.b1), 8), cs, sn);
      z0[v] = vmulq_f32(r, cs);
      z1[v] = vmulq_f32(r, sn);
    }
    for (int v = 0; v < kV; ++v) {
      float* lo = out + 4 * v;
      float* hi = out + kPairsPerBlock + 4 * v;
      if constexpr (kFill) {
        vst1q_f32(lo, z0[v]);
        vst1q_f32(hi, z1[v]);
      } else {
        vst1q_f32(lo, vaddq_f32(vld1q_f32(lo), vmulq_f32(scale, z0[v])));
        vst1q_f32(hi, vaddq_f32(vld1q_f32(hi), vmulq_f32(scale, z1[v])));
      }
    }
  }

  template <bool kFill>
  static void step(float* out, const Keys& k, std::uint32_t c0, Scale scale) {
    block<kFill>(out, k, c0, scale);
  }
};

using NeonDriver = Driver<NeonGen>;

}  // namespace

void perturb_gaussian_f32_neon(float* theta, std::size_t n, std::uint64_t seed,
                               std::uint64_t stream, std::uint64_t offset, float scale) {
  NeonDriver::run<false>(theta, n, seed, stream, offset, scale);
}

void fill_gaussian_f32_neon(float* out, std::size_t n, std::uint64_t seed, std::uint64_t stream,
                            std::uint64_t offset) {
  NeonDriver::run<true>(out, n, seed, stream, offset, 0.0f);
}

}  // namespace zt::kernels
