// Streaming PointNet's per-point stack under the lean plan (train/fp32_plan.hpp decides what
// streams and in what chunks; this runs it).
//
// Lean plan (MemoryPlan::kLean, the default): when the model starts with a per-point stack —
// row-wise layers (PointLinear, BatchNorm, ReLU) over [N, C] ending in MaxPoolPoints — that lies
// wholly in the ZO part (segment start after the pool), its forward streams chunks of P points
// of all samples ([B, P, C], a few MiB) through the stack into a running max-pool [B, C], so no
// [B, N, C] tensor exists. BatchNorm in training mode needs its statistics over all B·N rows
// before it can normalise: pass k streams the chunks through the layers before the k-th
// BatchNorm (earlier ones normalising with their finished statistics) and accumulates its
// statistics; the last pass runs the whole stack into the pool. When the stack ends in
// BatchNorm → ReLU → pool, that last pass is folded into the last BatchNorm's: x ↦ ReLU((x − μ)·s
// + β) is monotone in x (increasing for s ≥ 0, decreasing for s < 0; each float operation is), so
// the pooled value is that map of the per-channel max (or min) of the raw x, and the pass that
// accumulates the last statistics also tracks those extremes (exact for finite activations; a
// NaN statistic gives 0 in both). BatchNorm forms its statistics in
// one fixed block order for whole batches and chunks alike, the GEMM's per-row sums do not
// depend on the row count and the pool compares in point order, so the lean plan's results are
// bit-identical to the whole-batch plan's (MemoryPlan::kWholeBatch): same logits, running
// statistics and weights.
//
// Lean plan, backprop into the stack (C ≤ 4 for PointNet, Full BP included): the layers below
// the stack's tail keep their activations, but the tail — PointLinear → BatchNorm → ReLU →
// max-pool, the widest layer — streams like the ZO forward (from the kept input of its
// PointLinear) and is recomputed in backward, in chunks of whole GEMM depth blocks of rows
// (backward_point_tail()). The pool's error reaches one point per (sample, channel); BatchNorm's
// batch sums come from those entries in the dense reduction's order, and PointLinear's dW
// accumulates chunk after chunk at the GEMM's depth-block boundaries, so the result is
// bit-identical to the whole-batch backward (tested) for the price of two more forward passes
// of the tail's PointLinear. Not with BpActivations::kAverage (the tail would need both passes'
// statistics): that, and other models (LeNet-5), use the whole-batch plan.
//
#pragma once

#include "zotrain/nn/model.hpp"
#include "zotrain/train/fp32_plan.hpp"

namespace zt::train {

class PointStackStreamer {
 public:
  PointStackStreamer(nn::Model& model, const Fp32Plan& plan);
  // The streamed layers [stream_from, pool] of the batch x (layer 0's input) into the pool's
  // output buffer; BatchNorm in training mode gathers its statistics pass by pass.
  void forward(const float* x, int n, int set);
  // Backward through the streamed tail PointLinear → BatchNorm → ReLU → pool (lean_bp): the
  // pool's error dpool [n, C] → the error of the tail's input dx [n, N, C_in] (null: not
  // needed), accumulating the tail's parameter gradients.
  void backward_tail(const float* x, int n, int set, const float* dpool, float* dx);

 private:
  nn::Model& model_;
  const Fp32Plan& plan_;
};

}  // namespace zt::train
