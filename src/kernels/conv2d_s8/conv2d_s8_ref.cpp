// Reference int8 convolution: direct loops over the definition, the definition of correct.
// Forward and input gradient sum at most C·k·k resp. O·k·k ≤ 65536 int8 products in int32
// (65536 · 128² = 2^30); the weight gradient sums over the batch and positions in int64 and
// saturates to int32. Uses no scratch.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "../conv2d_shape.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/kernels/conv2d_s8.hpp"

namespace zt::kernels {
namespace {

constexpr std::int64_t kMaxDepth = 65536;

}  // namespace

void conv2d_forward_s8_ref(const Conv2dShape& s, const std::int8_t* x, const std::int8_t* w,
                           std::int32_t* y, void* /*scratch*/) {
  detail::check_conv2d_shape(s);
  ZT_CHECK(std::int64_t{s.in_c} * s.kernel * s.kernel <= kMaxDepth);
  const int oh_n = s.out_h(), ow_n = s.out_w(), k = s.kernel;
  for (int b = 0; b < s.batch; ++b)
    for (int o = 0; o < s.out_c; ++o)
      for (int oh = 0; oh < oh_n; ++oh)
        for (int ow = 0; ow < ow_n; ++ow) {
          std::int32_t acc = 0;
          for (int c = 0; c < s.in_c; ++c)
            for (int i = 0; i < k; ++i)
              for (int j = 0; j < k; ++j) {
                const int ih = oh + i - s.pad, iw = ow + j - s.pad;
                if (ih < 0 || ih >= s.in_h || iw < 0 || iw >= s.in_w) continue;
                acc += std::int32_t{x[((static_cast<std::ptrdiff_t>(b) * s.in_c + c) * s.in_h + ih) * s.in_w + iw]} *
                       w[((static_cast<std::ptrdiff_t>(o) * s.in_c + c) * k + i) * k + j];
              }
          y[((static_cast<std::ptrdiff_t>(b) * s.out_c + o) * oh_n + oh) * ow_n + ow] = acc;
        }
}

void conv2d_backward_input_s8_ref(const Conv2dShape& s, const std::int8_t* e,
                                  const std::int8_t* w, std::int32_t* dx, void* /*scratch*/) {
  detail::check_conv2d_shape(s);
  ZT_CHECK(std::int64_t{s.out_c} * s.kernel * s.kernel <= kMaxDepth);
  const int oh_n = s.out_h(), ow_n = s.out_w(), k = s.kernel;
  for (int b = 0; b < s.batch; ++b)
    for (int c = 0; c < s.in_c; ++c)
      for (int ih = 0; ih < s.in_h; ++ih)
        for (int iw = 0; iw < s.in_w; ++iw) {
          std::int32_t acc = 0;
          for (int o = 0; o < s.out_c; ++o)
            for (int i = 0; i < k; ++i)
              for (int j = 0; j < k; ++j) {
                const int oh = ih - i + s.pad, ow = iw - j + s.pad;
                if (oh < 0 || oh >= oh_n || ow < 0 || ow >= ow_n) continue;
                acc += std::int32_t{e[((static_cast<std::ptrdiff_t>(b) * s.out_c + o) * oh_n + oh) * ow_n + ow]} *
                       w[((static_cast<std::ptrdiff_t>(o) * s.in_c + c) * k + i) * k + j];
              }
          dx[((static_cast<std::ptrdiff_t>(b) * s.in_c + c) * s.in_h + ih) * s.in_w + iw] = acc;
        }
}

void conv2d_backward_weights_s8_ref(const Conv2dShape& s, const std::int8_t* x,
                                    const std::int8_t* e, std::int32_t* g, void* /*scratch*/) {
  detail::check_conv2d_shape(s);
  const int oh_n = s.out_h(), ow_n = s.out_w(), k = s.kernel;
  for (int o = 0; o < s.out_c; ++o)
    for (int c = 0; c < s.in_c; ++c)
      for (int i = 0; i < k; ++i)
        for (int j = 0; j < k; ++j) {
          std::int64_t acc = 0;
          for (int b = 0; b < s.batch; ++b)
            for (int oh = 0; oh < oh_n; ++oh)
              for (int ow = 0; ow < ow_n; ++ow) {
                const int ih = oh + i - s.pad, iw = ow + j - s.pad;
                if (ih < 0 || ih >= s.in_h || iw < 0 || iw >= s.in_w) continue;
                acc += std::int32_t{x[((static_cast<std::ptrdiff_t>(b) * s.in_c + c) * s.in_h + ih) * s.in_w + iw]} *
                       e[((static_cast<std::ptrdiff_t>(b) * s.out_c + o) * oh_n + oh) * ow_n + ow];
              }
          g[((static_cast<std::ptrdiff_t>(o) * s.in_c + c) * k + i) * k + j] =
              static_cast<std::int32_t>(std::clamp<std::int64_t>(acc, INT32_MIN, INT32_MAX));
        }
}

}  // namespace zt::kernels
