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
  std::size_t pingpong = 0, acc = 0, scratch = 0, err = 0, norm_width = 0;
  h_kept_.assign(static_cast<std::size_t>(layers), -1);
  chunk_rows.assign(static_cast<std::size_t>(layers), 0);
  for (int i = 0; i < layers; ++i) {
    const nn::Int8Layer& l = net.layer(i);
    const std::size_t out = B * l.out.numel();
    if (tail >= 0 && i >= tail && i < tail + 2) {  // streamed: a chunk of the product only
      const std::size_t width = static_cast<std::size_t>(l.out.dims.back());
      const std::size_t rows = B * static_cast<std::size_t>(l.out.dims.at(0));
      if (i == tail) {
        // At most kTailMaxRows rows, so a chunk's int32 weight gradient cannot saturate.
        tail_rows = std::min({rows, std::max<std::size_t>(1, o.tail_chunk_elems / width),
                              kTailMaxRows});
        acc = std::max(acc, tail_rows * width);
        if (i > seg) {  // the error into the tail's input, whole: [B, N, K]
          acc = std::max(acc, B * l.in.numel());
          err = std::max(err, B * l.in.numel());
        }
      }
      continue;
    }
    const bool pool_of_tail = tail >= 0 && i == tail + 2;  // its input is never whole
    if (i < keep_from)
      pingpong = std::max(pingpong, out);
    else
      h_kept_[static_cast<std::size_t>(i)] = arena_.reserve<std::int8_t>(l.name + " output (int8)", out);
    if (tail >= 0 && i < tail && l.op == nn::LayerOp::kPointLinear && out > o.tail_chunk_elems) {
      // A lower per-point product, in two streamed passes: only its output is whole.
      const std::size_t width = static_cast<std::size_t>(l.out.dims.back());
      chunk_rows[static_cast<std::size_t>(i)] =
          std::min({B * static_cast<std::size_t>(l.out.dims.at(0)),
                    std::max<std::size_t>(1, o.tail_chunk_elems / width), kTailMaxRows});
      acc = std::max(acc, chunk_rows[static_cast<std::size_t>(i)] * width);
      if (i > seg) acc = std::max(acc, B * l.in.numel());  // its backward's input error
      if (l.norm) norm_width = std::max(norm_width, width);
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
    h_tail_grad_ = arena_.reserve<std::int64_t>("tail weight gradient (int64)", l.weight_count);
  }
  if (scratch > 0) h_scratch_ = arena_.reserve<std::int8_t>("conv scratch", scratch);  // bytes
  if (o.partition > 0)
    h_plus_ = arena_.reserve<std::int8_t>("+ pass logits (int8)", B * static_cast<std::size_t>(net.num_classes()));
  if (seg < layers) {
    std::size_t grad = 0;
    for (int i = seg; i < layers; ++i) grad = std::max(grad, net.layer(i).weight_count);
    h_grad_ = arena_.reserve<std::int32_t>("weight gradient (int32)", grad);
    for (int k = 0; k < 2; ++k)
      h_err_[k] = arena_.reserve<std::int8_t>("error " + std::to_string(k) + " (int8)", err);
  }
  arena_.allocate();
}

std::int8_t* Int8Plan::output(int i) const {
  const int h = i < keep_from ? h_pingpong_[i % 2] : h_kept_[static_cast<std::size_t>(i)];
  return arena_.get<std::int8_t>(h);
}

}  // namespace zt::train
