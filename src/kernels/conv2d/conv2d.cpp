// 2-D convolution drivers and the portable path. Two algorithms, chosen by shape only (never by
// batch size, thread count or ISA):
//   direct  (small channel counts, rows at least half a vector wide — the LeNet-5 layers):
//     each sample is copied into a zero-padded plane, then for a block of output channels
//     held in registers and each output row, acc[o][x..] += w[o,c,ky,kx] · in[c, y+ky, x+kx..]
//     with GCC vector extensions along x (16 lanes on AVX-512, 8 on AVX, 4 on NEON/generic).
//     The register tiles are pluggable (conv2d_internal.hpp): conv2d_neon.cpp brings its own.
//     dx is the same kernel run on zero-padded dy with the flipped, transposed weights;
//     dW and db are accumulated lane-wise in vector partials and reduced horizontally once.
//   im2col + the path's GEMM (everything else: 1x1 without padding, very narrow rows,
//     pad ≥ k, large dW): y_b = W · col_b, dW += dy_b · col_bᵀ, dx_b = col2im(Wᵀ · dy_b).
// Every output element of the forward pass and of dx sees the same operations in the same
// order (bias, then c, ky, kx ascending) whatever the batch or its split, so a sample's result
// does not depend on which call or thread computes it. dW/db: the batch is split into fixed
// slots (slot s owns samples s, s+S, … with S = min(B, kSlots), or kBwdSlots on the direct
// path), each with its own partials, summed in slot order: bit-identical for any thread count,
// but not between one batch-32 call and eight batch-4 calls. Inside an OpenMP parallel region
// (any level) the kernels run serially on the caller's thread.
//
// Layout: conv2d_direct.cpp and conv2d_im2col.cpp hold the two algorithms, conv2d_driver.hpp
// their shared helpers; this file chooses between them and holds the portable register tiles.
#include <algorithm>
#include <cstddef>

#include "conv2d_driver.hpp"
#include "../conv2d_shape.hpp"
#include "../select_isa.hpp"
#include "zotrain/kernels/conv2d.hpp"
#include "zotrain/kernels/gemm.hpp"

namespace zt::kernels {
namespace {

using namespace conv2d_detail;

template <int OB, int NV, int R, int K>
void fwd_tile(const FwdArgs& a) {
  const int k = K > 0 ? K : a.k;
  const ptrdiff_t kk = static_cast<ptrdiff_t>(k) * k, y_os = static_cast<ptrdiff_t>(a.oh) * a.ow;
  const ptrdiff_t row = a.in_row;
  const int width = std::min(NV * kLanes, a.ow - a.x0);
  const float* __restrict w = a.w;
  for (int yy = a.y0; yy < a.y1; yy += R) {
    VecF acc[OB][R][NV];
#pragma GCC unroll 16
    for (int o = 0; o < OB; ++o) {
      const VecF b = a.bias != nullptr ? broadcast(a.bias[o]) : VecF{};
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int n = 0; n < NV; ++n) acc[o][r][n] = b;
    }
    const float* xrow = a.in + yy * row + a.x0;
    for (int c = 0; c < a.cin; ++c) {
      const float* xc = xrow + c * a.in_plane;
      const float* wc = w + c * kk * OB;
      for (int ky = 0; ky < k; ++ky) {
        const float* xr = xc + ky * row;
        const float* wr = wc + ky * k * OB;
#pragma GCC unroll 8
        for (int kx = 0; kx < k; ++kx) {
          VecF v[R][NV];
#pragma GCC unroll 4
          for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
            for (int n = 0; n < NV; ++n) v[r][n] = loadu(xr + r * row + kx + n * kLanes);
#pragma GCC unroll 16
          for (int o = 0; o < OB; ++o) {
            const VecF wv = broadcast(wr[kx * OB + o]);
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
              for (int n = 0; n < NV; ++n) acc[o][r][n] += wv * v[r][n];
          }
        }
      }
    }
#pragma GCC unroll 16
    for (int o = 0; o < OB; ++o)
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        float* yr = a.y + o * y_os + static_cast<ptrdiff_t>(yy + r) * a.ow + a.x0;
#pragma GCC unroll 4
        for (int n = 0; n < NV; ++n) store_n(yr + n * kLanes, acc[o][r][n], std::min(kLanes, width - n * kLanes));
      }
  }
}
template <int OB, int KB>
void dw_tile(const DwArgs& a) {
  VecF acc[OB][KB];
#pragma GCC unroll 8
  for (int o = 0; o < OB; ++o)
#pragma GCC unroll 8
    for (int j = 0; j < KB; ++j)
      acc[o][j] = a.first ? VecF{} : loadu(a.dwv + o * a.dwv_os + j * kLanes);
  for (int smp = 0; smp < a.ns; ++smp)
  for (int yy = 0; yy < a.oh; ++yy) {
    const float* xr = a.x + smp * a.x_ss + static_cast<ptrdiff_t>(yy) * a.x_row;
    const float* gr = a.g + smp * a.g_ss + static_cast<ptrdiff_t>(yy) * a.g_row;
    for (int n = 0; n < a.nv; ++n) {
      VecF g[OB];
#pragma GCC unroll 8
      for (int o = 0; o < OB; ++o) g[o] = loadu(gr + o * a.g_plane + n * kLanes);
#pragma GCC unroll 8
      for (int j = 0; j < KB; ++j) {
        VecF v = loadu(xr + n * kLanes + j);
        pin(v);
#pragma GCC unroll 8
        for (int o = 0; o < OB; ++o) acc[o][j] += g[o] * v;
      }
    }
  }
#pragma GCC unroll 8
  for (int o = 0; o < OB; ++o)
#pragma GCC unroll 8
    for (int j = 0; j < KB; ++j) storeu(a.dwv + o * a.dwv_os + j * kLanes, acc[o][j]);
}

