// Node perturbation of int8 Poor Man's Training (docs/design.md §6.1; the trainer's side is
// described in train/int8_trainer.hpp): the fully connected blocks of θ_{1..C} outside the
// streamed per-point stack, whose clean pass keeps the layer's int8 input x̄ and output ȳ, and
// the executor's work space. Every buffer is reserved in the Int8Plan's arena: per block x̄
// [B, K] and ȳ [B, M]; the node gradient G [B, M] (int32), one probe's ξ [B, M], update_nodes_s8's
// row sums [K] (int64) and, for the executor (src/train/int8_zo.cpp), per-sample losses
// [B (1 + C q)] and the floating-point node gradient [B, M] as doubles (M, K: the widest block).
// Integer-only: this code only hands the double buffers on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "zotrain/core/arena.hpp"
#include "zotrain/kernels/perturb_s8.hpp"
#include "zotrain/nn/int8_net.hpp"
#include "zotrain/train/int8_plan.hpp"

namespace zt::train {

struct Int8NodeOptions {
  bool enabled = false;  // Int8TrainerOptions::node_perturbation
  int partition = 0;     // C: the blocks
  int batch_size = 256;
  int queries = 1;  // the most probes per block a step makes
  kernels::SignSource signs = kernels::SignSource::kRademacher;  // ξ
};

class Int8NodePerturbation {
 public:
  // Reserves the buffers in `arena` (the plan's, before its allocation).
  Int8NodePerturbation(nn::Int8Net& net, const Int8Plan& plan, Arena& arena,
                       const Int8NodeOptions& options);
  bool enabled() const { return widest_ > 0; }
  // Outputs per sample of block b when node-perturbed, else 0.
  std::size_t nodes(int b) const;
  int layer(int b) const { return block(b).layer; }
  // A clean pass: keeps layer i's input x and output y (n samples) when it is a block's.
  void capture(int i, int n, const std::int8_t* x, const std::int8_t* y, int in_exp, int out_exp);
  const std::int8_t* clean(int b) const;  // ȳ [n, M]
  const std::int8_t* input(int b) const;  // x̄ [n, K]
  int out_exp(int b) const { return block(b).out_exp; }
  int scale_exp(int b) const;  // e_x − e_y − e_W
  bool relu_after(int b) const { return block(b).relu_after; }
  // ξ_{i,n} of query i for n samples, [n, M].
  void directions(std::uint64_t step_seed, int b, int query, int n, std::int8_t* xi) const;
  // y (block b's layer output, [n, M]) = ȳ + ξ clamped to ±127; nodes a following ReLU cuts
  // off (ȳ ≤ 0) keep ȳ.
  void perturb(int b, std::uint64_t step_seed, int query, int n, std::int8_t* y) const;
  // θ_b −= StoShift(Σ_n G_n ⊗ x̄_n, frac), G = grad().
  void update(int b, int frac, std::uint64_t step_seed, int n);

  std::int32_t* grad() const { return arena_.get<std::int32_t>(h_grad_); }
  double* losses() const { return arena_.get<double>(h_losses_); }
  double* work() const { return arena_.get<double>(h_work_); }
  std::int8_t* xi() const { return arena_.get<std::int8_t>(h_xi_); }

 private:
  struct Block {
    int layer = -1;  // < 0: weights only
    std::size_t in = 0, out = 0;
    bool relu_after = false;
    int h_input = -1, h_clean = -1;
    int in_exp = 0, out_exp = 0;
  };
  const Block& block(int b) const;

  nn::Int8Net& net_;
  const Arena& arena_;
  kernels::SignSource signs_;
  std::vector<Block> blocks_;  // per block of θ_{1..C}
  std::size_t widest_ = 0;
  int h_grad_ = -1, h_losses_ = -1, h_work_ = -1, h_xi_ = -1, h_row_ = -1;
};

}  // namespace zt::train
