// Internal to the NEON int8 micro-kernels: the tile loops shared by gemm_s8_neon.cpp (vmull_s8 +
// vpadalq_s16, armv7 and ARMv8.0) and gemm_s8_neon_dot.cpp (SDOT), which differ only in the
// product policy P. Included only by *_neon*.cpp files (it includes <arm_neon.h>).
//
// A policy multiplies 16 int8 values of B (4 lanes × a quad) by 16 of A (a broadcast word, or
// the matching e bytes) into P::kRegs4 int32x4 accumulators per 4 lanes:
//   step4(acc, b, a)            acc += the 4-term products of each lane, in whatever partial
//                               form P keeps
//   step4x2(acc, b, a, b2, a2)  the same for two quads at once (the micro-kernel takes the
//                               quads of its reduction in pairs)
//   finish4(acc)                the 4 lane sums
//   kAsm2x1, quads_2x1          whether P has its own loop over the main quads of the 2 × 1
//                               tile (gemm_s8_neon.cpp), which starts the accumulators from zero
//                               and, without a tail quad, also finishes the lane sums
// B bytes are stored as their int8 values (b_bias 0), so the micro-kernel results need no
// correction (MicroArgs::corr is not read).
// The sums stay exact under the same kMaxTerms bound as the other kernels; a policy that adds
// two products in one int16 (Mull::step4x2) needs B in [−127, 127] (gemm_s8_neon.cpp).
#pragma once

#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "gemm_s8_internal.hpp"

namespace zt::kernels::s8::neon {

// 16 bytes of a B or x operand (stored as int8 values) as their int8 values.
inline int8x16_t load_b(const std::uint8_t* p) { return vld1q_s8(reinterpret_cast<const std::int8_t*>(p)); }
// The 4 bytes at p (any alignment) repeated over 16 bytes.
inline int8x16_t broadcast_word(const std::int8_t* p) {
  std::int32_t w;
  std::memcpy(&w, p, sizeof w);
  return vreinterpretq_s8_s32(vdupq_n_s32(w));
}
// [x0 + x1, x2 + x3, y0 + y1, y2 + y3].
inline int32x4_t pair_sums(int32x4_t x, int32x4_t y) {
#if defined(__aarch64__)
  return vpaddq_s32(x, y);
#else
  return vcombine_s32(vpadd_s32(vget_low_s32(x), vget_high_s32(x)), vpadd_s32(vget_low_s32(y), vget_high_s32(y)));
#endif
}

// The micro-kernels of policy P, for Tables (gemm_s8_tables.hpp).
template <class P>
struct Kernels {
  static constexpr int R = P::kRegs4;  // accumulators per 4 lanes
  static constexpr int max_mr(bool rows_a, int nv) { return P::max_mr(rows_a, nv); }
  static constexpr std::uint8_t kBBias = 0;  // B and x as their int8 values

