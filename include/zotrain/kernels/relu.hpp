// FP32 ReLU, elementwise over n values. forward: y = x > 0 ? x : +0.0f (so −0.0 and NaN map to
// +0.0). backward: dx = y > 0 ? dy : +0.0f, using the forward *output* y. In-place allowed
// (y == x, dx == dy). Every path is bit-exact with the reference (the NEON path masks with a
// compare, never vmaxq_f32, which would keep NaN and differs from std::max on −0.0).
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
#if defined(ZT_HAVE_NEON)  // built for ARM targets only (CMakeLists.txt)
void relu_forward_f32_neon(std::size_t n, const float* x, float* y);
void relu_backward_f32_neon(std::size_t n, const float* y, const float* dy, float* dx);
#endif

// kNeon and kNeonDot select the NEON functions where they are built, else the portable ones.
ReluForwardF32Fn select_relu_forward_f32(Isa isa);
ReluBackwardF32Fn select_relu_backward_f32(Isa isa);

}  // namespace zt::kernels
