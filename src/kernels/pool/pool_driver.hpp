// Internal to the pool family: the 2x2/2 max-pool drivers over planes, shared by the portable
// and NEON paths, which differ only in their per-plane functions. Planes are independent, so
// they run over OpenMP threads when there is enough work (../chunked_parallel.hpp) without
// changing a result.
#pragma once

#include <cstddef>

#include "../chunked_parallel.hpp"
#include "zotrain/core/error.hpp"

namespace zt::kernels::pool_detail {

inline constexpr std::size_t kParallelMin = std::size_t{1} << 16;  // input elements to fork

inline bool go_parallel(int planes, int h, int w) {
  return planes > 1 &&
         detail::go_parallel(static_cast<std::size_t>(planes) * h * w, kParallelMin);
}

// fn(input offset, output offset) for each of `planes` planes [h, w] → [h/2, w/2].
template <class Fn>
void for_each_plane(int planes, int h, int w, Fn fn) {
  ZT_CHECK(planes >= 0 && h >= 0 && w >= 0);
  const std::ptrdiff_t in_sz = static_cast<std::ptrdiff_t>(h) * w;
  const std::ptrdiff_t out_sz = static_cast<std::ptrdiff_t>(h / 2) * (w / 2);
  const bool par = go_parallel(planes, h, w);
  (void)par;
#pragma omp parallel for schedule(static) if (par)
  for (int p = 0; p < planes; ++p) fn(p * in_sz, p * out_sz);
}

// Backward of the windows [j0, ow) of one row pair in scalar code: x rows r0, r1, dy row g, dx
// rows d0, d1. Each window's dy goes to its first maximum (the reference scan, a b / c d), zero
// to the other three; then, when w is odd, the last column of the pair (no window covers it).
inline void maxpool2x2_backward_windows(const float* r0, const float* r1, const float* g, float* d0,
                                        float* d1, int j0, int ow, int w) {
  for (int j = j0; j < ow; ++j) {
    const float a = r0[2 * j], b = r0[2 * j + 1], c = r1[2 * j], d = r1[2 * j + 1];
    float best = a;
    int arg = 0;
    if (b > best) { best = b; arg = 1; }
    if (c > best) { best = c; arg = 2; }
    if (d > best) { arg = 3; }
    const float gj = g[j];
    d0[2 * j] = arg == 0 ? gj : 0.0f;
    d0[2 * j + 1] = arg == 1 ? gj : 0.0f;
    d1[2 * j] = arg == 2 ? gj : 0.0f;
    d1[2 * j + 1] = arg == 3 ? gj : 0.0f;
  }
  if (w & 1) {
    d0[w - 1] = 0.0f;
    d1[w - 1] = 0.0f;
  }
}

// fn(r0, r1, out) for the row pairs of a plane [h, w]: x rows 2i and 2i + 1, output row i of
// the [h/2, w/2] plane, i < h/2.
template <class Fn>
inline void forward_row_pairs(int h, int w, const float* xp, float* yp, const Fn& fn) {
  const int oh = h / 2, ow = w / 2;
  for (int i = 0; i < oh; ++i) {
    const float* r0 = xp + static_cast<std::ptrdiff_t>(2 * i) * w;
    fn(r0, r0 + w, yp + static_cast<std::ptrdiff_t>(i) * ow);
  }
}

// fn(r0, r1, g, d0, d1) for the row pairs of a plane [h, w]: x rows r0, r1 and dx rows d0, d1
// (2i and 2i + 1), dy row g (i), i < h/2; then the last dx row zeroed when h is odd (no window
// covers it).
template <class Fn>
inline void backward_row_pairs(int h, int w, const float* xp, const float* dyp, float* dxp, const Fn& fn) {
  const int oh = h / 2, ow = w / 2;
  for (int i = 0; i < oh; ++i) {
    const float* r0 = xp + static_cast<std::ptrdiff_t>(2 * i) * w;
    float* d0 = dxp + static_cast<std::ptrdiff_t>(2 * i) * w;
    fn(r0, r0 + w, dyp + static_cast<std::ptrdiff_t>(i) * ow, d0, d0 + w);
  }
  if (h & 1)
    for (int j = 0; j < w; ++j) dxp[static_cast<std::ptrdiff_t>(h - 1) * w + j] = 0.0f;
}

// plane(h, w, x_plane, y_plane) for each plane.
template <class PlaneFwd>
void maxpool2x2_forward_planes(int planes, int h, int w, const float* x, float* y,
                               PlaneFwd plane) {
  for_each_plane(planes, h, w,
                 [&](std::ptrdiff_t in, std::ptrdiff_t out) { plane(h, w, x + in, y + out); });
}

// plane(h, w, x_plane, dy_plane, dx_plane) for each plane.
template <class PlaneBwd>
void maxpool2x2_backward_planes(int planes, int h, int w, const float* x, const float* dy,
                                float* dx, PlaneBwd plane) {
  for_each_plane(planes, h, w, [&](std::ptrdiff_t in, std::ptrdiff_t out) {
    plane(h, w, x + in, dy + out, dx + in);
  });
}

}  // namespace zt::kernels::pool_detail

// The public functions of a path (pool.hpp: maxpool2x2_forward_f32_<path>,
// maxpool2x2_backward_f32_<path>) on its plane functions, at namespace zt::kernels.
#define ZT_POOL_F32_PATH(path, fwd_plane, bwd_plane)                                             \
  void maxpool2x2_forward_f32_##path(int planes, int h, int w, const float* x, float* y) {     \
    pool_detail::maxpool2x2_forward_planes(planes, h, w, x, y, fwd_plane);                     \
  }                                                                                            \
  void maxpool2x2_backward_f32_##path(int planes, int h, int w, const float* x, const float* dy, \
                                      float* dx) {                                             \
    pool_detail::maxpool2x2_backward_planes(planes, h, w, x, dy, dx, bwd_plane);               \
  }
