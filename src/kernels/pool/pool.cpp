// Portable 2x2/2 max-pool: row-pair loops written as branch-free selects that GCC vectorises,
// the same comparisons in the same order as the reference (bit-exact, first maximum wins).
// Backward writes every dx element exactly once (no separate zeroing pass). Large inputs are
// split across threads by plane (elementwise, so thread count does not change results).
#include <cstddef>

#include "pool_driver.hpp"
#include "../select_isa.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/kernels/pool.hpp"

namespace zt::kernels {
namespace {

inline void pool_fwd_plane(int h, int w, const float* __restrict xp, float* __restrict yp) {
  const int oh = h / 2, ow = w / 2;
  for (int i = 0; i < oh; ++i) {
    const float* r0 = xp + static_cast<std::ptrdiff_t>(2 * i) * w;
    const float* r1 = r0 + w;
    float* out = yp + static_cast<std::ptrdiff_t>(i) * ow;
    for (int j = 0; j < ow; ++j) {
      float best = r0[2 * j];
      const float b = r0[2 * j + 1], c = r1[2 * j], d = r1[2 * j + 1];
      best = b > best ? b : best;
      best = c > best ? c : best;
      best = d > best ? d : best;
      out[j] = best;
    }
  }
}

inline void pool_bwd_plane(int h, int w, const float* __restrict xp, const float* __restrict dyp,
                           float* __restrict dxp) {
  const int oh = h / 2, ow = w / 2;
  for (int i = 0; i < oh; ++i) {
    const float* r0 = xp + static_cast<std::ptrdiff_t>(2 * i) * w;
    const float* r1 = r0 + w;
    float* d0 = dxp + static_cast<std::ptrdiff_t>(2 * i) * w;
    float* d1 = d0 + w;
    const float* g = dyp + static_cast<std::ptrdiff_t>(i) * ow;
    pool_detail::maxpool2x2_backward_windows(r0, r1, g, d0, d1, 0, ow, w);
  }
  pool_detail::maxpool2x2_backward_odd_row(h, w, dxp);
}

}  // namespace

void maxpool2x2_forward_f32_portable(int planes, int h, int w, const float* x, float* y) {
  pool_detail::maxpool2x2_forward_planes(planes, h, w, x, y, pool_fwd_plane);
}

void maxpool2x2_backward_f32_portable(int planes, int h, int w, const float* x, const float* dy,
                                      float* dx) {
  pool_detail::maxpool2x2_backward_planes(planes, h, w, x, dy, dx, pool_bwd_plane);
}

ZT_DEFINE_SELECT(MaxPoolForwardF32Fn, maxpool2x2_forward_f32)
ZT_DEFINE_SELECT(MaxPoolBackwardF32Fn, maxpool2x2_backward_f32)

}  // namespace zt::kernels
