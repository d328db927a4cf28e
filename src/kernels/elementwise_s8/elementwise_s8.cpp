// Int8 ReLU and 2x2/2 max-pool (docs/design.md §5.3): exact selections, so one plain implementation
// serves every path. The ReLU loops vectorise at -O3 (no __restrict: in-place use is allowed);
// large calls split over OpenMP threads in fixed pieces. Integer arithmetic only.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "zotrain/kernels/elementwise_s8.hpp"
#include "../chunked_parallel.hpp"
#include "../select_isa.hpp"

namespace zt::kernels {
namespace {

// Elementwise threading (../chunked_parallel.hpp): fork from this many elements, in pieces.
using Chunks = detail::Chunking<std::size_t{1} << 17, 16384>;

// Runs fn(plane) for each plane, in parallel when the planes hold enough elements.
template <class Fn>
void for_each_plane(int planes, std::size_t plane_size, Fn fn) {
  detail::for_each_item(planes, static_cast<std::size_t>(planes) * plane_size, Chunks::kMin, fn);
}

// One plane [h, w] → [oh, ow]. Sizes are by-value parameters: int8 stores may alias anything,
// so a bound read through a pointer or reference would be reloaded and block vectorisation.
void pool_forward_plane(const std::int8_t* xp, std::int8_t* yp, std::size_t oh, std::size_t ow,
                        std::size_t w) {
  for (std::size_t i = 0; i < oh; ++i) {
    const std::int8_t* r0 = xp + 2 * i * w;
    const std::int8_t* r1 = r0 + w;
    std::int8_t* yr = yp + i * ow;
    for (std::size_t j = 0; j < ow; ++j) {
      yr[j] = std::max(std::max(r0[2 * j], r0[2 * j + 1]), std::max(r1[2 * j], r1[2 * j + 1]));
    }
  }
}

}  // namespace

void relu_forward_s8(std::size_t n, const std::int8_t* x, std::int8_t* y) {
  Chunks::for_each(n, [&](std::size_t b, std::size_t len) {
    const std::int8_t* xs = x + b;
    std::int8_t* ys = y + b;
    for (std::size_t i = 0; i < len; ++i) ys[i] = std::max(xs[i], std::int8_t{0});
  });
}

void relu_backward_s8(std::size_t n, const std::int8_t* x, const std::int8_t* dy, std::int8_t* dx) {
  Chunks::for_each(n, [&](std::size_t b, std::size_t len) {
    const std::int8_t* xs = x + b;
    const std::int8_t* dys = dy + b;
    std::int8_t* dxs = dx + b;
    for (std::size_t i = 0; i < len; ++i) {
      const std::int8_t d = dys[i];  // loaded unconditionally, so the select vectorises
      dxs[i] = xs[i] > 0 ? d : std::int8_t{0};
    }
  });
}

void maxpool2x2_forward_s8(int planes, int h, int w, const std::int8_t* x, std::int8_t* y) {
  const std::size_t oh = static_cast<std::size_t>(h / 2), ow = static_cast<std::size_t>(w / 2);
  const std::size_t in_plane = static_cast<std::size_t>(h) * static_cast<std::size_t>(w);
  for_each_plane(planes, in_plane, [&](int p) {
    pool_forward_plane(x + static_cast<std::size_t>(p) * in_plane,
                       y + static_cast<std::size_t>(p) * oh * ow, oh, ow,
                       static_cast<std::size_t>(w));
  });
}

void maxpool2x2_backward_s8(int planes, int h, int w, const std::int8_t* x,
                            const std::int8_t* dy, std::int8_t* dx) {
  const int oh = h / 2, ow = w / 2;
  const std::size_t in_plane = static_cast<std::size_t>(h) * w;
  const std::size_t out_plane = static_cast<std::size_t>(oh) * ow;
  for_each_plane(planes, in_plane, [&](int p) {
    const std::int8_t* xp = x + static_cast<std::size_t>(p) * in_plane;
    const std::int8_t* dyp = dy + static_cast<std::size_t>(p) * out_plane;
    std::int8_t* dxp = dx + static_cast<std::size_t>(p) * in_plane;
    std::fill(dxp, dxp + in_plane, std::int8_t{0});  // also the dropped odd row/column
    for (int i = 0; i < oh; ++i) {
      const std::size_t o0 = static_cast<std::size_t>(2 * i) * w;
      const std::size_t o1 = o0 + static_cast<std::size_t>(w);
      for (int j = 0; j < ow; ++j) {
        // Scan order 00, 01, 10, 11; strict > keeps the first maximum.
        std::size_t at = o0 + 2 * j;
        std::int8_t best = xp[at];
        if (xp[o0 + 2 * j + 1] > best) { at = o0 + 2 * j + 1; best = xp[at]; }
        if (xp[o1 + 2 * j] > best) { at = o1 + 2 * j; best = xp[at]; }
        if (xp[o1 + 2 * j + 1] > best) at = o1 + 2 * j + 1;
        dxp[at] = dyp[static_cast<std::size_t>(i) * ow + j];
      }
    }
  });
}

void maxpool_points_forward_s8(int batch, int points, int channels, const std::int8_t* x,
                               std::int8_t* y) {
  for (int b = 0; b < batch; ++b) {
    const std::int8_t* xb = x + static_cast<std::ptrdiff_t>(b) * points * channels;
    std::int8_t* yb = y + static_cast<std::ptrdiff_t>(b) * channels;
    for (int c = 0; c < channels; ++c) yb[c] = points > 0 ? xb[c] : std::int8_t{0};
    for (int p = 1; p < points; ++p) {
      const std::int8_t* row = xb + static_cast<std::ptrdiff_t>(p) * channels;
      for (int c = 0; c < channels; ++c) yb[c] = row[c] > yb[c] ? row[c] : yb[c];
    }
  }
}

void maxpool_points_backward_s8(int batch, int points, int channels, const std::int8_t* x,
                                const std::int8_t* dy, std::int8_t* dx) {
  const std::size_t per = static_cast<std::size_t>(points) * static_cast<std::size_t>(channels);
  for (int b = 0; b < batch; ++b) {
    const std::int8_t* xb = x + static_cast<std::size_t>(b) * per;
    std::int8_t* db = dx + static_cast<std::size_t>(b) * per;
    std::fill(db, db + per, std::int8_t{0});
    for (int c = 0; c < channels; ++c) {
      int best = 0;  // first maximum
      for (int p = 1; p < points; ++p)
        if (xb[static_cast<std::ptrdiff_t>(p) * channels + c] > xb[static_cast<std::ptrdiff_t>(best) * channels + c]) best = p;
      if (points > 0)
        db[static_cast<std::ptrdiff_t>(best) * channels + c] = dy[static_cast<std::ptrdiff_t>(b) * channels + c];
    }
  }
}

// The NEON paths exist only in ARM builds (ZT_SELECT_PLAIN names them there).
ZT_DEFINE_SELECT_PLAIN(ReluForwardS8Fn, relu_forward_s8)
ZT_DEFINE_SELECT_PLAIN(ReluBackwardS8Fn, relu_backward_s8)
ZT_DEFINE_SELECT_PLAIN(MaxPool2x2ForwardS8Fn, maxpool2x2_forward_s8)
ZT_DEFINE_SELECT_PLAIN(MaxPool2x2BackwardS8Fn, maxpool2x2_backward_s8)
ZT_DEFINE_SELECT_PLAIN(MaxPoolPointsForwardS8Fn, maxpool_points_forward_s8)
ZT_DEFINE_SELECT_PLAIN(MaxPoolPointsBackwardS8Fn, maxpool_points_backward_s8)

}  // namespace zt::kernels
