// The optimised int8 convolution (every path but the reference), each path on its own
// micro-kernel (linear_s8/gemm_s8_internal.hpp), one sample at a time, samples split over threads (each thread owns a scratch slot).
//
// Forward and input gradient: direct correlation on a "canvas". The input planes are laid out
// zero-padded with row stride wc = W + 2·pad (forward: x padded by pad; input gradient: e placed
// so that every flipped tap lands inside), and an output position is a canvas index
// P = row·wc + col, so a kernel tap (ky, kx) is a constant shift of P. The reduction runs over
// quads of 4 terms that share one 32-bit word of an "expanded" plane (an interleave of 4 shifted
// copies of the input): either 4 channels at one tap (channel quads), or 4 neighbouring taps of
// one kernel row or column of one channel (row/column quads: k = 5 covers its 25 taps with 7
// quads), whichever costs less. Lanes are 16 consecutive canvas positions, so the B vector of a
// quad is a plain unaligned load from an expanded plane; rows are output channels (forward) or
// input channels (input gradient), the weights are packed once per call as the broadcast
// operand, and the k − 1 dropped columns past each output row are skipped by the store.
//
// Weight gradient, two forms chosen by the number of vector products:
//   lanes: g[o][c,ky,kx] = Σ_P ecanvas[o][P] · xpad[c][P + ky·wc + kx] with rows = the C·k·k
//     taps (broadcast words of 4 consecutive positions, read straight from the padded x) and
//     lanes = output channels (e packed [position quad][o][4]); a thread adds its samples in
//     int32 (at most kMaxTerms products) before moving the sums into an int64 partial.
//   dot (few output channels, long rows: LeNet conv1): both operands are 64-byte runs of canvas
//     positions (x + 128 and e), 16 lane partial sums per (o, tap) kept across samples and
//     reduced into int64 every few samples.
// The threads' int64 partials are added and saturated to int32 at the end.
//
// Layout: conv2d_s8_canvas.cpp (forward, input gradient), conv2d_s8_dw.cpp (weight gradient),
// conv2d_s8_internal.hpp (their scratch helpers); here the checks, the scratch size and each
// path's public functions.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "conv2d_s8_internal.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/kernels/conv2d_s8.hpp"
#include "../select_isa.hpp"

namespace zt::kernels {
namespace s8 {

namespace {

// The canvas correlation's checks: C·k·k (forward) or O·k·k (input gradient) products in one
// int32 sum.
void checked_canvas_conv(const MicroKernel& micro, const Conv2dShape& s, bool dx, const std::int8_t* in,
                         const std::int8_t* w, std::int32_t* out, void* scratch) {
  detail::check_conv2d_shape(s);
  ZT_CHECK_MSG(static_cast<std::int64_t>(dx ? s.out_c : s.in_c) * s.kernel * s.kernel <= kMaxTerms,
               dx ? "conv2d_s8: O·k·k > 65536 could overflow int32" : "conv2d_s8: C·k·k > 65536 could overflow int32");
  if (s.batch == 0) return;
  ZT_CHECK(scratch != nullptr);
  canvas_conv(micro, s, dx, in, w, out, scratch);
}

}  // namespace

bool conv_dw_uses_dot(const Conv2dShape& s) {
  detail::check_conv2d_shape(s);
  return dw_dot(s);
}

bool conv_uses_channel_quads(const Conv2dShape& s, bool backward_input) {
  detail::check_conv2d_shape(s);
  return channel_quads(s, backward_input);
}

void conv2d_forward(const MicroKernel& micro, const Conv2dShape& s, const std::int8_t* x, const std::int8_t* w,
                    std::int32_t* y, void* scratch) {
  checked_canvas_conv(micro, s, false, x, w, y, scratch);
}

void conv2d_backward_input(const MicroKernel& micro, const Conv2dShape& s, const std::int8_t* e,
                           const std::int8_t* w, std::int32_t* dx, void* scratch) {
  checked_canvas_conv(micro, s, true, e, w, dx, scratch);
}

void conv2d_backward_weights(const MicroKernel& micro, const Conv2dShape& s, const std::int8_t* x,
                             const std::int8_t* e, std::int32_t* g, void* scratch) {
  detail::check_conv2d_shape(s);
  if (s.batch == 0) {
    std::fill_n(g, static_cast<ptrdiff_t>(s.out_c) * s.in_c * s.kernel * s.kernel, 0);
    return;
  }
  ZT_CHECK(scratch != nullptr);
  weight_gradient(micro, s, x, e, g, aligned_base(scratch));
}

}  // namespace s8

std::size_t conv2d_s8_scratch_bytes(const Conv2dShape& s, int threads) {
  detail::check_conv2d_shape(s);
  ZT_CHECK(threads >= 1);
  if (s.batch == 0) return 0;
  const s8::ptrdiff_t need = std::max({s8::canvas_scratch(s, false, threads), s8::canvas_scratch(s, true, threads),
                                       s8::weight_gradient_scratch(s, threads)});
  return static_cast<std::size_t>(need + s8::kAlign);  // + room to align the base
}

// The public functions of each path: the drivers above on that path's micro-kernel.
#define ZT_CONV2D_S8_PATH(path)                                                                    \
  void conv2d_forward_s8_##path(const Conv2dShape& s, const std::int8_t* x, const std::int8_t* w,  \
                                std::int32_t* y, void* scratch) {                                  \
    s8::conv2d_forward(s8::micro_kernel_##path, s, x, w, y, scratch);                              \
  }                                                                                                \
  void conv2d_backward_input_s8_##path(const Conv2dShape& s, const std::int8_t* e,                 \
                                       const std::int8_t* w, std::int32_t* dx, void* scratch) {    \
    s8::conv2d_backward_input(s8::micro_kernel_##path, s, e, w, dx, scratch);                      \
  }                                                                                                \
  void conv2d_backward_weights_s8_##path(const Conv2dShape& s, const std::int8_t* x,               \
                                         const std::int8_t* e, std::int32_t* g, void* scratch) {   \
    s8::conv2d_backward_weights(s8::micro_kernel_##path, s, x, e, g, scratch);                     \
  }
ZT_FOR_EACH_S8_PATH(ZT_CONV2D_S8_PATH)
#undef ZT_CONV2D_S8_PATH

ZT_DEFINE_SELECT_DOT(Conv2dForwardS8Fn, conv2d_forward_s8)
ZT_DEFINE_SELECT_DOT(Conv2dBackwardInputS8Fn, conv2d_backward_input_s8)
ZT_DEFINE_SELECT_DOT(Conv2dBackwardWeightsS8Fn, conv2d_backward_weights_s8)

}  // namespace zt::kernels
