// Int8 training of an Int8Net by integer arithmetic only (docs/design.md §5–6): NITI backprop
// (C = 0), int8 Full ZO (C = L) and ElasticZO-INT8 (0 < C < L, Algorithm 2).
//
// A step is made of primitives that the ZO estimator seam drives (train/int8_zo.hpp, which also
// supplies the sign, integer-only or float):
//   begin(x)             the batch
//   perturb(i, k)        θ_{1..C} += k·z_i, z_i sparse uniform int8 regenerated from the step
//                        seed and query i
//   probe(plus)          a forward pass (the + pass keeps its logits)
//   zo_update(g)         the update merged with the restore (θ += z, θ −= PstoShift(g·z))
//   backprop()           layers C+1..L from the integer loss error of the last (−) pass
// C = 0 (NITI): begin, probe, backprop.
// Poor Man's Training (layer-wise weight perturbation, μ = 1; Int8TrainerOptions::layerwise):
// block b is the b-th parametric layer of θ_{1..C}:
//   perturb_block(b, i)  θ_b = clamp(θ_b + ξ_i, ±127), ξ_i ±1 from Int8TrainerOptions::signs
//                        (θ_b kept for restore)
//   restore_block(b)     θ_b as it was before perturb_block, exactly
//   update_block(b, c)   θ_b −= StoShift(Σ_i c_i ξ_i, frac) (c in fixed point: c_i · 2^frac)
// and its node perturbation (Int8TrainerOptions::node_perturbation) of a fully connected block
// b, whose clean pass (probe(false)) keeps the layer's int8 input x̄ and output ȳ:
//   probe_nodes(b, i)    a pass from the layer after b, its input ȳ + ξ_{i,n} clamped to ±127
//                        (ξ per sample n from node_signs(b, i); nodes a following ReLU cuts
//                        off, ȳ ≤ 0, left alone)
//   update_nodes(b, f)   θ_b −= StoShift(Σ_n G_n ⊗ x̄_n, f) with G = node_grad() [n, M], the
//                        node gradient in fixed point (f fractional bits) that the caller wrote
// This header, src/train/int8_trainer.cpp and its components are integer-only (the aarch64
// test build compiles them with -mgeneral-regs-only); phase times are integer nanoseconds.
//
// The trainer is an executor over its components, whose buffers are all reserved in the
// Int8Plan's arena (train/int8_plan.hpp: the buffers and the lean tail) before it allocates:
//   Int8PointStackStreamer  train/int8_point_stack.hpp  the lean plan's streamed per-point stack
//   Int8ZoDirection         train/int8_direction.hpp    z of θ_{1..C} (cached or regenerated) and
//                                                        the layer-wise blocks
//   Int8NodePerturbation    train/int8_nodes.hpp        node perturbation's blocks and work space
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "zotrain/core/arena.hpp"
#include "zotrain/core/ranks.hpp"
#include "zotrain/kernels/perturb_s8.hpp"
#include "zotrain/nn/int8_net.hpp"
#include "zotrain/telemetry/phases.hpp"
#include "zotrain/train/int8_direction.hpp"
#include "zotrain/train/int8_nodes.hpp"
#include "zotrain/train/int8_plan.hpp"
#include "zotrain/train/int8_point_stack.hpp"

namespace zt::train {

// Data-parallel runs deal out a batch in rows of this many samples (int8 layers need no more:
// given the batch's maximum, every row's requantisation is its own).
inline constexpr int kShardChunk = 1;

struct Int8TrainerOptions {
  int partition = 0;   // C in [0, L]
  int batch_size = 256;
  int threads = 1;     // OpenMP threads the kernels may use (scratch is sized for them)
  kernels::Isa isa = kernels::best_isa();
  bool lean = true;  // stream the per-point tail (see above)
  std::size_t tail_chunk_elems = kTailChunkElems;  // its chunk size; tests use small ones
  std::size_t deep_stream_bytes = kDeepStreamBytes;  // deep streaming from here; tests use 0
  bool layerwise = false;  // plan the layer copy of perturb_block (Poor Man's Training)
  kernels::SignSource signs = kernels::SignSource::kRademacher;  // its ξ
  bool node_perturbation = false;  // with layerwise: keep what probe_nodes needs
  int queries = 1;  // with node_perturbation: the most probes per block a step makes
  // zo.cache_direction: a query's z drawn once into a buffer of 1 byte per ZO weight and read
  // back by the other probe and the update (the same bits as regenerating it).
  bool cache_direction = false;
  // A data-parallel run's ranks (docs/design.md §15; null: one process). Every rank holds the
  // whole batch; the probes run layers [0, shard_until()) on this rank's rows (requantised with
  // the maximum over every rank's rows) and gather the rows of their output: the same bits as
  // one process.
  Ranks* ranks = nullptr;
};

// Per-epoch integer hyperparameters (docs/design.md §6; the caller converts p_zero to the
// threshold).
struct Int8Hyper {
  int r_max = 3;
  std::uint64_t zero_threshold = 0;  // p_zero · 2^32
  int b_zo = 1;
  int b_bp = 5;
};

struct Int8Logits {
  const std::int8_t* values = nullptr;  // [n, classes]
  int exponent = 0;
};

class Int8Trainer {
 public:
  Int8Trainer(nn::Int8Net& net, const Int8TrainerOptions& options);

