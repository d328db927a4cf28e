#include "zotrain/train/fp32_plan.hpp"

#include <algorithm>
#include <string>

#include "zotrain/core/error.hpp"
#include "zotrain/kernels/gemm.hpp"
#include "zotrain/nn/batchnorm.hpp"

#ifdef ZT_OPENMP
#include <omp.h>
#endif

namespace zt::train {

Fp32Plan::Fp32Plan(nn::Model& model, const Fp32PlanOptions& o) : model_(model) {
  const int L = model_.num_parametric();
  ZT_CHECK(o.partition >= 0 && o.partition <= L);
  ZT_CHECK(o.batch_size >= 1);
  const int n = model_.size();
  const std::size_t B = static_cast<std::size_t>(o.batch_size);
  const nn::NetworkDesc net = model_.describe();
  seg = net.bp_segment_start(o.partition);
  // Outputs from keep_from on get their own buffer: the segment's input (output seg−1) and
  // everything after it, and always the logits.
  keep_from = std::min(std::max(seg - 1, 0), n - 1);
  chunked_until = n;
  for (int i = 0; i < n; ++i)
    if (model_.layer(i).prefers_whole_batch()) {
      chunked_until = i;
      break;
    }
  // Layers after the chunked prefix run on the whole batch and read [B, ...] layouts, so the
  // prefix's last output gets its own buffer instead of a (chunk-strided) ping-pong slice.
  if (chunked_until >= 1) keep_from = std::min(keep_from, chunked_until - 1);
  const bool zo = o.partition > 0;
  const bool bp = o.partition < L;
  sets = (zo && bp && o.bp_activations == BpActivations::kAverage) ? 2 : 1;

  // Lean plan: a per-point stack wholly in the ZO part streams; with backprop into the stack,
  // its tail PointLinear → BatchNorm → ReLU → pool streams and is recomputed in backward (the
  // layers below it keep their activations).
  if (o.plan == MemoryPlan::kLean) {
    using nn::LayerOp;
    const nn::PointStack stack = nn::find_point_stack(net);
    const bool bn_relu_tail =
        stack.between == std::vector<LayerOp>{LayerOp::kBatchNorm, LayerOp::kRelu};
    if (stack.found() && stack.pool < seg) {
      lean = true;
    } else if (stack.found() && bn_relu_tail && seg <= stack.tail && sets == 1) {
      lean = lean_bp = true;
      stream_from = stack.tail;
    }
    if (lean) {
      pool = stack.pool;
      points = model_.input_shape().dims[0];
      in_channels = stream_from == 0 ? model_.input_shape().dims[1]
                                     : model_.output_shape(stream_from - 1).dims.back();
      for (int i : stack.batchnorms)
        if (i >= stream_from) stack_bn.push_back(i);
      fuse_tail = !stack_bn.empty() && stack_bn.back() == pool - 2 &&
                  net.layers[static_cast<std::size_t>(pool - 1)].desc.op == LayerOp::kRelu;
    }
  }
  std::size_t chunk_width = 0;  // widest per-point activation of the stack
  if (lean) {
    for (int i = stream_from; i < pool; ++i)
      chunk_width = std::max(chunk_width, static_cast<std::size_t>(model_.output_shape(i).dims.back()));
    constexpr int kBlock = nn::BatchNorm::kStatRowBlock;
    int p = o.chunk_points;
    if (p <= 0) {
      const std::size_t fit = kLeanChunkFloats / (B * chunk_width);
      p = std::max(kBlock, static_cast<int>(std::min<std::size_t>(fit, 1u << 24)) / kBlock * kBlock);
    }
    ZT_CHECK_MSG(p >= points || p % kBlock == 0,
                 "chunk_points must be a multiple of " + std::to_string(kBlock));
    chunk_points = std::min(p, points);
    if (lean_bp) {  // backward row chunks: whole GEMM depth blocks (PointLinear::backward_rows)
      constexpr std::size_t kDepth = kernels::kGemmDepthBlock;
      const std::size_t rows = std::max(kDepth, kLeanChunkFloats / chunk_width / kDepth * kDepth);
      tail_rows = std::min(rows, B * static_cast<std::size_t>(points));
    }
  }

#ifdef ZT_OPENMP
  threads = std::max(1, omp_get_max_threads());
#endif
  std::size_t err_floats = 0, scratch_floats = 0;
  const int chunk = std::min(kForwardChunk, o.batch_size);
  // Outputs of chunked layers that the next chunked layer consumes (all but the last chunked
  // layer, and only before the kept ones) live in small per-thread chunk buffers; the last
  // chunked layer writes the whole-batch input of the first whole-batch layer.
  local_until = lean ? 0 : std::max(0, std::min(keep_from, chunked_until - 1));
  for (int i = 0; i < n; ++i) {
    // Lean: the streamed layers' activations live in the chunk buffers (and their errors in the
    // backward chunks); the pool's [B, C] and what follows are whole-batch.
    const bool chunk_only = streamed_layer(i) && i < pool;
    if (i < local_until)
      local_per_sample_ = std::max(local_per_sample_, model_.output_floats(i));
    else if (i < keep_from && !chunk_only)
      pp_per_sample_ = std::max(pp_per_sample_, model_.output_floats(i));
    if (i >= seg && !chunk_only) err_floats = std::max(err_floats, model_.output_floats(i) * B);
    const bool streamed = streamed_layer(i);  // chunk-level calls, no scratch
    if (!streamed && (i >= seg || i >= chunked_until))  // these run on the whole batch
      scratch_floats = std::max(scratch_floats, model_.layer(i).scratch_floats(o.batch_size));
    chunk_scratch_floats = std::max(chunk_scratch_floats, model_.layer(i).scratch_floats(chunk));
  }
  const std::size_t pp_floats = pp_per_sample_ * B;
  // One region serves both: forward chunks use `threads` slices, backward the whole of it.
  chunk_scratch_floats = (chunk_scratch_floats + 15) / 16 * 16;
  scratch_floats = std::max(scratch_floats, chunk_scratch_floats * static_cast<std::size_t>(threads));
  if (seg > 0 && seg < n) err_floats = std::max(err_floats, model_.output_floats(seg - 1) * B);
  for (int s = 0; s < sets; ++s) {
    h_kept_[s].assign(static_cast<std::size_t>(n), -1);
    for (int i = keep_from; i < n; ++i)
      if (!(streamed_layer(i) && i < pool))
        h_kept_[s][static_cast<std::size_t>(i)] = arena_.reserve(
          "activation." + model_.layer(i).name() + (s ? ".plus" : ""), model_.output_floats(i) * B);
  }
  if (pp_floats > 0)
    for (int k = 0; k < 2; ++k) h_pingpong_[k] = arena_.reserve("activation.pingpong", pp_floats);
  local_floats_ = local_per_sample_ * static_cast<std::size_t>(chunk);
  if (local_floats_ > 0)
    h_local_ = arena_.reserve("activation.chunk.per_thread",
                              2 * local_floats_ * static_cast<std::size_t>(threads));
  if (lean) {
    const std::size_t rows = B * static_cast<std::size_t>(chunk_points);
    h_chunk_in_ = arena_.reserve("activation.chunk.input", rows * static_cast<std::size_t>(in_channels));
    for (int k = 0; k < 2; ++k) h_chunk_[k] = arena_.reserve("activation.chunk", rows * chunk_width);
    if (fuse_tail)
      h_extremes_ = arena_.reserve("activation.pool.extremes", 2 * B * model_.output_floats(pool));
    if (lean_bp) {
      for (int k = 0; k < 2; ++k) h_tail_[k] = arena_.reserve("backward.chunk", tail_rows * chunk_width);
      h_tail_argmax_ = arena_.reserve("backward.pool.argmax", 3 * B * model_.output_floats(pool));
    }
  }
  if (bp) {
    const std::size_t bp_params = model_.num_params() - model_.num_params_of_range(0, o.partition);
    for (int k = 0; k < 2; ++k) h_err_[k] = arena_.reserve("error.pingpong", err_floats);
    h_grad_ = arena_.reserve("grad", bp_params);
    if (o.adam) {
      h_adam_m_ = arena_.reserve("adam.m", bp_params);
      h_adam_v_ = arena_.reserve("adam.v", bp_params);
    }
  }
  const std::size_t classes = static_cast<std::size_t>(model_.num_classes());
  h_dlogits_[0] = arena_.reserve("dlogits", classes * B);
  if (sets == 2) h_dlogits_[1] = arena_.reserve("dlogits.plus", classes * B);
  if (scratch_floats > 0) h_scratch_ = arena_.reserve("scratch", scratch_floats);
}

float* Fp32Plan::layer_output(int i, int set) const {
  if (i >= keep_from) return arena_.get(h_kept_[set][static_cast<std::size_t>(i)]);
  return arena_.get(h_pingpong_[i % 2]);
}

const float* Fp32Plan::layer_input(const float* x, int i, int set) const {
  return i == 0 ? x : layer_output(i - 1, set);
}

// A chunk's slice of a layer's output: kept buffers are [B, out...]; the ping-pong buffers are
// sliced with one fixed per-sample stride, so concurrent chunks at different layers never
// overlap.
float* Fp32Plan::chunk_output(int i, int set, int b0, int thread) const {
  if (i < local_until)  // this thread's chunk buffers, alternating by layer
    return arena_.get(h_local_) +
           (2 * static_cast<std::size_t>(thread) + static_cast<std::size_t>(i % 2)) * local_floats_;
  const std::size_t per = i >= keep_from ? model_.output_floats(i) : pp_per_sample_;
  return layer_output(i, set) + per * static_cast<std::size_t>(b0);
}

const float* Fp32Plan::chunk_input(const float* x, int i, int set, int b0, int thread) const {
  if (i == 0) return x + model_.input_floats() * static_cast<std::size_t>(b0);
  return chunk_output(i - 1, set, b0, thread);
}

}  // namespace zt::train