// The portable tiles as a tile set (conv2d_internal.hpp).
struct PortableTiles {
  template <int OB, int NV, int R, int K>
  static void fwd(const FwdArgs& a) {
    fwd_tile<OB, NV, R, K>(a);
  }
  template <int OB, int KB>
  static void dw(const DwArgs& a) {
    dw_tile<OB, KB>(a);
  }
};
constexpr Tiles kPortableTiles = tiles_of<PortableTiles>(&gemm_f32_portable);

}  // namespace

namespace conv2d_detail {
int lanes() { return kLanes; }
}  // namespace conv2d_detail

std::size_t conv2d_scratch_floats(const Conv2dShape& s) {
  detail::check_conv2d_shape(s);
  if (slots_of(s) == 0) return 0;
  const ptrdiff_t gemm = gemm_scratch(s);
  const ptrdiff_t fwd = forward_uses_direct(s) ? direct_forward_scratch(s) : gemm;
  const ptrdiff_t bwd = backward_uses_direct(s) ? direct_backward_scratch(s) : gemm;
  return static_cast<std::size_t>(std::max(fwd, bwd));
}

namespace conv2d_detail {

void forward(const Tiles& tiles, const Conv2dShape& s, const float* x, const float* w,
             const float* bias, float* y, float* scratch) {
  detail::check_conv2d_shape(s);
  if (s.batch == 0) return;
  if (forward_uses_direct(s))
    direct_forward(tiles, s, x, w, bias, y, scratch);
  else
    gemm_forward(tiles, s, x, w, bias, y, scratch);
}

void backward(const Tiles& tiles, const Conv2dShape& s, const float* x, const float* w,
              const float* dy, float* dx, float* dw, float* db, float* scratch) {
  detail::check_conv2d_shape(s);
  if (s.batch == 0) return;
  if (backward_uses_direct(s))
    direct_backward(tiles, s, x, w, dy, dx, dw, db, scratch);
  else
    gemm_backward(tiles, s, x, w, dy, dx, dw, db, scratch);
}

}  // namespace conv2d_detail

void conv2d_forward_f32_portable(const Conv2dShape& s, const float* x, const float* w,
                                 const float* bias, float* y, float* scratch) {
  conv2d_detail::forward(kPortableTiles, s, x, w, bias, y, scratch);
}

void conv2d_backward_f32_portable(const Conv2dShape& s, const float* x, const float* w,
                                  const float* dy, float* dx, float* dw, float* db,
                                  float* scratch) {
  conv2d_detail::backward(kPortableTiles, s, x, w, dy, dx, dw, db, scratch);
}

ZT_DEFINE_SELECT(Conv2dForwardF32Fn, conv2d_forward_f32)
ZT_DEFINE_SELECT(Conv2dBackwardF32Fn, conv2d_backward_f32)

}  // namespace zt::kernels
