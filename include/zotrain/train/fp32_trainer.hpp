// FP32 training of a Model by Full BP (C = 0), Full ZO (C = L) or ElasticZO (0 < C < L).
// The trainer plans its buffers once (an Arena) and binds them; step() allocates nothing.
//
// ZO step (docs/design.md §4, Algorithm 1): θ_{1..C} are one contiguous range of the model's
// storage, perturbed in place by z(step_seed, stream 0, element index) — never stored, regenerated
// three times: +ε, −2ε, then the merged restore+update (ε − η·g). g = (ℓ+ − ℓ−)/2ε clipped.
// The backprop segment (θ_{C+1..L}) then backprops from the activations of the θ−εz pass
// ("minus"), or averages both passes' gradients ("average", one more set of activations).
//
// Buffers: layers before the backprop segment write into two ping-pong buffers (a ZO forward
// is inference: an activation is dead once the next layer has read it); the segment's input and
// every output from there on are kept for backprop.
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
// Threads: a forward pass runs the per-sample layers (conv, ReLU, pool — everything before the
// first layer that prefers the whole batch) on fixed chunks of kForwardChunk samples, one
// OpenMP fork/join for all of them, each thread with its own scratch; kernels see a small batch
// inside a parallel region and run serially. The remaining layers (linear: one GEMM with
// M = batch) run on the whole batch with kernel-level threads. Per-sample results do not
// depend on the split, so results are bit-identical for any thread count. Backward runs once on the whole batch
// (its kernels parallelise internally, reductions in a fixed order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "zotrain/core/arena.hpp"
#include "zotrain/kernels/perturb.hpp"
#include "zotrain/nn/model.hpp"
#include "zotrain/telemetry/phases.hpp"
#include "zotrain/train/optimizer.hpp"
#include "zotrain/train/zo_estimator.hpp"

namespace zt::train {

using config::BpActivations;
using config::MemoryPlan;

inline constexpr int kForwardChunk = 4;
// Lean plan: the automatic point chunk keeps its widest activation near this many floats.
inline constexpr std::size_t kLeanChunkFloats = std::size_t{1} << 20;

struct Fp32TrainerOptions {
  int partition = 0;   // C in [0, L]
  int batch_size = 32;
  float eps = 1e-3f;
  float grad_clip = 100.0f;
  OptimizerKind optimizer = OptimizerKind::kSgd;
  BpActivations bp_activations = BpActivations::kMinus;
  kernels::Isa isa = kernels::best_isa();  // for the perturbation kernel
  MemoryPlan plan = MemoryPlan::kLean;
  // The ZO estimator (train/zo_estimator.hpp) and its number of queries q.
  std::string estimator = "two_sided";
  int queries = 1;
  // Lean plan: points per chunk, 0 = automatic; otherwise a multiple of
  // nn::BatchNorm::kStatRowBlock (32) or at least N.
  int chunk_points = 0;
};

struct StepStats {
  double loss = 0;       // mean loss of the batch (ZO: (ℓ+ + ℓ−)/2, averaged over the queries)
  int correct = 0;       // argmax hits on the last forward pass
  double g = 0;          // projected gradient after clipping, mean over queries (0 for Full BP)
  bool clipped = false;  // any query's g was clipped
};

struct EvalStats {
  double loss_sum = 0;  // Σ over samples of the loss
  int correct = 0;
};

class Fp32Trainer {
 public:
  Fp32Trainer(nn::Model& model, const Fp32TrainerOptions& options);

  // x [n, input...] (n ≤ batch_size), labels [n]. lr_zo for θ_{1..C}, lr_bp for the rest.
  StepStats step(const float* x, const std::uint8_t* labels, int n, std::uint64_t step_seed,
                 float lr_zo, float lr_bp, telemetry::PhaseTimes& times);
  EvalStats evaluate(const float* x, const std::uint8_t* labels, int n);
  // Logits [n, classes] of a forward pass at the current parameters (valid until the next pass).
  const float* logits(const float* x, int n) { return forward(x, n, 0); }
  // Loss only (for gradient checks): forward pass at the current parameters.
  double loss(const float* x, const std::uint8_t* labels, int n);

