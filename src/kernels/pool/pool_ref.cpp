// Reference 2x2/2 max-pool: plain loops, the definition of correct (see pool.hpp for the
// first-maximum and NaN rules).
#include <cstddef>

#include "zotrain/core/error.hpp"
#include "zotrain/kernels/pool.hpp"

namespace zt::kernels {

void maxpool2x2_forward_f32_ref(int planes, int h, int w, const float* x, float* y) {
  ZT_CHECK(planes >= 0 && h >= 0 && w >= 0);
  const int oh = h / 2, ow = w / 2;
  for (int p = 0; p < planes; ++p) {
    const float* xp = x + static_cast<std::ptrdiff_t>(p) * h * w;
    float* yp = y + static_cast<std::ptrdiff_t>(p) * oh * ow;
    for (int i = 0; i < oh; ++i) {
      for (int j = 0; j < ow; ++j) {
        const float* win = xp + (2 * i) * w + 2 * j;
        float best = win[0];
        if (win[1] > best) best = win[1];
        if (win[w] > best) best = win[w];
        if (win[w + 1] > best) best = win[w + 1];
        yp[i * ow + j] = best;
      }
    }
  }
}

void maxpool2x2_backward_f32_ref(int planes, int h, int w, const float* x, const float* dy,
                                 float* dx) {
  ZT_CHECK(planes >= 0 && h >= 0 && w >= 0);
  const int oh = h / 2, ow = w / 2;
  for (int p = 0; p < planes; ++p) {
    const float* xp = x + static_cast<std::ptrdiff_t>(p) * h * w;
    const float* dyp = dy + static_cast<std::ptrdiff_t>(p) * oh * ow;
    float* dxp = dx + static_cast<std::ptrdiff_t>(p) * h * w;
    for (int i = 0; i < h * w; ++i) dxp[i] = 0.0f;
    for (int i = 0; i < oh; ++i) {
      for (int j = 0; j < ow; ++j) {
        const int base = (2 * i) * w + 2 * j;
        const int offs[4] = {0, 1, w, w + 1};
        int arg = base;
        float best = xp[base];
        for (int q = 1; q < 4; ++q) {
          if (xp[base + offs[q]] > best) {
            best = xp[base + offs[q]];
            arg = base + offs[q];
          }
        }
        dxp[arg] = dyp[i * ow + j];
      }
    }
  }
}

}  // namespace zt::kernels