  // ---- micro-kernel (see MicroArgs) -------------------------------------------------------
  template <bool kRows, int MR, int NV>
  static void micro(const MicroArgs& p) {
    int32x4_t acc[MR][NV][4 * R];
    const int nq_main = kRows && p.a_tail != nullptr ? p.nq - 1 : p.nq;
    const auto main_word = [&](int q, int m) {
      if constexpr (kRows)
        return p.a_rows[m] + q * p.a_step;
      else
        return p.a + q * p.a_step + 4 * m;
    };
    // Writes row m's finished lane sums out[4v + j] (lanes 16v + 4j ..): full vectors of a plain
    // store go straight out, the rest through the shared scalar store.
    const auto store_row = [&](int m, const int32x4_t* out) {
      if (p.runs == nullptr && NV * kLanes <= p.n_valid) {
        std::int32_t* c = p.c + m * p.ldc;
#pragma GCC unroll 16
        for (int i = 0; i < 4 * NV; ++i) {
          std::int32_t* ci = c + 4 * i;
          vst1q_s32(ci, p.accumulate ? vaddq_s32(vld1q_s32(ci), out[i]) : out[i]);
        }
      } else {
        std::int32_t t[(NV + 1) * kLanes];  // one vector of padding: store_tile_rows_padded
#pragma GCC unroll 16
        for (int i = 0; i < 4 * NV; ++i) vst1q_s32(t + 4 * i, out[i]);
        store_tile_rows_padded(p, m, 1, t, 0, NV * kLanes);
      }
    };
    int q = 0;
    if constexpr (MR == 2 && NV == 1 && P::kAsm2x1) {  // the policy's own loop over the main quads
      if (nq_main == p.nq) {  // no tail quad: the policy finishes the lane sums as well
        // Written by the asm (a memory clobber) and read as int32 words: a canvas store copies
        // its runs straight from here.
        alignas(16) std::int32_t fin[MR + 1][kLanes];  // a row of padding: store_tile_rows_padded
        P::template quads_2x1<true>(reinterpret_cast<int32x4_t*>(&fin[0][0]), main_word(0, 0), main_word(0, 1),
                                    p.a_step, p.b, p.b_off, p.b_step, nq_main);
        if (p.runs != nullptr || kLanes > p.n_valid) {
          store_tile_rows_padded(p, 0, MR, fin[0], kLanes, kLanes);
          return;
        }
        for (int m = 0; m < MR; ++m) {
          int32x4_t out[4];
#pragma GCC unroll 4
          for (int i = 0; i < 4; ++i) out[i] = vld1q_s32(fin[m] + 4 * i);
          store_row(m, out);  // full vectors: its plain store
        }
        return;
      }
      if (nq_main >= 1) {
        P::template quads_2x1<false>(&acc[0][0][0], main_word(0, 0), main_word(0, 1), p.a_step, p.b, p.b_off,
                                     p.b_step, nq_main);
        q = nq_main;
      }
    }
    if (q == 0)
#pragma GCC unroll 8
      for (int m = 0; m < MR; ++m)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v)
#pragma GCC unroll 16
          for (int j = 0; j < 4 * R; ++j) acc[m][v][j] = vdupq_n_s32(0);
    // One quad (A words a_of(m), B vectors at bq), or two (and a2_of, bq2).
    const auto step = [&](const std::uint8_t* bq, const auto& a_of) {
      int8x16_t a[MR];
#pragma GCC unroll 8
      for (int m = 0; m < MR; ++m) a[m] = broadcast_word(a_of(m));
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          const int8x16_t b = load_b(bq + v * p.b_vec + 16 * j);
#pragma GCC unroll 8
          for (int m = 0; m < MR; ++m) P::step4(&acc[m][v][j * R], b, a[m]);
        }
    };
    const auto step2 = [&](const std::uint8_t* bq, const auto& a_of, const std::uint8_t* bq2, const auto& a2_of) {
      int8x16_t a[MR], a2[MR];
#pragma GCC unroll 8
      for (int m = 0; m < MR; ++m) {
        a[m] = broadcast_word(a_of(m));
        a2[m] = broadcast_word(a2_of(m));
      }
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          const int8x16_t b = load_b(bq + v * p.b_vec + 16 * j);
          const int8x16_t b2 = load_b(bq2 + v * p.b_vec + 16 * j);
#pragma GCC unroll 8
          for (int m = 0; m < MR; ++m) P::step4x2(&acc[m][v][j * R], b, a[m], b2, a2[m]);
        }
    };
    const auto b_at = [&](int q) { return p.b + (p.b_off != nullptr ? p.b_off[q] : q * p.b_step); };
    // A word m of quad q (q < nq_main), or of the tail quad (q = nq_main < nq).
    const auto a_word = [&](int q, int m) -> const std::int8_t* {
      if constexpr (kRows)
        return q < nq_main ? p.a_rows[m] + q * p.a_step : p.a_tail + 4 * m;
      else
        return p.a + q * p.a_step + 4 * m;
    };
    for (; q + 2 <= nq_main; q += 2)
      step2(b_at(q), [&](int m) { return main_word(q, m); }, b_at(q + 1), [&](int m) { return main_word(q + 1, m); });
    if (q + 2 == p.nq)  // an odd main quad and the tail
      step2(b_at(q), [&](int m) { return a_word(q, m); }, b_at(q + 1), [&](int m) { return a_word(q + 1, m); });
    else if (q + 1 == p.nq)
      step(b_at(q), [&](int m) { return a_word(q, m); });
    // Lane sums.
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      int32x4_t out[NV * 4];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) out[4 * v + j] = P::finish4(&acc[m][v][j * R]);
      store_row(m, out);
    }
  }

  // ---- vector dot tile (see DotArgs) ---------------------------------------------------------
  // part gets Σ (x + 128)·e (the contract) as Σ x·e + 128·Σ e, both exact in int32 lanes.
  template <int OB, int TB>
  static void dot(const DotArgs& p) {
    for (int o = 0; o < OB; ++o) {
      const std::int8_t* e = p.e[o];
      for (int c = 0; c < 4; ++c) {  // lanes 4c .. 4c + 3
        int32x4_t acc[TB][R];
#pragma GCC unroll 4
        for (int t = 0; t < TB; ++t)
#pragma GCC unroll 2
          for (int j = 0; j < R; ++j) acc[t][j] = vdupq_n_s32(0);
        int32x4_t esum = vdupq_n_s32(0);
        for (int i = 0; i < p.steps; ++i) {
          const ptrdiff_t at = kVecBytes * static_cast<ptrdiff_t>(i) + 16 * c;
          const int8x16_t ev = vld1q_s8(e + at);
          esum = vpadalq_s16(esum, vpaddlq_s8(ev));
#pragma GCC unroll 4
          for (int t = 0; t < TB; ++t) P::step4(acc[t], load_b(p.x[t] + at), ev);
        }
        const int32x4_t bias = vshlq_n_s32(esum, 7);
#pragma GCC unroll 4
        for (int t = 0; t < TB; ++t) {
          std::int32_t* dst = p.part + (static_cast<ptrdiff_t>(o) * p.ld + t) * kLanes + 4 * c;
          vst1q_s32(dst, vaddq_s32(vld1q_s32(dst), vaddq_s32(P::finish4(acc[t]), bias)));
        }
      }
    }
  }
};

}  // namespace zt::kernels::s8::neon
