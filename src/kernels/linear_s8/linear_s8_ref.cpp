// Reference int8 linear products: plain loops, the definition of correct. A sum of at most
// 65536 int8 products fits int32 (65536 · 128² = 2^30), hence the checks on K and N; the weight
// gradient sums over the batch in int64 and saturates to int32.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "zotrain/core/error.hpp"
#include "zotrain/kernels/linear_s8.hpp"

namespace zt::kernels {
namespace {

constexpr int kMaxDepth = 65536;

std::int32_t saturate(std::int64_t v) {
  return static_cast<std::int32_t>(std::clamp<std::int64_t>(v, INT32_MIN, INT32_MAX));
}

}  // namespace

void linear_forward_s8_ref(int B, int N, int K, const std::int8_t* x, const std::int8_t* w,
                           std::int32_t* y) {
  ZT_CHECK(B >= 0 && N >= 0 && K >= 0 && K <= kMaxDepth);
  for (int b = 0; b < B; ++b)
    for (int n = 0; n < N; ++n) {
      std::int32_t acc = 0;
      for (int k = 0; k < K; ++k)
        acc += std::int32_t{x[static_cast<std::ptrdiff_t>(b) * K + k]} * w[static_cast<std::ptrdiff_t>(n) * K + k];
      y[static_cast<std::ptrdiff_t>(b) * N + n] = acc;
    }
}

void linear_backward_input_s8_ref(int B, int N, int K, const std::int8_t* e,
                                  const std::int8_t* w, std::int32_t* dx) {
  ZT_CHECK(B >= 0 && N >= 0 && K >= 0 && N <= kMaxDepth);
  for (int b = 0; b < B; ++b)
    for (int k = 0; k < K; ++k) {
      std::int32_t acc = 0;
      for (int n = 0; n < N; ++n)
        acc += std::int32_t{e[static_cast<std::ptrdiff_t>(b) * N + n]} * w[static_cast<std::ptrdiff_t>(n) * K + k];
      dx[static_cast<std::ptrdiff_t>(b) * K + k] = acc;
    }
}

void linear_backward_weights_s8_ref(int B, int N, int K, const std::int8_t* e,
                                    const std::int8_t* x, std::int32_t* g) {
  ZT_CHECK(B >= 0 && N >= 0 && K >= 0);
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k) {
      std::int64_t acc = 0;
      for (int b = 0; b < B; ++b)
        acc += std::int32_t{e[static_cast<std::ptrdiff_t>(b) * N + n]} * x[static_cast<std::ptrdiff_t>(b) * K + k];
      g[static_cast<std::ptrdiff_t>(n) * K + k] = saturate(acc);
    }
}

}  // namespace zt::kernels
