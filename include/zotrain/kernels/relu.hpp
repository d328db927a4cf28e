// FP32 ReLU, elementwise over n values. forward: y = x > 0 ? x : +0.0f (so −0.0 and NaN map to
// +0.0). backward: dx = y > 0 ? dy : +0.0f, using the forward *output* y. In-place allowed
// (y == x, dx == dy).
#pragma once

#include <cstddef>

#include "zotrain/kernels/isa.hpp"

namespace zt::kernels {

using ReluForwardF32Fn = void (*)(std::size_t n, const float* x, float* y);
using ReluBackwardF32Fn = void (*)(std::size_t n, const float* y, const float* dy, float* dx);

void relu_forward_f32_ref(std::size_t n, const float* x, float* y);
void relu_backward_f32_ref(std::size_t n, const float* y, const float* dy, float* dx);
void relu_forward_f32_portable(std::size_t n, const float* x, float* y);
void relu_backward_f32_portable(std::size_t n, const float* y, const float* dy, float* dx);

ReluForwardF32Fn select_relu_forward_f32(Isa isa);
ReluBackwardF32Fn select_relu_backward_f32(Isa isa);

}  // namespace zt::kernels
