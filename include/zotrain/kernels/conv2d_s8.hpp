// Int8 × int8 → int32 products of a 2-D convolution without bias, NCHW, square kernel,
// stride 1, symmetric zero padding (geometry: Conv2dShape from conv2d.hpp), exact:
//   forward:          y[B,O,OH,OW]  = Σ_{c,i,j} w[O,C,k,k] · x[B,C,H+pad,W+pad]
//   backward_input:   dx[B,C,H,W]   = transposed convolution of e[B,O,OH,OW] with w
//   backward_weights: g[O,C,k,k]    = Σ_b Σ_{oh,ow} e · x  (int64 accumulation, saturated to int32)
// Operands are int8 values in [−127, 127], as for linear_s8.hpp. Outputs are overwritten.
// `scratch` holds conv2d_s8_scratch_bytes(s, threads) bytes, where
// `threads` ≥ the OpenMP threads the call may use (omp_get_max_threads()). Exact, so every
// path and thread count gives the same result. No aliasing between inputs and outputs.
// Unlike the FP32 backward (conv2d.hpp: one call, dw and db accumulated), the two gradients are
// separate calls, like the linear_s8 products: dx is the forward's canvas correlation run on e
// and dW packs x and e its own way, so they share no work a fused call could save, and they share
// the scratch one after the other. g is overwritten, not accumulated: it is summed in int64 and
// saturated to int32 once, and NITI's update consumes it at once (Int8Net::backward), so no caller
// adds gradients; accumulating would cost the caller a zeroing pass per step and mean saturating
// g + Σ instead of Σ. (FP32 accumulates because its trainer adds two passes' gradients.)
#pragma once

#include <cstddef>
#include <cstdint>

#include "zotrain/kernels/conv2d.hpp"
#include "zotrain/kernels/isa.hpp"

namespace zt::kernels {

std::size_t conv2d_s8_scratch_bytes(const Conv2dShape& s, int threads);

using Conv2dForwardS8Fn = void (*)(const Conv2dShape& s, const std::int8_t* x,
                                   const std::int8_t* w, std::int32_t* y, void* scratch);
using Conv2dBackwardInputS8Fn = void (*)(const Conv2dShape& s, const std::int8_t* e,
                                         const std::int8_t* w, std::int32_t* dx, void* scratch);
using Conv2dBackwardWeightsS8Fn = void (*)(const Conv2dShape& s, const std::int8_t* x,
                                           const std::int8_t* e, std::int32_t* g, void* scratch);

void conv2d_forward_s8_ref(const Conv2dShape& s, const std::int8_t* x, const std::int8_t* w,
                           std::int32_t* y, void* scratch);
void conv2d_backward_input_s8_ref(const Conv2dShape& s, const std::int8_t* e,
                                  const std::int8_t* w, std::int32_t* dx, void* scratch);
void conv2d_backward_weights_s8_ref(const Conv2dShape& s, const std::int8_t* x,
                                    const std::int8_t* e, std::int32_t* g, void* scratch);
void conv2d_forward_s8_portable(const Conv2dShape& s, const std::int8_t* x, const std::int8_t* w,
                                std::int32_t* y, void* scratch);
void conv2d_backward_input_s8_portable(const Conv2dShape& s, const std::int8_t* e,
                                       const std::int8_t* w, std::int32_t* dx, void* scratch);
void conv2d_backward_weights_s8_portable(const Conv2dShape& s, const std::int8_t* x,
                                         const std::int8_t* e, std::int32_t* g, void* scratch);

// NEON paths (ARM builds only): the portable algorithms on the NEON micro-kernels, vmull_s8 +
// vpadalq_s16 (_neon) or SDOT (_neon_dot, aarch64 CPUs with the dot product).
void conv2d_forward_s8_neon(const Conv2dShape& s, const std::int8_t* x, const std::int8_t* w,
                            std::int32_t* y, void* scratch);
void conv2d_backward_input_s8_neon(const Conv2dShape& s, const std::int8_t* e,
                                   const std::int8_t* w, std::int32_t* dx, void* scratch);
void conv2d_backward_weights_s8_neon(const Conv2dShape& s, const std::int8_t* x,
                                     const std::int8_t* e, std::int32_t* g, void* scratch);
void conv2d_forward_s8_neon_dot(const Conv2dShape& s, const std::int8_t* x, const std::int8_t* w,
                                std::int32_t* y, void* scratch);
void conv2d_backward_input_s8_neon_dot(const Conv2dShape& s, const std::int8_t* e,
                                       const std::int8_t* w, std::int32_t* dx, void* scratch);
void conv2d_backward_weights_s8_neon_dot(const Conv2dShape& s, const std::int8_t* x,
                                         const std::int8_t* e, std::int32_t* g, void* scratch);

// AVX-512 VNNI paths (x86-64 GCC builds only): the portable algorithms on the vpdpbusd
// micro-kernels.
void conv2d_forward_s8_avx512_vnni(const Conv2dShape& s, const std::int8_t* x, const std::int8_t* w,
                                   std::int32_t* y, void* scratch);
void conv2d_backward_input_s8_avx512_vnni(const Conv2dShape& s, const std::int8_t* e,
                                          const std::int8_t* w, std::int32_t* dx, void* scratch);
void conv2d_backward_weights_s8_avx512_vnni(const Conv2dShape& s, const std::int8_t* x,
                                            const std::int8_t* e, std::int32_t* g, void* scratch);
// AVX2 paths (x86-64 builds): the portable algorithms on the vpmaddwd micro-kernels.
void conv2d_forward_s8_avx2(const Conv2dShape& s, const std::int8_t* x, const std::int8_t* w,
                            std::int32_t* y, void* scratch);
void conv2d_backward_input_s8_avx2(const Conv2dShape& s, const std::int8_t* e,
                                   const std::int8_t* w, std::int32_t* dx, void* scratch);
void conv2d_backward_weights_s8_avx2(const Conv2dShape& s, const std::int8_t* x,
                                     const std::int8_t* e, std::int32_t* g, void* scratch);

// kReference → _ref; kPortable → _portable (the plain-loop micro-kernel on every machine);
// kNeon → _neon, kNeonDot → _neon_dot, kAvx512Vnni → _avx512_vnni and kAvx2 → _avx2 where
// built (else the portable path).
Conv2dForwardS8Fn select_conv2d_forward_s8(Isa isa);
Conv2dBackwardInputS8Fn select_conv2d_backward_input_s8(Isa isa);
Conv2dBackwardWeightsS8Fn select_conv2d_backward_weights_s8(Isa isa);

}  // namespace zt::kernels
