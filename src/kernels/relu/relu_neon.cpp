// NEON ReLU: a compare mask ANDed onto the bits (x > 0 ? x : +0 exactly as the reference, so
// −0.0 and NaN give +0.0; vmaxq_f32 would pass NaN through). 16 values per step, then 4; the
// last n % 4 go to the reference loop. Large arrays are split across threads like the portable
// path (elementwise, so the result does not depend on the thread count).
#include <arm_neon.h>

#include <cstddef>

#include "zotrain/kernels/relu.hpp"
#include "../chunked_parallel.hpp"

namespace zt::kernels {
namespace {

constexpr std::size_t kParallelMin = std::size_t{1} << 16;  // elements before forking
constexpr std::size_t kChunk = 4096;                         // elements per work item

// keep ? v : +0, as bits.
inline float32x4_t mask_or_zero(uint32x4_t keep, float32x4_t v) {
  return vreinterpretq_f32_u32(vandq_u32(keep, vreinterpretq_u32_f32(v)));
}

void relu_fwd_span(std::size_t n, const float* x, float* y) {
  const float32x4_t zero = vdupq_n_f32(0.0f);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    float32x4_t v[4];
    for (int j = 0; j < 4; ++j) v[j] = vld1q_f32(x + i + 4 * j);
    for (int j = 0; j < 4; ++j) vst1q_f32(y + i + 4 * j, mask_or_zero(vcgtq_f32(v[j], zero), v[j]));
  }
  for (; i + 4 <= n; i += 4) {
    const float32x4_t v = vld1q_f32(x + i);
    vst1q_f32(y + i, mask_or_zero(vcgtq_f32(v, zero), v));
  }
  relu_forward_f32_ref(n - i, x + i, y + i);
}

void relu_bwd_span(std::size_t n, const float* y, const float* dy, float* dx) {
  const float32x4_t zero = vdupq_n_f32(0.0f);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    uint32x4_t keep[4];
    float32x4_t g[4];
    for (int j = 0; j < 4; ++j) keep[j] = vcgtq_f32(vld1q_f32(y + i + 4 * j), zero);
    for (int j = 0; j < 4; ++j) g[j] = vld1q_f32(dy + i + 4 * j);
    for (int j = 0; j < 4; ++j) vst1q_f32(dx + i + 4 * j, mask_or_zero(keep[j], g[j]));
  }
  for (; i + 4 <= n; i += 4)
    vst1q_f32(dx + i, mask_or_zero(vcgtq_f32(vld1q_f32(y + i), zero), vld1q_f32(dy + i)));
  relu_backward_f32_ref(n - i, y + i, dy + i, dx + i);
}

}  // namespace

void relu_forward_f32_neon(std::size_t n, const float* x, float* y) {
  detail::for_each_chunk(n, kParallelMin, kChunk,
                         [&](std::size_t b, std::size_t len) { relu_fwd_span(len, x + b, y + b); });
}

void relu_backward_f32_neon(std::size_t n, const float* y, const float* dy, float* dx) {
  detail::for_each_chunk(n, kParallelMin, kChunk, [&](std::size_t b, std::size_t len) {
    relu_bwd_span(len, y + b, dy + b, dx + b);
  });
}

}  // namespace zt::kernels
