// NEON GEMM: the blocked driver of gemm_internal.hpp with an intrinsics micro-kernel.
//   aarch64: 8 × 8 tile, 16 accumulators; per k step two A vectors and two B vectors are loaded
//            and each accumulator takes one fused multiply-add by an A lane (vfmaq_laneq_f32).
//   armv7:   4 × 8 tile, 8 accumulators (16 q registers); VMLA by scalar (vmlaq_lane_f32: the
//            product is rounded before the add — armv7 has no fused by-lane form).
// Each C element is a k-ordered multiply-add chain, then one add to C when accumulating.
// The packed A panel is zero past mr rows, so the kernel always computes the whole tile and
// stores only its mr × nr corner.
#include <arm_neon.h>

#include <cstddef>
#include <utility>

#include "gemm_internal.hpp"
#include "zotrain/kernels/gemm.hpp"

namespace zt::kernels {
namespace {

// Stores the mr × nr corner of a kMr × 8 accumulator tile: C = (load_c ? C : 0) + acc.
template <int kMr>
inline void store_tile(const float32x4_t (&acc)[kMr][2], float* c, int ldc, int mr, int nr,
                       bool load_c) {
  if (nr == 8) {
    for (int i = 0; i < mr; ++i) {
      float* cr = c + static_cast<std::ptrdiff_t>(i) * ldc;
      float32x4_t lo = acc[i][0], hi = acc[i][1];
      if (load_c) {
        lo = vaddq_f32(vld1q_f32(cr), lo);
        hi = vaddq_f32(vld1q_f32(cr + 4), hi);
      }
      vst1q_f32(cr, lo);
      vst1q_f32(cr + 4, hi);
    }
    return;
  }
  float tmp[8];
  for (int i = 0; i < mr; ++i) {
    vst1q_f32(tmp, acc[i][0]);
    vst1q_f32(tmp + 4, acc[i][1]);
    float* cr = c + static_cast<std::ptrdiff_t>(i) * ldc;
    if (load_c) {
      for (int j = 0; j < nr; ++j) cr[j] = cr[j] + tmp[j];
    } else {
      for (int j = 0; j < nr; ++j) cr[j] = tmp[j];
    }
  }
}

#if defined(__aarch64__)

struct NeonTile {
  static constexpr int kMr = 8, kNr = 8;

  // acc[I][·] += a[I] · b[·] for the rows I of the pack (a0 holds rows 0–3, a1 rows 4–7).
  template <int... I>
  static inline void step(float32x4_t (&acc)[kMr][2], float32x4_t a0, float32x4_t a1,
                          float32x4_t b0, float32x4_t b1, std::integer_sequence<int, I...>) {
    ((acc[I][0] = vfmaq_laneq_f32(acc[I][0], b0, I < 4 ? a0 : a1, I % 4),
      acc[I][1] = vfmaq_laneq_f32(acc[I][1], b1, I < 4 ? a0 : a1, I % 4)),
     ...);
  }

  static void micro(int kc, const float* ap, const float* bp, float* c, int ldc, int mr, int nr,
                    bool load_c) {
    float32x4_t acc[kMr][2];
    for (auto& row : acc) row[0] = row[1] = vdupq_n_f32(0.0f);
    for (int p = 0; p < kc; ++p) {
      const float32x4_t a0 = vld1q_f32(ap), a1 = vld1q_f32(ap + 4);
      const float32x4_t b0 = vld1q_f32(bp), b1 = vld1q_f32(bp + 4);
      step(acc, a0, a1, b0, b1, std::make_integer_sequence<int, kMr>{});
      ap += kMr;
      bp += kNr;
    }
    store_tile<kMr>(acc, c, ldc, mr, nr, load_c);
  }
};

#else  // armv7 NEON

struct NeonTile {
  static constexpr int kMr = 4, kNr = 8;

  static void micro(int kc, const float* ap, const float* bp, float* c, int ldc, int mr, int nr,
                    bool load_c) {
    float32x4_t acc[kMr][2];
    for (auto& row : acc) row[0] = row[1] = vdupq_n_f32(0.0f);
    for (int p = 0; p < kc; ++p) {
      const float32x4_t a = vld1q_f32(ap);
      const float32x2_t a01 = vget_low_f32(a), a23 = vget_high_f32(a);
      const float32x4_t b0 = vld1q_f32(bp), b1 = vld1q_f32(bp + 4);
      acc[0][0] = vmlaq_lane_f32(acc[0][0], b0, a01, 0);
      acc[0][1] = vmlaq_lane_f32(acc[0][1], b1, a01, 0);
      acc[1][0] = vmlaq_lane_f32(acc[1][0], b0, a01, 1);
      acc[1][1] = vmlaq_lane_f32(acc[1][1], b1, a01, 1);
      acc[2][0] = vmlaq_lane_f32(acc[2][0], b0, a23, 0);
      acc[2][1] = vmlaq_lane_f32(acc[2][1], b1, a23, 0);
      acc[3][0] = vmlaq_lane_f32(acc[3][0], b0, a23, 1);
      acc[3][1] = vmlaq_lane_f32(acc[3][1], b1, a23, 1);
      ap += kMr;
      bp += kNr;
    }
    store_tile<kMr>(acc, c, ldc, mr, nr, load_c);
  }
};

#endif

}  // namespace

void gemm_f32_neon(bool trans_a, bool trans_b, int m, int n, int k, const float* a, int lda,
                   const float* b, int ldb, float* c, int ldc, bool accumulate) {
  gemm_detail::gemm_blocked<NeonTile>(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc,
                                      accumulate);
}

}  // namespace zt::kernels
