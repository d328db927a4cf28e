// P-RGE's batched probes (zo.batched; docs/design.md §4): the + and − passes of all q queries
// of a step as one forward over R = 2q replicas of the batch, rows replica-major, θ untouched.
// Its buffers (two ping-pong activations of R·B rows, one layer's weights and direction, the
// layers' scratch at R·B rows) are reserved in the trainer's arena. Models without BatchNorm
// only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "zotrain/core/arena.hpp"
#include "zotrain/kernels/perturb.hpp"
#include "zotrain/nn/model.hpp"
#include "zotrain/telemetry/phases.hpp"
#include "zotrain/train/fp32_plan.hpp"

namespace zt::train {

class Fp32Replicas {
 public:
  // Reserves the replicas' buffers for up to `queries` queries of `batch` samples (nothing when
  // !enabled: forward() may not be called).
  Fp32Replicas(nn::Model& model, const Fp32Plan& plan, bool enabled, int partition, int queries,
               int batch, float eps, const kernels::Perturber& perturber, Arena& arena);
  void bind(const Arena& arena);

  // Replica 2i + s (s = 0: +, 1: −) of the batch x runs at θ_{1..C} + (1 − 2s)·ε·z_i, z_i drawn
  // with seeds[i] (i < q = seeds.size()); returns the logits of all 2q replicas, [2q·n,
  // classes]. With `bp`, the activations of the backprop segment of replica 2(q−1) + 1 (and of
  // 2(q−1) with two activation sets) go to the plan's buffers, as a sequential − (+) pass
  // leaves them. θ must be current (no pending update).
  const float* forward(const float* x, int n, std::span<const std::uint64_t> seeds, bool bp,
                       telemetry::PhaseTimes& times);

 private:
  struct LayerParams {  // a layer's parameter tensors, one contiguous range of θ
    std::vector<nn::ParamTensor*> tensors;
    float* first = nullptr;
    std::size_t size = 0;
  };
  nn::Model& model_;
  const Fp32Plan& plan_;
  bool enabled_;
  int partition_, queries_, batch_;
  float eps_;
  const kernels::Perturber& perturber_;
  std::vector<LayerParams> layers_;
  int h_act_[2] = {-1, -1}, h_w_ = -1, h_z_ = -1, h_scratch_ = -1;
  float *act_[2] = {nullptr, nullptr}, *w_ = nullptr, *z_ = nullptr, *scratch_ = nullptr;
};

}  // namespace zt::train
