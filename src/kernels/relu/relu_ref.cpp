// Reference ReLU: the plain loops, the definition of correct.
#include "zotrain/kernels/relu.hpp"

namespace zt::kernels {

void relu_forward_f32_ref(std::size_t n, const float* x, float* y) {
  for (std::size_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void relu_backward_f32_ref(std::size_t n, const float* y, const float* dy, float* dx) {
  for (std::size_t i = 0; i < n; ++i) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

}  // namespace zt::kernels
