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
  const int ow = w / 2;
  pool_detail::forward_row_pairs(h, w, xp, yp, [ow](const float* r0, const float* r1, float* out) {
    for (int j = 0; j < ow; ++j) {
      float best = r0[2 * j];
      const float b = r0[2 * j + 1], c = r1[2 * j], d = r1[2 * j + 1];
      best = b > best ? b : best;
      best = c > best ? c : best;
      best = d > best ? d : best;
      out[j] = best;
    }
  });
}

inline void pool_bwd_plane(int h, int w, const float* __restrict xp, const float* __restrict dyp,
                           float* __restrict dxp) {
  const int ow = w / 2;
  pool_detail::backward_row_pairs(h, w, xp, dyp, dxp,
                                  [ow, w](const float* r0, const float* r1, const float* g, float* d0, float* d1) {
                                    pool_detail::maxpool2x2_backward_windows(r0, r1, g, d0, d1, 0, ow, w);
                                  });
}

}  // namespace

ZT_POOL_F32_PATH(portable, pool_fwd_plane, pool_bwd_plane)

ZT_DEFINE_SELECT(MaxPoolForwardF32Fn, maxpool2x2_forward_f32)
ZT_DEFINE_SELECT(MaxPoolBackwardF32Fn, maxpool2x2_backward_f32)

}  // namespace zt::kernels
