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
