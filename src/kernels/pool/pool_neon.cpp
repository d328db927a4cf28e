// NEON 2x2/2 max-pool: four windows per step. vld2q_f32 splits a row pair into the window
// columns (a b / c d); the scan `best = v > best ? v : best` over a, b, c, d is a compare and a
// bit select (vcgtq_f32 + vbslq_f32), the same comparisons in the same order as the reference,
// so results are bit-exact (first maximum wins, NaN never wins, −0 in first place is kept —
// vmaxq_f32 would not do this). Backward turns the three compare masks into one-hot masks and
// stores dy & mask interleaved with vst2q_f32: every dx element is written exactly once.
// The last ow % 4 windows of a row use the same scan in scalar code. Large inputs are split
// across threads by plane (elementwise, so the thread count does not change results).
#include <arm_neon.h>

#include <cstddef>

#include "pool_driver.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/kernels/pool.hpp"

namespace zt::kernels {
namespace {

inline float32x4_t take_if_greater(float32x4_t v, float32x4_t best) {
  return vbslq_f32(vcgtq_f32(v, best), v, best);
}

// Scalar window: the reference scan; returns the index (0..3) of the first maximum.
inline int window_arg(float a, float b, float c, float d, float* best_out) {
  float best = a;
  int arg = 0;
  if (b > best) { best = b; arg = 1; }
  if (c > best) { best = c; arg = 2; }
  if (d > best) { best = d; arg = 3; }
  *best_out = best;
  return arg;
}

void pool_fwd_plane(int h, int w, const float* __restrict xp, float* __restrict yp) {
  const int ow = w / 2;
  pool_detail::forward_row_pairs(h, w, xp, yp, [ow](const float* r0, const float* r1, float* out) {
    int j = 0;
    for (; j + 4 <= ow; j += 4) {
      const float32x4x2_t top = vld2q_f32(r0 + 2 * j), bot = vld2q_f32(r1 + 2 * j);
      float32x4_t best = top.val[0];
      best = take_if_greater(top.val[1], best);
      best = take_if_greater(bot.val[0], best);
      best = take_if_greater(bot.val[1], best);
      vst1q_f32(out + j, best);
    }
    for (; j < ow; ++j)
      window_arg(r0[2 * j], r0[2 * j + 1], r1[2 * j], r1[2 * j + 1], out + j);
  });
}

void pool_bwd_plane(int h, int w, const float* __restrict xp, const float* __restrict dyp,
                    float* __restrict dxp) {
  const int ow = w / 2;
  pool_detail::backward_row_pairs(h, w, xp, dyp, dxp, [ow, w](const float* r0, const float* r1, const float* g,
                                                              float* d0, float* d1) {
    int j = 0;
    for (; j + 4 <= ow; j += 4) {
      const float32x4x2_t top = vld2q_f32(r0 + 2 * j), bot = vld2q_f32(r1 + 2 * j);
      const uint32x4_t gt_b = vcgtq_f32(top.val[1], top.val[0]);
      const float32x4_t best_ab = vbslq_f32(gt_b, top.val[1], top.val[0]);
      const uint32x4_t gt_c = vcgtq_f32(bot.val[0], best_ab);
      const float32x4_t best_abc = vbslq_f32(gt_c, bot.val[0], best_ab);
      const uint32x4_t is_d = vcgtq_f32(bot.val[1], best_abc);
      const uint32x4_t is_c = vbicq_u32(gt_c, is_d);                      // c won, d did not
      const uint32x4_t is_b = vbicq_u32(vbicq_u32(gt_b, gt_c), is_d);     // b won, c, d did not
      const uint32x4_t later = vorrq_u32(vorrq_u32(gt_b, gt_c), is_d);   // a lost
      const uint32x4_t gv = vreinterpretq_u32_f32(vld1q_f32(g + j));
      float32x4x2_t top_out, bot_out;
      top_out.val[0] = vreinterpretq_f32_u32(vbicq_u32(gv, later));
      top_out.val[1] = vreinterpretq_f32_u32(vandq_u32(gv, is_b));
      bot_out.val[0] = vreinterpretq_f32_u32(vandq_u32(gv, is_c));
      bot_out.val[1] = vreinterpretq_f32_u32(vandq_u32(gv, is_d));
      vst2q_f32(d0 + 2 * j, top_out);
      vst2q_f32(d1 + 2 * j, bot_out);
    }
    pool_detail::maxpool2x2_backward_windows(r0, r1, g, d0, d1, j, ow, w);
  });
}

}  // namespace

ZT_POOL_F32_PATH(neon, pool_fwd_plane, pool_bwd_plane)

}  // namespace zt::kernels
