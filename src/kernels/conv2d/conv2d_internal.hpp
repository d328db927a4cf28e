// Internals of the conv2d family. conv2d.cpp, conv2d_direct.cpp and conv2d_im2col.cpp hold the
// drivers (algorithm choice, padding, packing, im2col, slots and their fixed-order reductions;
// conv2d_driver.hpp) and conv2d.cpp the portable register tiles;
// the NEON path (conv2d_neon.cpp) runs the same drivers with its own tiles and GEMM, so the two
// paths share every layout, scratch size and summation order and differ only in the products.
// Also exposed for tests: which algorithm a shape takes.
#pragma once

#include <array>
#include <cstddef>
#include <utility>

#include "zotrain/kernels/conv2d.hpp"
#include "zotrain/kernels/gemm.hpp"

namespace zt::kernels::conv2d_detail {

// Forward: direct convolution vectorised along output rows (true) or im2col + GEMM (false).
bool forward_uses_direct(const Conv2dShape& s);
// Backward: direct dx / dw / db (true) or im2col + GEMM + col2im (false).
bool backward_uses_direct(const Conv2dShape& s);
// Vector width (floats) the portable path was compiled for.
int lanes();

// Vector width and register blocking of the direct path: up to kFwdOb output channels × kFwdNv
// vectors of one output row (× 2 rows when a row is one vector), at most kFwdAcc accumulators,
// in the forward/dx tile; kDwOb channels × up to kDwKb kernel columns in the dW tile.
#if defined(__AVX512F__)
inline constexpr int kLanes = 16, kFwdOb = 8, kFwdNv = 2, kFwdAcc = 16, kDwOb = 4;  // 32 zmm
#elif defined(__AVX__)
inline constexpr int kLanes = 8, kFwdOb = 4, kFwdNv = 2, kFwdAcc = 8, kDwOb = 2;  // 16 ymm
#elif defined(__aarch64__)
inline constexpr int kLanes = 4, kFwdOb = 4, kFwdNv = 4, kFwdAcc = 16, kDwOb = 4;  // 32 q regs
#else
inline constexpr int kLanes = 4, kFwdOb = 2, kFwdNv = 4, kFwdAcc = 8, kDwOb = 2;  // 16 q (armv7)
#endif
inline constexpr int kDwKb = 5;

// Forward tile: OB output channels × rows [y0, y1) (R at a time) × NV vectors of columns
// [x0, x0 + NV·lanes) ∩ [0, ow). in: padded input (cin channels, every row readable up to
// x0 + NV·lanes + k − 1); w: the block's packed weights [cin, k, k, OB]; y: output of the first
// channel of the block, [.., oh, ow]. y = bias + Σ_{c, ky, kx} w · in, accumulated in that order.
struct FwdArgs {
  const float* in;
  std::ptrdiff_t in_plane;
  int in_row, cin, k;
  const float* w;
  const float* bias;  // first channel of the block, or null
  float* y;
  int oh, ow, x0, y0, y1;
};

// dW tile: OB output channels × KB kernel columns [kx0, kx0 + KB) of kernel row ky, input
// channel c, accumulated lane-wise into dwv (vector partials, [O, C, k, k, lanes]):
// dwv[o][j][l] (+)= Σ_{sample, y, n} g[o][y][n·lanes + l] · x[y][n·lanes + l + j].
struct DwArgs {
  const float* x;  // padded x of the first sample at channel c, row ky, column kx0
  int x_row;
  const float* g;  // padded dy of the first sample at channel o0, first interior row and column
  std::ptrdiff_t g_plane;
  int g_row, oh, nv;
  int ns;                          // samples, one after the other
  std::ptrdiff_t x_ss, g_ss;       // sample strides of x and g
  float* dwv;                      // partial at (o0, c, ky, kx0)
  std::ptrdiff_t dwv_os;
  bool first;                      // start from zero instead of the stored partial
};

using FwdTileFn = void (*)(const FwdArgs&);
using DwTileFn = void (*)(const DwArgs&);

// Table sizes and indices: forward ((ob − 1)·kFwdNv + nv − 1)·2 + rows − 1 (entries with more
// than kFwdAcc accumulators are null); dW (ob − 1)·kDwKb + kb − 1.
inline constexpr int kFwdTable = kFwdOb * kFwdNv * 2;
inline constexpr int kDwTable = kDwOb * kDwKb;

// The products a path brings: forward/dx tiles for k = 3, 5 and any k, dW tiles, and the GEMM
// of the im2col path.
struct Tiles {
  const FwdTileFn* fwd_any;
  const FwdTileFn* fwd3;
  const FwdTileFn* fwd5;
  const DwTileFn* dw;
  GemmF32Fn gemm;
};

// Tile tables of a tile set T with members template <int OB, int NV, int R, int K> fwd(const
// FwdArgs&) (K = 0: any kernel size) and template <int OB, int KB> dw(const DwArgs&).
template <class T, int K, int J>
constexpr FwdTileFn fwd_entry() {
  constexpr int ob = J / (2 * kFwdNv) + 1, nv = J / 2 % kFwdNv + 1, r = J % 2 + 1;
  if constexpr (ob * nv * r <= kFwdAcc)
    return &T::template fwd<ob, nv, r, K>;
  else
    return nullptr;
}
template <class T, int K, std::size_t... I>
constexpr std::array<FwdTileFn, sizeof...(I)> fwd_table(std::index_sequence<I...>) {
  return {fwd_entry<T, K, static_cast<int>(I)>()...};
}
template <class T, std::size_t... I>
constexpr std::array<DwTileFn, sizeof...(I)> dw_table(std::index_sequence<I...>) {
  return {&T::template dw<static_cast<int>(I) / kDwKb + 1, static_cast<int>(I) % kDwKb + 1>...};
}
template <class T, int K>
inline constexpr auto kFwdTableOf = fwd_table<T, K>(std::make_index_sequence<kFwdTable>{});
template <class T>
inline constexpr auto kDwTableOf = dw_table<T>(std::make_index_sequence<kDwTable>{});
template <class T>
constexpr Tiles tiles_of(GemmF32Fn gemm) {
  return {kFwdTableOf<T, 0>.data(), kFwdTableOf<T, 3>.data(), kFwdTableOf<T, 5>.data(),
          kDwTableOf<T>.data(), gemm};
}

// The contract of conv2d.hpp, computed with the given products.
void forward(const Tiles& t, const Conv2dShape& s, const float* x, const float* w,
             const float* bias, float* y, float* scratch);
void backward(const Tiles& t, const Conv2dShape& s, const float* x, const float* w,
              const float* dy, float* dx, float* dw, float* db, float* scratch);

}  // namespace zt::kernels::conv2d_detail
