// FP32 max-pool 2x2 stride 2, NCHW, H and W even... or odd (the last row/column is dropped, as
// PyTorch's floor mode does). forward: y[B,C,H/2,W/2] = max of each window.
// backward: dx[B,C,H,W] = 0 except dx[first maximum of each window, row-major] = dy; the
// maximum is recomputed from x (no index buffer). Scan order 00,01,10,11 with `v > best`
// starting from the first element: a NaN never replaces a value, a NaN (or −0) in first place
// is kept, ties keep the first (so −0 before +0 gives −0). Every path is bit-exact with the
// reference (the NEON path uses compare + select, never vmaxq_f32, which differs on NaN/−0).
#pragma once

#include "zotrain/kernels/isa.hpp"

namespace zt::kernels {

using MaxPoolForwardF32Fn = void (*)(int planes, int h, int w, const float* x, float* y);
using MaxPoolBackwardF32Fn = void (*)(int planes, int h, int w, const float* x,
                                      const float* dy, float* dx);

// planes = B·C; x is [planes, h, w], y and dy are [planes, h/2, w/2], dx is [planes, h, w].
void maxpool2x2_forward_f32_ref(int planes, int h, int w, const float* x, float* y);
void maxpool2x2_backward_f32_ref(int planes, int h, int w, const float* x, const float* dy,
                                 float* dx);
void maxpool2x2_forward_f32_portable(int planes, int h, int w, const float* x, float* y);
void maxpool2x2_backward_f32_portable(int planes, int h, int w, const float* x, const float* dy,
                                      float* dx);
#if defined(ZT_HAVE_NEON)  // built for ARM targets only (CMakeLists.txt)
void maxpool2x2_forward_f32_neon(int planes, int h, int w, const float* x, float* y);
void maxpool2x2_backward_f32_neon(int planes, int h, int w, const float* x, const float* dy,
                                  float* dx);
#endif

// kNeon and kNeonDot select the NEON functions where they are built, else the portable ones.
MaxPoolForwardF32Fn select_maxpool2x2_forward_f32(Isa isa);
MaxPoolBackwardF32Fn select_maxpool2x2_backward_f32(Isa isa);

}  // namespace zt::kernels
