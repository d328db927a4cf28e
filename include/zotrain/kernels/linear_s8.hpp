// Int8 × int8 → int32 products of a linear layer without bias, all row-major, exact:
//   forward:          y[B,N]  = Σ_k x[B,K] · w[N,K]
//   backward_input:   dx[B,K] = Σ_n e[B,N] · w[N,K]
//   backward_weights: g[N,K]  = Σ_b e[B,N] · x[B,K]  (accumulated in int64, saturated to int32)
// Operands are int8 values in [−127, 127], the int8 range of the NITI numerics (quant.hpp);
// −128 is outside the contract (the A53 kernel adds two products in one int16, which
// 2·(−128)² overflows). Outputs are overwritten. Integer sums are exact, so every path and
// thread count gives the same result. Large calls split work across OpenMP threads (serial inside a parallel region).
// No aliasing between inputs and outputs. Unlike gemm_f32 (gemm.hpp) there is no accumulate
// flag: g is summed in int64 and saturated to int32 once, and NITI's update consumes it at once
// (Int8Net::backward), so no caller adds into an output (FP32 does: its trainer adds two passes'
// gradients); see conv2d_s8.hpp.
#pragma once

#include <cstdint>

#include "zotrain/kernels/isa.hpp"

namespace zt::kernels {

using LinearForwardS8Fn = void (*)(int B, int N, int K, const std::int8_t* x,
                                   const std::int8_t* w, std::int32_t* y);
using LinearBackwardInputS8Fn = void (*)(int B, int N, int K, const std::int8_t* e,
                                         const std::int8_t* w, std::int32_t* dx);
using LinearBackwardWeightsS8Fn = void (*)(int B, int N, int K, const std::int8_t* e,
                                           const std::int8_t* x, std::int32_t* g);

void linear_forward_s8_ref(int B, int N, int K, const std::int8_t* x, const std::int8_t* w,
                           std::int32_t* y);
void linear_backward_input_s8_ref(int B, int N, int K, const std::int8_t* e,
                                  const std::int8_t* w, std::int32_t* dx);
void linear_backward_weights_s8_ref(int B, int N, int K, const std::int8_t* e,
                                    const std::int8_t* x, std::int32_t* g);
void linear_forward_s8_portable(int B, int N, int K, const std::int8_t* x, const std::int8_t* w,
                                std::int32_t* y);
void linear_backward_input_s8_portable(int B, int N, int K, const std::int8_t* e,
                                       const std::int8_t* w, std::int32_t* dx);
void linear_backward_weights_s8_portable(int B, int N, int K, const std::int8_t* e,
                                         const std::int8_t* x, std::int32_t* g);

// NEON paths (ARM builds only): the portable drivers on the NEON micro-kernels, vmull_s8 +
// vpadalq_s16 (_neon) or SDOT (_neon_dot, aarch64 CPUs with the dot product).
void linear_forward_s8_neon(int B, int N, int K, const std::int8_t* x, const std::int8_t* w,
                            std::int32_t* y);
void linear_backward_input_s8_neon(int B, int N, int K, const std::int8_t* e,
                                   const std::int8_t* w, std::int32_t* dx);
void linear_backward_weights_s8_neon(int B, int N, int K, const std::int8_t* e,
                                     const std::int8_t* x, std::int32_t* g);
void linear_forward_s8_neon_dot(int B, int N, int K, const std::int8_t* x, const std::int8_t* w,
                                std::int32_t* y);
void linear_backward_input_s8_neon_dot(int B, int N, int K, const std::int8_t* e,
                                       const std::int8_t* w, std::int32_t* dx);
void linear_backward_weights_s8_neon_dot(int B, int N, int K, const std::int8_t* e,
                                         const std::int8_t* x, std::int32_t* g);

// AVX-512 VNNI paths (x86-64 GCC builds only): the portable drivers on the vpdpbusd micro-kernels.
void linear_forward_s8_avx512_vnni(int B, int N, int K, const std::int8_t* x, const std::int8_t* w,
                                   std::int32_t* y);
void linear_backward_input_s8_avx512_vnni(int B, int N, int K, const std::int8_t* e,
                                          const std::int8_t* w, std::int32_t* dx);
void linear_backward_weights_s8_avx512_vnni(int B, int N, int K, const std::int8_t* e,
                                            const std::int8_t* x, std::int32_t* g);
// AVX2 paths (x86-64 builds): the portable drivers on the vpmaddwd micro-kernels.
void linear_forward_s8_avx2(int B, int N, int K, const std::int8_t* x, const std::int8_t* w,
                            std::int32_t* y);
void linear_backward_input_s8_avx2(int B, int N, int K, const std::int8_t* e,
                                   const std::int8_t* w, std::int32_t* dx);
void linear_backward_weights_s8_avx2(int B, int N, int K, const std::int8_t* e,
                                     const std::int8_t* x, std::int32_t* g);

// kReference → _ref; kPortable → _portable (the plain-loop micro-kernel on every machine);
// kNeon → _neon, kNeonDot → _neon_dot, kAvx512Vnni → _avx512_vnni and kAvx2 → _avx2 where
// built (else the portable path).
LinearForwardS8Fn select_linear_forward_s8(Isa isa);
LinearBackwardInputS8Fn select_linear_backward_input_s8(Isa isa);
LinearBackwardWeightsS8Fn select_linear_backward_weights_s8(Isa isa);

}  // namespace zt::kernels
