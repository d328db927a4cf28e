// FP32 2-D convolution, NCHW, square kernel, stride 1, symmetric zero padding.
//   forward:  y[B,O,OH,OW] = Σ_{c,i,j} w[O,C,k,k] · x[B,C,H+pad,W+pad] + bias[O] (bias may be null)
//   backward: dx[B,C,H,W] = conv_transposed(dy, w) (skipped when dx is null);
//             dw[O,C,k,k] += Σ_b ..., db[O] += Σ_b Σ_hw dy (db may be null) — accumulate.
// `scratch` must hold conv2d_scratch_floats(shape) floats. Bit-identical for any thread count
// (batch-parallel work is reduced in a fixed order). No aliasing between arguments. Paths differ
// only in rounding (FMA or not, in double or not): within 4·FLT_EPSILON·√K·max|ref| of the
// reference, K the reduction depth. Every path needs the same scratch.
#pragma once

#include <cstddef>

#include "zotrain/kernels/isa.hpp"

namespace zt::kernels {

struct Conv2dShape {
  int batch = 1, in_c = 1, in_h = 1, in_w = 1, out_c = 1, kernel = 1, pad = 0;
  int out_h() const { return in_h + 2 * pad - kernel + 1; }
  int out_w() const { return in_w + 2 * pad - kernel + 1; }
};

std::size_t conv2d_scratch_floats(const Conv2dShape& s);

using Conv2dForwardF32Fn = void (*)(const Conv2dShape& s, const float* x, const float* w,
                                    const float* bias, float* y, float* scratch);
using Conv2dBackwardF32Fn = void (*)(const Conv2dShape& s, const float* x, const float* w,
                                     const float* dy, float* dx, float* dw, float* db,
                                     float* scratch);

void conv2d_forward_f32_ref(const Conv2dShape& s, const float* x, const float* w,
                            const float* bias, float* y, float* scratch);
void conv2d_backward_f32_ref(const Conv2dShape& s, const float* x, const float* w,
                             const float* dy, float* dx, float* dw, float* db, float* scratch);
void conv2d_forward_f32_portable(const Conv2dShape& s, const float* x, const float* w,
                                 const float* bias, float* y, float* scratch);
void conv2d_backward_f32_portable(const Conv2dShape& s, const float* x, const float* w,
                                  const float* dy, float* dx, float* dw, float* db,
                                  float* scratch);
#if defined(ZT_HAVE_NEON)  // built for ARM targets only (CMakeLists.txt)
void conv2d_forward_f32_neon(const Conv2dShape& s, const float* x, const float* w,
                             const float* bias, float* y, float* scratch);
void conv2d_backward_f32_neon(const Conv2dShape& s, const float* x, const float* w,
                              const float* dy, float* dx, float* dw, float* db, float* scratch);
#endif

// kNeon and kNeonDot select the NEON functions where they are built, else the portable ones.
Conv2dForwardF32Fn select_conv2d_forward_f32(Isa isa);
Conv2dBackwardF32Fn select_conv2d_backward_f32(Isa isa);

}  // namespace zt::kernels