  // x [n, input] int8 with exponent `exponent` (e.g. pixels p >> 1 with −7), n ≤ batch_size;
  // x must stay valid until backprop().
  void begin(const std::int8_t* x, int exponent, int n);
  void perturb(std::uint64_t step_seed, int query, int k, const Int8Hyper& h);  // ZO only
  void probe(bool plus);  // a forward pass; plus: keep the logits as logits_plus()
  // ZO only: the merged restore + update of query `query` with sign g (−1, 0, +1).
  void zo_update(std::uint64_t step_seed, int query, int g, const Int8Hyper& h);
  void backprop(const std::uint8_t* labels, std::uint64_t step_seed, const Int8Hyper& h);
  int zo_blocks() const { return opt_.partition; }
  std::size_t block_weights(int b) const {
    return net_.layer(net_.parametric_layer(b)).weight_count;
  }
  int block_exponent(int b) const { return net_.layer(net_.parametric_layer(b)).exponent; }
  void perturb_block(int b, std::uint64_t step_seed, int query);
  void restore_block(int b);
  void update_block(int b, std::uint64_t step_seed, const std::int32_t* coef, int queries,
                    int frac);
  // Outputs per sample of a node-perturbed block, else 0 (train/int8_nodes.hpp).
  std::size_t block_nodes(int b) const { return nodes_.nodes(b); }
  const std::int8_t* node_clean(int b) const { return nodes_.clean(b); }  // its clean ȳ [n, M]
  const std::int8_t* node_input(int b) const { return nodes_.input(b); }  // and input x̄ [n, K]
  // Its exponents: e_x − e_y − e_W (∂ȳ/∂W̄ = 2^that · x̄).
  int node_scale_exp(int b) const { return nodes_.scale_exp(b); }
  // A ReLU follows: nodes with clean ȳ ≤ 0 are left alone.
  bool node_relu_after(int b) const { return nodes_.relu_after(b); }
  // ξ_{i,n} of probe_nodes(b, i) for the current batch, [n, M].
  void node_directions(std::uint64_t step_seed, int b, int query, std::int8_t* xi) const {
    nodes_.directions(step_seed, b, query, n_, xi);
  }
  void probe_nodes(int b, std::uint64_t step_seed, int query);
  std::int32_t* node_grad() { return nodes_.grad(); }
  // The executor's planned work space for node perturbation: per-sample losses [n (1 + C q)],
  // the node gradient in floating point [n, M] and one probe's ξ [n, M] (M: the widest block).
  double* node_losses() { return nodes_.losses(); }
  double* node_work() { return nodes_.work(); }
  std::int8_t* node_xi() { return nodes_.xi(); }
  void update_nodes(int b, int frac, std::uint64_t step_seed);
  Int8Logits logits_plus() const { return {plus_logits_, plus_exp_}; }    // ZO only
  Int8Logits logits_minus() const { return {last_logits(), last_exp_}; }  // the last pass
  // −1, 0, +1 (ZO only): the fixed-point estimate, or Eq. 12 as written.
  int integer_sign(const std::uint8_t* labels, bool eq12) const;

  // Forward at the current weights (evaluation).
  Int8Logits infer(const std::int8_t* x, int exponent, int n);

  const Int8TrainerOptions& options() const { return opt_; }
  // Data-parallel: the layers a probe runs on this rank's rows only (0: none; the whole network
  // for Full ZO, the ZO layers before the backprop segment otherwise). 0 with one rank, node
  // perturbation, or a normalised or streamed per-point layer among them.
  int shard_until() const { return shard_until_; }
  int segment_start() const { return plan_.seg; }
  int layers() const { return net_.size(); }
  std::size_t zo_weights() const { return zo_weights_; }
  std::size_t bp_weights() const { return net_.num_weights() - zo_weights_; }
  const Arena& arena() const { return plan_.arena(); }
  bool lean() const { return plan_.tail >= 0; }
  // Every buffer of a step (the plan's arena, components' included) and the weights.
  std::size_t planned_bytes() const { return plan_.arena().planned_bytes() + net_.num_weights(); }
  // Wall time per phase (telemetry::Phase order) since the last take_phase_ns(), in ns.
  std::array<std::int64_t, telemetry::kNumPhases> take_phase_ns();

 private:
  // Layers from..L−1 (from input_ at 0); sets last_exp_. shard: a training probe, spread over
  // the ranks (shard_until()).
  void forward(int n, int from = 0, bool shard = false);
  const std::int8_t* last_logits() const { return act(net_.size() - 1); }
  const std::int8_t* act(int i) const;  // output of layer i (i = −1: the quantised input)
  std::int8_t* act(int i);

  nn::Int8Net& net_;
  Int8TrainerOptions opt_;
  int n_ = 0, input_exp_ = 0;
  const std::int8_t* input_ = nullptr;
  std::size_t zo_weights_ = 0;
  Int8Plan plan_;
  // The components, their buffers reserved in plan_ before it allocates.
  Int8PointStackStreamer points_;   // the lean plan's streamed per-point stack
  Int8NodePerturbation nodes_;      // node perturbation's blocks and work space
  Int8ZoDirection directions_;      // z of θ_{1..C} (regenerated or cached), layer-wise blocks
  std::int8_t* plus_logits_ = nullptr;
  int plus_exp_ = 0, last_exp_ = 0;
  std::array<std::int64_t, telemetry::kNumPhases> ns_{};
  bool capture_ = false;
  Ranks* ranks_ = nullptr;
  int shard_until_ = 0;
  std::vector<int> shard_begin_;  // rank r's rows of the batch: [begin[r], begin[r + 1])  // the pass keeps the node blocks' inputs and outputs
};

}  // namespace zt::train