  const Fp32TrainerOptions& options() const { return opt_; }
  std::size_t zo_params() const { return zo_params_; }
  std::size_t bp_params() const { return bp_params_; }
  // Bytes this trainer allocated for training (arena: activations, errors, gradients, scratch,
  // optimizer state) plus the model's parameters.
  std::size_t planned_bytes() const;
  const Arena& arena() const { return arena_; }
  // Whether the lean plan applies to this model and partition, and its points per chunk.
  bool lean() const { return lean_; }
  int chunk_points() const { return chunk_points_; }
  // Gradients of the BP parameters from the last step (bp_params() floats; null if C = L).
  const float* grad() const { return grad_; }

  // Optimizer state (Adam m and v for the BP parameters; empty for SGD) and its step count.
  float* adam_m() { return adam_m_; }
  float* adam_v() { return adam_v_; }
  std::int64_t adam_t() const { return adam_t_; }
  void set_adam_t(std::int64_t t) { adam_t_ = t; }

 private:
  const float* forward(const float* x, int n, int set);  // returns the logits
  void forward_point_stack(const float* x, int n, int set);  // lean: layers [0, pool_]
  void backward(int n, int set, const float* dlogits);
  void backward_point_tail(int n, int set, const float* dpool, float* dx);  // lean_bp_
  // Lean: layers whose forward streams in chunks (the stack from stream_from_, and the pool).
  bool streamed_layer(int i) const { return lean_ && i >= stream_from_ && i <= pool_; }
  const float* layer_input(const float* x, int i, int set) const;
  float* layer_output(int i, int set) const;
  float* chunk_output(int i, int set, int b0, int thread) const;
  const float* chunk_input(const float* x, int i, int set, int b0, int thread) const;

  nn::Model& model_;
  Fp32TrainerOptions opt_;
  int seg_ = 0, keep_from_ = 0;
  std::size_t zo_params_ = 0, bp_params_ = 0;
  float* bp_theta_ = nullptr;  // first BP parameter in the model's storage
  Arena arena_;
  std::vector<int> h_kept_[2];  // per layer, handle of its kept output (−1 if ping-pong)
  int h_pingpong_[2] = {-1, -1}, h_err_[2] = {-1, -1}, h_scratch_ = -1, h_dlogits_[2] = {-1, -1};
  int h_grad_ = -1, h_adam_m_ = -1, h_adam_v_ = -1;
  float *grad_ = nullptr, *adam_m_ = nullptr, *adam_v_ = nullptr, *scratch_ = nullptr;
  std::size_t chunk_scratch_floats_ = 0;  // per thread, for a forward chunk
  int threads_ = 1;                       // forward threads (scratch slots)
  std::size_t pp_per_sample_ = 0;         // ping-pong stride per sample
  int local_until_ = 0;                   // layers [0, local_until_) write per-thread buffers
  std::size_t local_per_sample_ = 0, local_floats_ = 0;  // per-thread chunk buffer
  int h_local_ = -1;
  int chunked_until_ = 0;                 // layers [0, chunked_until_) run in chunks
  std::int64_t adam_t_ = 0;
  int sets_ = 1;
  const float* input_ = nullptr;  // the batch of the last forward pass (layer 0's input)
  // Lean plan: the stack is layers [0, pool_); points and channels of the input; the layers of
  // its BatchNorms; chunk buffers (input [B, P, C0], two ping-pong [B, P, widest]).
  bool lean_ = false;
  int pool_ = -1, points_ = 0, in_channels_ = 0, chunk_points_ = 0;
  std::vector<int> stack_bn_;
  bool fuse_tail_ = false;  // stack ends BatchNorm → ReLU → pool: fold the last pass (above)
  int h_chunk_in_ = -1, h_chunk_[2] = {-1, -1}, h_extremes_ = -1;  // extremes: max, min [B, C]
  // Backprop into the stack (lean_bp_): only its tail PointLinear → BatchNorm → ReLU → pool,
  // layers [stream_from_, pool_], is streamed; backward chunks of tail_rows_ rows.
  bool lean_bp_ = false;
  int stream_from_ = 0;
  std::size_t tail_rows_ = 0;
  int h_tail_[2] = {-1, -1}, h_tail_argmax_ = -1;
  kernels::PerturbGaussianF32Fn perturb_;
  std::unique_ptr<ZoEstimator> estimator_;
  class ZoStep;  // the ZoExecutor of one step (fp32_trainer.cpp)
};

}  // namespace zt::train
