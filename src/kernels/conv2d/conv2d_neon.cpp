// NEON 2-D convolution: the drivers of conv2d.cpp (same algorithm choice, layouts, scratch and
// summation order) with register tiles and GEMM written with intrinsics:
//   forward / dx tile: OB output channels × R rows × NV q registers of an output row; per tap,
//     the input vectors are loaded once and each channel's weight is multiplied in by scalar
//     (aarch64 FMLA by element; armv7 VFMA with a load-and-duplicate of the weight);
//   dW tile: OB output channels × KB kernel columns of lane-wise partials, one fused
//     multiply-add of a dy vector by a shifted x vector each;
//   im2col path: gemm_f32_neon.
// Products are fused multiply-adds (vfmaq_f32; armv7 gets VFMA from -mfpu=neon-vfpv4), so
// results differ from the portable path only in rounding, within the header's tolerance.
#include <arm_neon.h>

#include <algorithm>
#include <cstddef>

#include "conv2d_internal.hpp"
#include "zotrain/kernels/conv2d.hpp"
#include "zotrain/kernels/gemm.hpp"

namespace zt::kernels {
namespace {

using std::ptrdiff_t;
using namespace conv2d_detail;
using F4 = float32x4_t;

static_assert(kLanes == 4, "the NEON tiles use the 4-lane layout of the ARM drivers");

// acc + a·b.
inline F4 madd(F4 acc, F4 a, F4 b) {
#if defined(__aarch64__) || defined(__ARM_FEATURE_FMA)
  return vfmaq_f32(acc, a, b);
#else
  return vmlaq_f32(acc, a, b);
#endif
}

// acc + a·(*w).
inline F4 madd_scalar(F4 acc, F4 a, const float* w) {
#if defined(__aarch64__)
  return vfmaq_n_f32(acc, a, *w);
#else
  return madd(acc, a, vld1q_dup_f32(w));
#endif
}

// Stores the first n (1 ≤ n ≤ 4) lanes of v.
inline void store_n(float* p, F4 v, int n) {
  switch (n) {
    case 4: vst1q_f32(p, v); break;
    case 3: vst1_f32(p, vget_low_f32(v)); vst1q_lane_f32(p + 2, v, 2); break;
    case 2: vst1_f32(p, vget_low_f32(v)); break;
    default: vst1q_lane_f32(p, v, 0); break;
  }
}

struct NeonTiles {
  template <int OB, int NV, int R, int K>
  static void fwd(const FwdArgs& a) {
    const int k = K > 0 ? K : a.k;
    const ptrdiff_t kk = static_cast<ptrdiff_t>(k) * k, y_os = static_cast<ptrdiff_t>(a.oh) * a.ow;
    const ptrdiff_t row = a.in_row;
    const int width = std::min(NV * 4, a.ow - a.x0);
    for (int yy = a.y0; yy < a.y1; yy += R) {
      F4 acc[OB][R][NV];
      #pragma GCC unroll 16
      for (int o = 0; o < OB; ++o) {
        const F4 b = vdupq_n_f32(a.bias != nullptr ? a.bias[o] : 0.0f);
        #pragma GCC unroll 16
        for (int r = 0; r < R; ++r)
          #pragma GCC unroll 16
          for (int n = 0; n < NV; ++n) acc[o][r][n] = b;
      }
      const float* xrow = a.in + yy * row + a.x0;
      for (int c = 0; c < a.cin; ++c) {
        const float* xc = xrow + c * a.in_plane;
        const float* wc = a.w + c * kk * OB;
        for (int ky = 0; ky < k; ++ky) {
          const float* xr = xc + ky * row;
          const float* wr = wc + ky * k * OB;
          #pragma GCC unroll 8
          for (int kx = 0; kx < k; ++kx) {
            F4 v[R][NV];
            #pragma GCC unroll 16
            for (int r = 0; r < R; ++r)
              #pragma GCC unroll 16
              for (int n = 0; n < NV; ++n) v[r][n] = vld1q_f32(xr + r * row + kx + n * 4);
            #pragma GCC unroll 16
            for (int o = 0; o < OB; ++o)
              #pragma GCC unroll 16
              for (int r = 0; r < R; ++r)
                #pragma GCC unroll 16
                for (int n = 0; n < NV; ++n)
                  acc[o][r][n] = madd_scalar(acc[o][r][n], v[r][n], wr + kx * OB + o);
          }
        }
      }
      #pragma GCC unroll 16
      for (int o = 0; o < OB; ++o)
        #pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
          float* yr = a.y + o * y_os + static_cast<ptrdiff_t>(yy + r) * a.ow + a.x0;
          #pragma GCC unroll 16
          for (int n = 0; n < NV; ++n) store_n(yr + n * 4, acc[o][r][n], std::min(4, width - n * 4));
        }
    }
  }

  template <int OB, int KB>
  static void dw(const DwArgs& a) {
    F4 acc[OB][KB];
    #pragma GCC unroll 16
    for (int o = 0; o < OB; ++o)
      #pragma GCC unroll 16
      for (int j = 0; j < KB; ++j)
        acc[o][j] = a.first ? vdupq_n_f32(0.0f) : vld1q_f32(a.dwv + o * a.dwv_os + j * 4);
    for (int smp = 0; smp < a.ns; ++smp)
      for (int yy = 0; yy < a.oh; ++yy) {
        const float* xr = a.x + smp * a.x_ss + static_cast<ptrdiff_t>(yy) * a.x_row;
        const float* gr = a.g + smp * a.g_ss + static_cast<ptrdiff_t>(yy) * a.g_row;
        for (int n = 0; n < a.nv; ++n) {
          F4 g[OB];
          #pragma GCC unroll 16
          for (int o = 0; o < OB; ++o) g[o] = vld1q_f32(gr + o * a.g_plane + n * 4);
          #pragma GCC unroll 16
          for (int j = 0; j < KB; ++j) {
            const F4 v = vld1q_f32(xr + n * 4 + j);
            #pragma GCC unroll 16
            for (int o = 0; o < OB; ++o) acc[o][j] = madd(acc[o][j], g[o], v);
          }
        }
      }
    #pragma GCC unroll 16
    for (int o = 0; o < OB; ++o)
      #pragma GCC unroll 16
      for (int j = 0; j < KB; ++j) vst1q_f32(a.dwv + o * a.dwv_os + j * 4, acc[o][j]);
  }
};

constexpr Tiles kNeonTiles = tiles_of<NeonTiles>(&gemm_f32_neon);

}  // namespace

void conv2d_forward_f32_neon(const Conv2dShape& s, const float* x, const float* w,
                             const float* bias, float* y, float* scratch) {
  conv2d_detail::forward(kNeonTiles, s, x, w, bias, y, scratch);
}

void conv2d_backward_f32_neon(const Conv2dShape& s, const float* x, const float* w,
                              const float* dy, float* dx, float* dw, float* db, float* scratch) {
  conv2d_detail::backward(kNeonTiles, s, x, w, dy, dx, dw, db, scratch);
}

}  // namespace zt::kernels
