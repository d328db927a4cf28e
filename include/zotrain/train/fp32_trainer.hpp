// FP32 training of a Model by Full BP (C = 0), Full ZO (C = L) or ElasticZO (0 < C < L).
// The trainer is an executor over components with one job each, every one of which reserves
// its buffers in the plan's arena before it is allocated (a step allocates nothing):
//   the buffer plan (train/fp32_plan.hpp): activations, errors, gradients, scratch, Adam state;
//   the point-stack streamer (train/point_stack.hpp);
//   the ZO direction (train/fp32_direction.hpp): θ_{1..C} perturbed in place, blocks, the
//     direction cache and the deferred update;
//   the batched probes' replicas (train/fp32_replicas.hpp);
//   node perturbation (train/fp32_nodes.hpp);
//   the ZO estimator (train/zo_estimator.hpp), driving this trainer's executor of the perturb /
//     probe / update primitives (fp32_step.cpp), and the backprop optimizer
//     (train/optimizer.hpp).
// What remains here: the layers' forward and backward passes over the planned buffers, and the
// step that strings the components together.
//
// ZO step (docs/design.md §4, Algorithm 1): θ_{1..C} are one contiguous range of the model's
// storage, perturbed in place by z(step_seed, stream 0, element index) — never stored, regenerated
// three times: +ε, −2ε, then the merged restore+update (ε − η·g). g = (ℓ+ − ℓ−)/2ε clipped.
// The backprop segment (θ_{C+1..L}) then backprops from the activations of the θ−εz pass
// ("minus"), or averages both passes' gradients ("average", one more set of activations).
//
// Buffers and the lean plan: train/fp32_plan.hpp (what is kept, what streams) and
// train/point_stack.hpp (how PointNet's per-point stack streams, bit-identical to the
// whole-batch plan).
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
#include <utility>
#include <vector>

#include "zotrain/core/arena.hpp"
#include "zotrain/core/ranks.hpp"
#include "zotrain/kernels/perturb.hpp"
#include "zotrain/nn/model.hpp"
#include "zotrain/telemetry/phases.hpp"
#include "zotrain/train/fp32_direction.hpp"
#include "zotrain/train/fp32_nodes.hpp"
#include "zotrain/train/fp32_plan.hpp"
#include "zotrain/train/fp32_replicas.hpp"
#include "zotrain/train/optimizer.hpp"
#include "zotrain/train/point_stack.hpp"
#include "zotrain/train/zo_estimator.hpp"

namespace zt::train {

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
  config::Estimator estimator = config::Estimator::kTwoSided;
  int queries = 1;
  kernels::PerturbSource perturbation = kernels::PerturbSource::kGaussian;  // where z comes from
  kernels::PezoOptions pezo;  // the PeZO sources
  // P-RGE's batched probes: the ± passes of all q queries as one forward over 2q replicas of
  // the batch, θ untouched (train/fp32_replicas.hpp). Models without BatchNorm only.
  bool batched = false;
  // The step's direction z_i drawn once into a buffer of zo_params() floats and read back by
  // the − pass and the update (the same bits as regenerating it; one query cached at a time).
  bool cache_direction = false;
  // With cache_direction: the last query's update of a step (θ += (restore − η·g)·z) is kept
  // pending and applied by the next step's first perturbation in the same pass over θ and the
  // buffer (Perturber::update_perturb_fill; the same bits, one pass less per step, its time
  // counted as ZO perturb). Every forward pass of this trainer applies a pending update first;
  // whoever reads the parameters otherwise between steps calls sync_weights() (the engine does
  // before a checkpoint) and discard_deferred() before overwriting them.
  bool defer_zo_update = false;
  // Node perturbation (layer-wise estimator): a ZO layer that is fully connected, runs on the
  // whole batch and has fewer outputs than weights is estimated by perturbing its outputs per
  // sample and mapping the node gradient to its weights (train/fp32_nodes.hpp).
  bool node_perturbation = false;
  // Lean plan: points per chunk, 0 = automatic; otherwise a multiple of
  // nn::BatchNorm::kStatRowBlock (32) or at least N.
  int chunk_points = 0;
  // A data-parallel run's ranks (docs/design.md §15; null: one process). Every rank holds the
  // whole batch; the ZO probes run layers [0, shard_until()) on this rank's chunks of it and
  // gather the rows of their output, the rest runs on every rank: the same bits as one process.
  Ranks* ranks = nullptr;
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
  // The components hold references to the plan and the perturber: not copied, not moved.
  Fp32Trainer(const Fp32Trainer&) = delete;
  Fp32Trainer& operator=(const Fp32Trainer&) = delete;

