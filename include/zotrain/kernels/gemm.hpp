// FP32 matrix product, row-major:  C[M,N] = (accumulate ? C : 0) + op(A)[M,K] · op(B)[K,N],
// op(A) = A (A is [M,K], lda ≥ K) or Aᵀ (A is [K,M], lda ≥ M); likewise B.
// C must not alias A or B. Parallel (OpenMP) over output blocks only, never over K, so the
// result is bit-identical for any thread count; runs serially when called inside a parallel
// region. NaN propagates as IEEE arithmetic does.
#pragma once

#include "zotrain/kernels/isa.hpp"

namespace zt::kernels {

// The fast paths (portable, NEON) block K from 0 in steps of this depth, adding each block's
// products into C in order: splitting K at multiples of it into calls with accumulate = true
// gives the same bits. (The reference sums all of K in double, so it does not.)
inline constexpr int kGemmDepthBlock = 512;

using GemmF32Fn = void (*)(bool trans_a, bool trans_b, int m, int n, int k, const float* a,
                           int lda, const float* b, int ldb, float* c, int ldc, bool accumulate);

void gemm_f32_ref(bool trans_a, bool trans_b, int m, int n, int k, const float* a, int lda,
                  const float* b, int ldb, float* c, int ldc, bool accumulate);
void gemm_f32_portable(bool trans_a, bool trans_b, int m, int n, int k, const float* a, int lda,
                       const float* b, int ldb, float* c, int ldc, bool accumulate);

GemmF32Fn select_gemm_f32(Isa isa);

}  // namespace zt::kernels
