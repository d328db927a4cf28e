// Reference 2-D convolution: direct loops accumulated in double, the definition of correct.
// Uses no scratch.
#include <cstddef>

#include "../conv2d_shape.hpp"
#include "zotrain/kernels/conv2d.hpp"

namespace zt::kernels {

void conv2d_forward_f32_ref(const Conv2dShape& s, const float* x, const float* w,
                            const float* bias, float* y, float* /*scratch*/) {
  detail::check_conv2d_shape(s);
  const int oh_n = s.out_h(), ow_n = s.out_w(), k = s.kernel;
  for (int b = 0; b < s.batch; ++b)
    for (int o = 0; o < s.out_c; ++o)
      for (int oh = 0; oh < oh_n; ++oh)
        for (int ow = 0; ow < ow_n; ++ow) {
          double acc = bias != nullptr ? bias[o] : 0.0;
          for (int c = 0; c < s.in_c; ++c)
            for (int i = 0; i < k; ++i)
              for (int j = 0; j < k; ++j) {
                const int ih = oh + i - s.pad, iw = ow + j - s.pad;
                if (ih < 0 || ih >= s.in_h || iw < 0 || iw >= s.in_w) continue;
                const double xv = x[((static_cast<std::ptrdiff_t>(b) * s.in_c + c) * s.in_h + ih) * s.in_w + iw];
                const double wv = w[((static_cast<std::ptrdiff_t>(o) * s.in_c + c) * k + i) * k + j];
                acc += xv * wv;
              }
          y[((static_cast<std::ptrdiff_t>(b) * s.out_c + o) * oh_n + oh) * ow_n + ow] =
              static_cast<float>(acc);
        }
}

void conv2d_backward_f32_ref(const Conv2dShape& s, const float* x, const float* w,
                             const float* dy, float* dx, float* dw, float* db,
                             float* /*scratch*/) {
  detail::check_conv2d_shape(s);
  const int oh_n = s.out_h(), ow_n = s.out_w(), k = s.kernel;
  auto x_at = [&](int b, int c, int ih, int iw) {
    return x[((static_cast<std::ptrdiff_t>(b) * s.in_c + c) * s.in_h + ih) * s.in_w + iw];
  };
  auto dy_at = [&](int b, int o, int oh, int ow) {
    return dy[((static_cast<std::ptrdiff_t>(b) * s.out_c + o) * oh_n + oh) * ow_n + ow];
  };
  if (db != nullptr) {
    for (int o = 0; o < s.out_c; ++o) {
      double acc = 0.0;
      for (int b = 0; b < s.batch; ++b)
        for (int oh = 0; oh < oh_n; ++oh)
          for (int ow = 0; ow < ow_n; ++ow) acc += dy_at(b, o, oh, ow);
      db[o] = static_cast<float>(db[o] + acc);
    }
  }
  if (dw != nullptr) {
    for (int o = 0; o < s.out_c; ++o)
      for (int c = 0; c < s.in_c; ++c)
        for (int i = 0; i < k; ++i)
          for (int j = 0; j < k; ++j) {
            double acc = 0.0;
            for (int b = 0; b < s.batch; ++b)
              for (int oh = 0; oh < oh_n; ++oh)
                for (int ow = 0; ow < ow_n; ++ow) {
                  const int ih = oh + i - s.pad, iw = ow + j - s.pad;
                  if (ih < 0 || ih >= s.in_h || iw < 0 || iw >= s.in_w) continue;
                  acc += static_cast<double>(x_at(b, c, ih, iw)) * dy_at(b, o, oh, ow);
                }
            float& out = dw[((static_cast<std::ptrdiff_t>(o) * s.in_c + c) * k + i) * k + j];
            out = static_cast<float>(out + acc);
          }
  }
  if (dx != nullptr) {
    for (int b = 0; b < s.batch; ++b)
      for (int c = 0; c < s.in_c; ++c)
        for (int ih = 0; ih < s.in_h; ++ih)
          for (int iw = 0; iw < s.in_w; ++iw) {
            double acc = 0.0;
            for (int o = 0; o < s.out_c; ++o)
              for (int i = 0; i < k; ++i)
                for (int j = 0; j < k; ++j) {
                  const int oh = ih - i + s.pad, ow = iw - j + s.pad;
                  if (oh < 0 || oh >= oh_n || ow < 0 || ow >= ow_n) continue;
                  acc += static_cast<double>(dy_at(b, o, oh, ow)) *
                         w[((static_cast<std::ptrdiff_t>(o) * s.in_c + c) * k + i) * k + j];
                }
            dx[((static_cast<std::ptrdiff_t>(b) * s.in_c + c) * s.in_h + ih) * s.in_w + iw] =
                static_cast<float>(acc);
          }
  }
}

}  // namespace zt::kernels
