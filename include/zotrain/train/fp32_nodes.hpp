// Node perturbation (Poor Man's Training's NP) for the FP32 trainer's layer-wise estimate
// (docs/design.md §4): a ZO layer that is fully connected, runs on the whole batch and has fewer
// outputs than weights is estimated by perturbing its outputs per sample and mapping the node
// gradient to its weights. Its buffers — per such layer the clean pass's input and output and
// the probes' per-sample losses, the clean per-sample losses, the noise and the node error —
// are reserved in the trainer's arena.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "zotrain/core/arena.hpp"
#include "zotrain/kernels/perturb.hpp"
#include "zotrain/nn/model.hpp"
#include "zotrain/train/fp32_plan.hpp"

namespace zt::train {

class Fp32NodePerturbation {
 public:
  // Reserves the buffers of the ZO blocks [0, partition) that qualify; none when !enabled.
  Fp32NodePerturbation(nn::Model& model, const Fp32Plan& plan, bool enabled, int partition,
                       int queries, int batch, float eps, const kernels::Perturber& perturber,
                       Arena& arena);
  void bind(const Arena& arena);
  bool enabled() const { return !blocks_.empty(); }

  // Block b's outputs per sample (0: weights only) and its mean active outputs per sample in
  // the clean pass.
  std::size_t block_nodes(int b) const;
  double active_nodes(int b) const;

  // The clean pass: while capturing, the trainer's forward hands every whole-batch layer to
  // capture(); keep_clean_losses() takes its per-sample losses.
  bool capturing() const { return capturing_; }
  void set_capturing(bool on) { capturing_ = on; }
  void capture(int layer, const float* in, const float* out, int n);
  void keep_clean_losses(const float* logits, const std::uint8_t* labels, int n);

  // A forward pass (plan's set 0) from block b's outputs, perturbed by query i; keeps the
  // per-sample losses and returns their mean. x: the batch of the clean pass. θ must be current.
  double probe(int b, int query, std::uint64_t seed, const float* x, const std::uint8_t* labels,
               int n);
  // θ_b −= lr · ĝ_b from the node estimate of q queries. θ must be current.
  void update(int b, int queries, std::uint64_t seed, int n, float lr);

 private:
  struct Block {
    int layer = -1;                   // the layer whose outputs it perturbs (−1: weights only)
    std::size_t in = 0, out = 0;      // floats per sample of its input and output
    bool relu_after = false;          // the next layer is a ReLU: outputs ≤ 0 are inactive nodes
    std::vector<nn::ParamTensor*> params;  // θ_b's tensors
    int h_input = -1, h_clean = -1, h_losses = -1;
    float *input = nullptr, *clean = nullptr;  // the clean pass's [B, in] and [B, out]
    double* losses = nullptr;                  // the probes' per-sample losses [q][B]
    double active = 0;  // mean active outputs per sample in the clean pass
  };
  // The noise ε·ξ of query i on block b's outputs (inactive nodes 0), into xi_.
  void draw(const Block& nb, int b, int query, std::uint64_t seed, int n);

  nn::Model& model_;
  const Fp32Plan& plan_;
  float eps_;
  const kernels::Perturber& perturber_;
  std::vector<Block> blocks_;  // one per ZO block when enabled, else empty
  int h_clean_losses_ = -1, h_xi_ = -1, h_dy_ = -1;
  double* clean_losses_ = nullptr;  // [B]
  float *xi_ = nullptr, *dy_ = nullptr;  // [B, widest]
  bool capturing_ = false;
};

}  // namespace zt::train
