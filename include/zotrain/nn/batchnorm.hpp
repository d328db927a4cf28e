// BatchNorm over the last dimension, per-sample [N, C] or [C]; statistics per channel over all
// M = B·N rows of the batch, so it needs the whole batch (prefers_whole_batch).
//   training:   y = γ (x − μ) / √(σ² + eps) + β, μ and σ² the batch mean and biased variance;
//               unless disabled, running_mean ← (1 − m)·running_mean + m·μ and
//               running_var ← (1 − m)·running_var + m·σ²·M/(M − 1) (unbiased, as PyTorch).
//   evaluation: the same with the running statistics; nothing is updated.
// γ, β are parameters that join the preceding parametric layer's θ_l; the running statistics
// are buffers (not perturbed, not trained, saved with checkpoints). Backward recomputes the
// batch statistics from x (no saved state, identical to the forward's), so it is correct for
// whichever forward pass produced x. M = 1 in training gives y = β (σ² = 0).
#pragma once

#include "zotrain/nn/layer.hpp"

namespace zt::nn {

class BatchNorm final : public Layer {
 public:
  BatchNorm(std::string name, int channels, float momentum = 0.1f, float eps = 1e-5f);
  const char* kind() const override { return "batchnorm"; }
  Shape infer(const Shape& in) override;  // [N, C] or [C], unchanged
  std::vector<ParamTensor*> params() override { return {&weight_, &bias_}; }
  std::vector<ParamTensor*> buffers() override { return {&running_mean_, &running_var_}; }
  bool joins_previous_parametric() const override { return true; }
  bool prefers_whole_batch() const override { return true; }
  void set_training(bool training) override { training_ = training; }
  void set_update_running_stats(bool update) override { update_stats_ = update; }
  bool training() const { return training_; }
  // γ = 1, β = 0, running mean 0, running variance 1 (PyTorch).
  void init(SplitMix64& rng) override;
  std::size_t scratch_floats(int batch) const override;
  // x, y [B, N, C].
  void forward(int batch, const float* x, float* y, float* scratch) override;
  // Accumulates dγ, dβ (when bound); dx unless null. Training mode: the full batch-norm
  // backward through μ and σ²; evaluation mode: the affine map of the running statistics.
  void backward(int batch, const float* x, const float* y, const float* dy, float* dx,
                float* scratch) override;

 private:
  // mean[C] and inv_std[C] = 1/√(σ² + eps) of the batch (training) or the running statistics;
  // var[C] gets the biased batch variance when non-null (training only).
  void statistics(std::size_t rows, const float* x, float* mean, float* inv_std, float* var) const;

  int c_;
  int rows_ = 0;  // N (1 for a [C] input)
  float momentum_, eps_;
  bool training_ = true, update_stats_ = true;
  ParamTensor weight_, bias_;               // γ [C], β [C]
  ParamTensor running_mean_, running_var_;  // [C] each
};

}  // namespace zt::nn
