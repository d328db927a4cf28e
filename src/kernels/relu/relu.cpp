// Portable ReLU: the same select as the reference in a loop GCC vectorises (no __restrict:
// in-place use is allowed); large arrays are split across threads (elementwise, so the
// result does not depend on the thread count).
#include <cstddef>

#include "zotrain/kernels/relu.hpp"
#include "../chunked_parallel.hpp"
#include "../select_isa.hpp"

namespace zt::kernels {
namespace {

// Elementwise threading (../chunked_parallel.hpp): fork from this many elements, in pieces.
using Chunks = detail::Chunking<std::size_t{1} << 16, 4096>;

inline void relu_fwd_span(std::size_t n, const float* x, float* y) {
  for (std::size_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

inline void relu_bwd_span(std::size_t n, const float* y, const float* dy, float* dx) {
  for (std::size_t i = 0; i < n; ++i) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

}  // namespace

void relu_forward_f32_portable(std::size_t n, const float* x, float* y) {
  Chunks::for_each(n, [&](std::size_t b, std::size_t len) { relu_fwd_span(len, x + b, y + b); });
}

void relu_backward_f32_portable(std::size_t n, const float* y, const float* dy, float* dx) {
  Chunks::for_each(n, [&](std::size_t b, std::size_t len) {
    relu_bwd_span(len, y + b, dy + b, dx + b);
  });
}

ZT_DEFINE_SELECT(ReluForwardF32Fn, relu_forward_f32)
ZT_DEFINE_SELECT(ReluBackwardF32Fn, relu_backward_f32)

}  // namespace zt::kernels
