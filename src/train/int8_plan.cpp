// Integer-only (compiled with -mgeneral-regs-only in the aarch64 check build).
#include "zotrain/train/int8_plan.hpp"

#include <algorithm>
#include <string>

#include "zotrain/core/error.hpp"

namespace zt::train {

Int8Plan::Int8Plan(const nn::Int8Net& net, const Int8PlanOptions& o) {
  ZT_CHECK(o.partition >= 0 && o.partition <= net.num_parametric());
  ZT_CHECK(o.batch_size > 0 && o.threads > 0);
  seg = net.bp_segment_start(o.partition);
  keep_from = seg > 0 ? seg - 1 : 0;
  const auto B = static_cast<std::size_t>(o.batch_size);
  const int layers = net.size();

  // Lean tail: the per-point stack (nn/network_desc.hpp) ends PointLinear → ReLU → max over
  // points, wholly in the ZO part (forward only) or wholly in the backprop part.
  if (o.lean) {
    const nn::PointStack stack = nn::find_point_stack(net.describe());
    if (stack.found() && stack.between == std::vector{nn::LayerOp::kRelu} &&
        (stack.pool < seg || seg <= stack.tail))
      tail = stack.tail;
  }
  tail_bp = tail >= 0 && seg <= tail;
  // Deep streaming: the tail's whole int32 input error would be too large.
  deep = tail_bp && tail > seg &&
         B * net.layer(tail).in.numel() * sizeof(std::int32_t) > o.deep_stream_bytes;
  chunk_rows.assign(static_cast<std::size_t>(layers), 0);
  for (int i = 0; tail >= 0 && i < tail; ++i) {
    // A lower per-point product larger than a chunk: formed in two streamed passes, and only
    // its output is whole.
    const nn::Int8Layer& l = net.layer(i);
    if (l.op != nn::LayerOp::kPointLinear || B * l.out.numel() <= o.tail_chunk_elems) continue;
    const std::size_t width = static_cast<std::size_t>(l.out.dims.back());
    chunk_rows[static_cast<std::size_t>(i)] =
        std::min({B * static_cast<std::size_t>(l.out.dims.at(0)),
                  std::max<std::size_t>(1, o.tail_chunk_elems / width), kTailMaxRows});
  }
  relu_on_read.assign(static_cast<std::size_t>(layers), 0);
  for (int i = seg + 1; deep && i + 1 < layers; ++i)  // between two products of the backprop part
    relu_on_read[static_cast<std::size_t>(i)] =
        net.layer(i).op == nn::LayerOp::kRelu &&
        net.layer(i - 1).op == nn::LayerOp::kPointLinear &&
        (i + 1 == tail || chunk_rows[static_cast<std::size_t>(i + 1)] > 0);
  std::size_t pingpong = 0, acc = 0, scratch = 0, err = 0, norm_width = 0, relu_chunk = 0,
              grad_sum = 0;
  h_kept_.assign(static_cast<std::size_t>(layers), -1);
  for (int i = 0; i < layers; ++i) {
    const nn::Int8Layer& l = net.layer(i);
    const std::size_t out = B * l.out.numel();
    const std::size_t K = static_cast<std::size_t>(l.in.dims.back());
    const bool relu_in = i > 0 && relu_on_read[static_cast<std::size_t>(i - 1)];
    if (tail >= 0 && i >= tail && i < tail + 2) {  // streamed: a chunk of the product only
      const std::size_t width = static_cast<std::size_t>(l.out.dims.back());
      const std::size_t rows = B * static_cast<std::size_t>(l.out.dims.at(0));
      if (i == tail) {
        // At most kTailMaxRows rows, so a chunk's int32 weight gradient cannot saturate.
        tail_rows = std::min({rows, std::max<std::size_t>(1, o.tail_chunk_elems / width),
                              kTailMaxRows});
        acc = std::max(acc, tail_rows * width);
        if (i > seg) {  // the error into the tail's input [B, N, K]: whole unless deep
          acc = std::max(acc, deep ? tail_rows * K : B * l.in.numel());
          err = std::max(err, B * l.in.numel());
        }
        if (relu_in) relu_chunk = std::max(relu_chunk, tail_rows * K);
        if (tail_bp) grad_sum = std::max(grad_sum, l.weight_count);
      }
      continue;
    }
    const bool pool_of_tail = tail >= 0 && i == tail + 2;  // its input is never whole
    if (i < keep_from)
      pingpong = std::max(pingpong, out);
    else if (!relu_on_read[static_cast<std::size_t>(i)])
      h_kept_[static_cast<std::size_t>(i)] = arena_.reserve<std::int8_t>(l.name + " output (int8)", out);
    if (const std::size_t step = chunk_rows[static_cast<std::size_t>(i)]; step > 0) {
      acc = std::max(acc, step * static_cast<std::size_t>(l.out.dims.back()));
      if (i > seg) acc = std::max(acc, deep ? step * K : B * l.in.numel());  // its input error
      if (relu_in) relu_chunk = std::max(relu_chunk, step * K);
      if (deep && i >= seg) grad_sum = std::max(grad_sum, l.weight_count);
      if (l.norm) norm_width = std::max(norm_width, static_cast<std::size_t>(l.out.dims.back()));
    } else {
      acc = std::max(acc, net.acc_elems(i, o.batch_size));
    }
    scratch = std::max(scratch, net.scratch_bytes(i, o.batch_size, o.threads));
    if (i >= seg) err = std::max({err, pool_of_tail ? 0 : B * l.in.numel(), out});
  }
  if (pingpong > 0)
    for (int k = 0; k < 2; ++k)
      h_pingpong_[k] =
          arena_.reserve<std::int8_t>("ZO ping-pong " + std::to_string(k) + " (int8)", pingpong);
  h_acc_ = arena_.reserve<std::int32_t>("accumulator (int32)", acc);
  if (tail >= 0)
    h_tail_max_ = arena_.reserve<std::int32_t>("pool running max (int32)",
                                                B * net.layer(tail + 2).out.numel());
  if (tail >= 0 && net.layer(tail).norm)
    norm_width = std::max(norm_width, net.layer(tail + 2).out.numel());
  if (norm_width > 0) {
    h_tail_sums_ = arena_.reserve<std::int64_t>("BatchNorm sums (int64)", 2 * norm_width);
    h_tail_ext_ = arena_.reserve<std::int32_t>("BatchNorm extremes (int32)", 2 * norm_width);
  }
  if (tail_bp) {
    const nn::Int8Layer& l = net.layer(tail);
    const std::size_t chunk = tail_rows * static_cast<std::size_t>(l.out.dims.back());
    h_tail_prod_ = arena_.reserve<std::int32_t>("tail backward chunk product (int32)", chunk);
    h_tail_y_ = arena_.reserve<std::int8_t>("tail backward chunk output (int8)", chunk);
    h_tail_e_ = arena_.reserve<std::int8_t>("tail backward chunk error (int8)", chunk);
    if (l.norm)
      h_tail_coef_ = arena_.reserve<std::int64_t>("tail BatchNorm coefficients (int64)",
                                                  3 * static_cast<std::size_t>(l.out.dims.back()));
  }
  if (grad_sum > 0)
    h_grad_sum_ = arena_.reserve<std::int64_t>("streamed weight gradient (int64)", grad_sum);
  if (relu_chunk > 0) h_relu_chunk_ = arena_.reserve<std::int8_t>("ReLU chunk (int8)", relu_chunk);
  if (scratch > 0) h_scratch_ = arena_.reserve<std::int8_t>("conv scratch", scratch);  // bytes
  if (o.partition > 0)
    h_plus_ = arena_.reserve<std::int8_t>("+ pass logits (int8)", B * static_cast<std::size_t>(net.num_classes()));
  if (o.layer_backup && o.partition > 0) {
    std::size_t widest = 0;
    for (int p = 0; p < o.partition; ++p)
      widest = std::max(widest, net.layer(net.parametric_layer(p)).weight_count);
    h_backup_ = arena_.reserve<std::int8_t>("probed layer's weights (int8)", widest);
  }
  if (seg < layers) {
    std::size_t grad = 0;
    for (int i = seg; i < layers; ++i) grad = std::max(grad, net.layer(i).weight_count);
    h_grad_ = arena_.reserve<std::int32_t>("weight gradient (int32)", grad);
    for (int k = 0; k < 2; ++k)
      h_err_[k] = arena_.reserve<std::int8_t>("error " + std::to_string(k) + " (int8)", err);
  }
}

std::int8_t* Int8Plan::output(int i) const {
  const int h = i < keep_from ? h_pingpong_[i % 2] : h_kept_[static_cast<std::size_t>(i)];
  return h >= 0 ? arena_.get<std::int8_t>(h) : nullptr;
}

}  // namespace zt::train
