// Reference GEMM: the plain triple loop, accumulated in double. This is the definition of
// correct that the portable (and NEON) paths are tested against.
#include "zotrain/core/error.hpp"
#include "zotrain/kernels/gemm.hpp"

namespace zt::kernels {

void gemm_f32_ref(bool trans_a, bool trans_b, int m, int n, int k, const float* a, int lda,
                  const float* b, int ldb, float* c, int ldc, bool accumulate) {
  ZT_CHECK(m >= 0 && n >= 0 && k >= 0);
  ZT_CHECK(ldc >= n);
  ZT_CHECK(lda >= (trans_a ? m : k) && ldb >= (trans_b ? k : n));
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double sum = 0.0;
      for (int p = 0; p < k; ++p) {
        const float av = trans_a ? a[static_cast<long>(p) * lda + i] : a[static_cast<long>(i) * lda + p];
        const float bv = trans_b ? b[static_cast<long>(j) * ldb + p] : b[static_cast<long>(p) * ldb + j];
        sum += static_cast<double>(av) * static_cast<double>(bv);
      }
      float& out = c[static_cast<long>(i) * ldc + j];
      out = accumulate ? static_cast<float>(static_cast<double>(out) + sum) : static_cast<float>(sum);
    }
  }
}

}  // namespace zt::kernels
