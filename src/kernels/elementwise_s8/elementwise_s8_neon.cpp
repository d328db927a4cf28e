// NEON int8 ReLU, 2x2/2 max-pool and max over points: 16 bytes per step, tails through the plain
// functions (elementwise_s8.cpp) or the same scalar steps. Exact selections, so the bytes equal
// the plain path's; the same splits over OpenMP threads. Integer arithmetic only.
#include <arm_neon.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "zotrain/kernels/elementwise_s8.hpp"
#include "../chunked_parallel.hpp"

namespace zt::kernels {
namespace {

constexpr std::size_t kParallelMin = std::size_t{1} << 17;  // elements before forking
constexpr std::size_t kChunk = 16384;                        // elements per work item
constexpr int kMaxPointsIndexed = 65536;                     // argmax indices kept in uint16 lanes

// The window maximum of out[j] = max(r0[2j], r0[2j+1], r1[2j], r1[2j+1]), first in scan order.
inline int first_max(const std::int8_t* r0, const std::int8_t* r1, int j) {
  int at = 0;
  std::int8_t best = r0[2 * j];
  if (r0[2 * j + 1] > best) at = 1, best = r0[2 * j + 1];
  if (r1[2 * j] > best) at = 2, best = r1[2 * j];
  if (r1[2 * j + 1] > best) at = 3;
  return at;
}

// A byte mask (0 / 0xff) widened to 16-bit lanes (0 / 0xffff).
inline uint16x8_t widen_mask(uint8x8_t m) { return vreinterpretq_u16_s16(vmovl_s8(vreinterpret_s8_u8(m))); }

}  // namespace

void relu_forward_s8_neon(std::size_t n, const std::int8_t* x, std::int8_t* y) {
  detail::for_each_chunk(n, kParallelMin, kChunk, [x, y](std::size_t b, std::size_t len) {
    const std::int8_t* xb = x + b;  // by value: the stores below cannot reload them
    std::int8_t* yb = y + b;
    const int8x16_t zero = vdupq_n_s8(0);
    std::size_t i = 0;
    // 64 bytes per step, the loads first: the in-order A53 then overlaps the four vectors.
    for (; i + 64 <= len; i += 64) {
      const int8x16_t v0 = vld1q_s8(xb + i), v1 = vld1q_s8(xb + i + 16), v2 = vld1q_s8(xb + i + 32),
                      v3 = vld1q_s8(xb + i + 48);
      vst1q_s8(yb + i, vmaxq_s8(v0, zero));
      vst1q_s8(yb + i + 16, vmaxq_s8(v1, zero));
      vst1q_s8(yb + i + 32, vmaxq_s8(v2, zero));
      vst1q_s8(yb + i + 48, vmaxq_s8(v3, zero));
    }
    for (; i + 16 <= len; i += 16) vst1q_s8(yb + i, vmaxq_s8(vld1q_s8(xb + i), zero));
    if (i < len) relu_forward_s8(len - i, xb + i, yb + i);
  });
}

void relu_backward_s8_neon(std::size_t n, const std::int8_t* x, const std::int8_t* dy, std::int8_t* dx) {
  detail::for_each_chunk(n, kParallelMin, kChunk, [&](std::size_t b, std::size_t len) {
    const int8x16_t zero = vdupq_n_s8(0);
    std::size_t i = 0;
    for (; i + 16 <= len; i += 16) {
      const uint8x16_t pass = vcgtq_s8(vld1q_s8(x + b + i), zero);
      vst1q_s8(dx + b + i, vandq_s8(vld1q_s8(dy + b + i), vreinterpretq_s8_u8(pass)));
    }
    if (i < len) relu_backward_s8(len - i, x + b + i, dy + b + i, dx + b + i);
  });
}

void maxpool2x2_forward_s8_neon(int planes, int h, int w, const std::int8_t* x, std::int8_t* y) {
  const int oh = h / 2, ow = w / 2;
  const std::size_t in_plane = static_cast<std::size_t>(h) * w, out_plane = static_cast<std::size_t>(oh) * ow;
  // The maxima of 8 windows from input rows r0, r1 starting at window `at`.
  const auto max8 = [](const std::int8_t* r0, const std::int8_t* r1, int at) {
    const int8x8x2_t a = vld2_s8(r0 + 2 * at), c = vld2_s8(r1 + 2 * at);  // even / odd columns
    return vmax_s8(vmax_s8(a.val[0], a.val[1]), vmax_s8(c.val[0], c.val[1]));
  };
  detail::for_each_item(planes, planes * in_plane, kParallelMin, [&](int p) {
    const std::int8_t* xp = x + p * in_plane;
    std::int8_t* yp = y + p * out_plane;
    const auto in_row = [&](int i) { return xp + static_cast<std::size_t>(2 * i) * w; };
    const auto out_row = [&](int i) { return yp + static_cast<std::size_t>(i) * ow; };
    int i = 0;
    // 4 ≤ ow < 8 (LeNet-5's 10 × 10 maps), all rows but the plane's last: 8 outputs per row
    // spill 8 − ow garbage values into the next output row, which is written after, and read
    // 16 bytes of each input row, which stay inside the plane (w ≥ 8, two rows further). Two
    // rows at a time, both loaded before either is stored, so the in-order A53 overlaps them.
    if (ow >= 4 && ow < 8) {
      for (; i + 2 < oh; i += 2) {
        const int8x8_t m0 = max8(in_row(i), in_row(i) + w, 0), m1 = max8(in_row(i + 1), in_row(i + 1) + w, 0);
        vst1_s8(out_row(i), m0);
        vst1_s8(out_row(i + 1), m1);
      }
      for (; i + 1 < oh; ++i) vst1_s8(out_row(i), max8(in_row(i), in_row(i) + w, 0));
    }
    for (; i < oh; ++i) {
      const std::int8_t* r0 = in_row(i);
      const std::int8_t* r1 = r0 + w;
      std::int8_t* yr = out_row(i);
      int j = 0;
      for (; j + 16 <= ow; j += 16) {
        const int8x16x2_t a = vld2q_s8(r0 + 2 * j), c = vld2q_s8(r1 + 2 * j);  // even / odd columns
        vst1q_s8(yr + j, vmaxq_s8(vmaxq_s8(a.val[0], a.val[1]), vmaxq_s8(c.val[0], c.val[1])));
      }
      // 8 outputs at a time; a last partial group (ow ≥ 8) is redone as the 8 ending at ow,
      // which rewrites some outputs with the same values (LeNet-5's 28 × 28 maps: ow = 14, the
      // two groups loaded before either is stored).
      if (j == 0 && ow > 8 && ow < 16) {
        const int8x8_t m0 = max8(r0, r1, 0), m1 = max8(r0, r1, ow - 8);
        vst1_s8(yr, m0);
        vst1_s8(yr + ow - 8, m1);
        continue;
      }
      for (; j + 8 <= ow; j += 8) vst1_s8(yr + j, max8(r0, r1, j));
      if (j < ow && ow >= 8) {
        vst1_s8(yr + ow - 8, max8(r0, r1, ow - 8));
        j = ow;
      }
      for (; j < ow; ++j)
        yr[j] = std::max(std::max(r0[2 * j], r0[2 * j + 1]), std::max(r1[2 * j], r1[2 * j + 1]));
    }
  });
}

void maxpool2x2_backward_s8_neon(int planes, int h, int w, const std::int8_t* x, const std::int8_t* dy,
                                 std::int8_t* dx) {
  const int oh = h / 2, ow = w / 2;
  const std::size_t in_plane = static_cast<std::size_t>(h) * w, out_plane = static_cast<std::size_t>(oh) * ow;
  detail::for_each_item(planes, planes * in_plane, kParallelMin, [&](int p) {
    std::int8_t* dxp = dx + p * in_plane;
    std::fill(dxp, dxp + in_plane, std::int8_t{0});  // also the dropped odd row/column
    for (int i = 0; i < oh; ++i) {
      const std::size_t o0 = static_cast<std::size_t>(2 * i) * w;
      const std::int8_t* r0 = x + p * in_plane + o0;
      const std::int8_t* r1 = r0 + w;
      const std::int8_t* dyr = dy + p * out_plane + static_cast<std::size_t>(i) * ow;
      std::int8_t* d0 = dxp + o0;
      std::int8_t* d1 = d0 + w;
      int j = 0;
      for (; j + 16 <= ow; j += 16) {
        const int8x16x2_t top = vld2q_s8(r0 + 2 * j), bot = vld2q_s8(r1 + 2 * j);
        const int8x16_t mx = vmaxq_s8(vmaxq_s8(top.val[0], top.val[1]), vmaxq_s8(bot.val[0], bot.val[1]));
        // The first of 00, 01, 10, 11 equal to the maximum takes dy.
        const uint8x16_t e00 = vceqq_s8(top.val[0], mx);
        const uint8x16_t e01 = vbicq_u8(vceqq_s8(top.val[1], mx), e00);
        const uint8x16_t seen = vorrq_u8(e00, e01);
        const uint8x16_t e10 = vbicq_u8(vceqq_s8(bot.val[0], mx), seen);
        const uint8x16_t e11 = vmvnq_u8(vorrq_u8(seen, e10));
        const int8x16_t g = vld1q_s8(dyr + j);
        const auto pick = [&](uint8x16_t m) { return vandq_s8(g, vreinterpretq_s8_u8(m)); };
        vst2q_s8(d0 + 2 * j, (int8x16x2_t{{pick(e00), pick(e01)}}));
        vst2q_s8(d1 + 2 * j, (int8x16x2_t{{pick(e10), pick(e11)}}));
      }
      // 8 windows at a time; the last partial group redone as the 8 ending at ow (as forward).
      const auto eight = [&](int at) {
        const int8x8x2_t top = vld2_s8(r0 + 2 * at), bot = vld2_s8(r1 + 2 * at);
        const int8x8_t mx = vmax_s8(vmax_s8(top.val[0], top.val[1]), vmax_s8(bot.val[0], bot.val[1]));
        const uint8x8_t e00 = vceq_s8(top.val[0], mx);
        const uint8x8_t e01 = vbic_u8(vceq_s8(top.val[1], mx), e00);
        const uint8x8_t seen = vorr_u8(e00, e01);
        const uint8x8_t e10 = vbic_u8(vceq_s8(bot.val[0], mx), seen);
        const uint8x8_t e11 = vmvn_u8(vorr_u8(seen, e10));
        const int8x8_t g = vld1_s8(dyr + at);
        const auto pick = [&](uint8x8_t m) { return vand_s8(g, vreinterpret_s8_u8(m)); };
        vst2_s8(d0 + 2 * at, (int8x8x2_t{{pick(e00), pick(e01)}}));
        vst2_s8(d1 + 2 * at, (int8x8x2_t{{pick(e10), pick(e11)}}));
      };
      for (; j + 8 <= ow; j += 8) eight(j);
      if (j < ow && ow >= 8) {
        eight(ow - 8);
        j = ow;
      }
      for (; j < ow; ++j) {
        const int at = first_max(r0, r1, j);
        (at < 2 ? d0 : d1)[2 * j + (at & 1)] = dyr[j];
      }
    }
  });
}

void maxpool_points_forward_s8_neon(int batch, int points, int channels, const std::int8_t* x, std::int8_t* y) {
  if (points == 0) return maxpool_points_forward_s8(batch, points, channels, x, y);
  for (int b = 0; b < batch; ++b) {
    const std::int8_t* xb = x + static_cast<std::ptrdiff_t>(b) * points * channels;
    std::int8_t* yb = y + static_cast<std::ptrdiff_t>(b) * channels;
    int c = 0;
    for (; c + 16 <= channels; c += 16) {
      int8x16_t m = vld1q_s8(xb + c);
      for (int p = 1; p < points; ++p) m = vmaxq_s8(m, vld1q_s8(xb + static_cast<std::ptrdiff_t>(p) * channels + c));
      vst1q_s8(yb + c, m);
    }
    for (; c < channels; ++c) {
      std::int8_t m = xb[c];
      for (int p = 1; p < points; ++p) m = std::max(m, xb[static_cast<std::ptrdiff_t>(p) * channels + c]);
      yb[c] = m;
    }
  }
}

void maxpool_points_backward_s8_neon(int batch, int points, int channels, const std::int8_t* x,
                                     const std::int8_t* dy, std::int8_t* dx) {
  if (points == 0 || points > kMaxPointsIndexed)
    return maxpool_points_backward_s8(batch, points, channels, x, dy, dx);
  const std::size_t per = static_cast<std::size_t>(points) * static_cast<std::size_t>(channels);
  for (int b = 0; b < batch; ++b) {
    const std::int8_t* xb = x + b * per;
    const std::int8_t* dyb = dy + static_cast<std::ptrdiff_t>(b) * channels;
    std::int8_t* db = dx + b * per;
    std::fill(db, db + per, std::int8_t{0});
    int c = 0;
    // Per channel lane: the running maximum and the first point reaching it (strict >).
    for (; c + 16 <= channels; c += 16) {
      int8x16_t best = vld1q_s8(xb + c);
      uint16x8_t at_lo = vdupq_n_u16(0), at_hi = at_lo;
      for (int p = 1; p < points; ++p) {
        const int8x16_t v = vld1q_s8(xb + static_cast<std::ptrdiff_t>(p) * channels + c);
        const uint8x16_t gt = vcgtq_s8(v, best);
        best = vmaxq_s8(best, v);
        const uint16x8_t pv = vdupq_n_u16(static_cast<std::uint16_t>(p));
        at_lo = vbslq_u16(widen_mask(vget_low_u8(gt)), pv, at_lo);
        at_hi = vbslq_u16(widen_mask(vget_high_u8(gt)), pv, at_hi);
      }
      std::uint16_t at[16];
      vst1q_u16(at, at_lo);
      vst1q_u16(at + 8, at_hi);
      for (int l = 0; l < 16; ++l) db[static_cast<std::ptrdiff_t>(at[l]) * channels + c + l] = dyb[c + l];
    }
    for (; c < channels; ++c) {
      int best = 0;
      for (int p = 1; p < points; ++p)
        if (xb[static_cast<std::ptrdiff_t>(p) * channels + c] > xb[static_cast<std::ptrdiff_t>(best) * channels + c]) best = p;
      db[static_cast<std::ptrdiff_t>(best) * channels + c] = dyb[c];
    }
  }
}

}  // namespace zt::kernels