  // x [n, input...] (n ≤ batch_size), labels [n]. lr_zo for θ_{1..C}, lr_bp for the rest.
  StepStats step(const float* x, const std::uint8_t* labels, int n, std::uint64_t step_seed,
                 float lr_zo, float lr_bp, telemetry::PhaseTimes& times);
  EvalStats evaluate(const float* x, const std::uint8_t* labels, int n);
  // Logits [n, classes] of a forward pass at the current parameters (valid until the next pass).
  const float* logits(const float* x, int n) { return forward(x, n, 0); }
  // Loss only (for gradient checks): forward pass at the current parameters.
  double loss(const float* x, const std::uint8_t* labels, int n);

  // defer_zo_update: θ made current (a pending update applied), or a pending update dropped
  // because θ is about to be overwritten (a checkpoint loaded).
  void sync_weights() { direction_.sync(); }
  void discard_deferred() { direction_.discard_pending(); }

  const Fp32TrainerOptions& options() const { return opt_; }
  // The run's step number of the next step (counted up by step()); PeZO's stream offsets
  // number the perturbations by it. Resume sets it.
  void set_step_number(std::uint64_t k) { step_number_ = k; }
  std::size_t zo_params() const { return zo_params_; }
  std::size_t bp_params() const { return bp_params_; }
  // Bytes this trainer allocated for training (the arena: every component's buffers) plus the
  // model's parameters.
  std::size_t planned_bytes() const {
    return plan_.arena().planned_bytes() + model_.num_params() * sizeof(float);
  }
  const Arena& arena() const { return plan_.arena(); }
  // Whether the lean plan applies to this model and partition, and its points per chunk.
  bool lean() const { return plan_.lean; }
  int chunk_points() const { return plan_.chunk_points; }
  // Data-parallel: the layers a probe runs on this rank's rows only (0: none; the whole model
  // for Full ZO, the ZO layers before the backprop segment otherwise). 0 with one rank, node
  // perturbation, BatchNorm in those layers (its statistics are the whole batch's) or the lean
  // plan's streamed stack.
  int shard_until() const { return shard_until_; }
  // Gradients of the BP parameters from the last step (bp_params() floats; null if C = L).
  const float* grad() const { return plan_.grad(); }

  // Optimizer state (Adam m and v for the BP parameters; empty for SGD) and its step count.
  float* adam_m() { return optimizer_.adam_m(); }
  float* adam_v() { return optimizer_.adam_v(); }
  std::int64_t adam_t() const { return optimizer_.steps(); }
  void set_adam_t(std::int64_t t) { optimizer_.set_steps(t); }

 private:
  // Returns the logits. shard: a training probe, spread over the ranks (shard_until()).
  const float* forward(const float* x, int n, int set, bool shard = false);
  // Chunks [c0, c1) of the batch through layers [l0, l1) (one OpenMP fork over the chunks).
  void forward_chunks(const float* x, int n, int set, int c0, int c1, int l0, int l1);
  void backward(int n, int set, const float* dlogits);
  // The `seed` a perturbation of query i is drawn with: the step seed, or with PeZO's stream
  // offsets the run-wide perturbation number step_number·q + i.
  std::uint64_t draw_seed(std::uint64_t step_seed, int query) const;

  nn::Model& model_;
  Fp32TrainerOptions opt_;
  std::size_t zo_params_ = 0, bp_params_ = 0;
  float* bp_theta_ = nullptr;  // first BP parameter in the model's storage
  kernels::Perturber perturber_;
  // The components: each reserves its buffers in plan_'s arena when constructed; the
  // constructor then allocates the arena and binds them.
  Fp32Plan plan_;
  Fp32ZoDirection direction_;
  Fp32Replicas replicas_;  // reserves nothing unless opt_.batched
  Fp32NodePerturbation nodes_;
  PointStackStreamer stack_;
  BpOptimizer optimizer_;
  std::unique_ptr<ZoEstimator> estimator_;
  const float* input_ = nullptr;  // the batch of the last forward pass (layer 0's input)
  std::uint64_t step_number_ = 0;
  Ranks* ranks_ = nullptr;
  int shard_until_ = 0;
  std::vector<int> shard_begin_;  // rank r's rows of the batch: [begin[r], begin[r + 1])
  class ZoStep;  // the ZoExecutor of one step (fp32_step.cpp)
};

}  // namespace zt::train
