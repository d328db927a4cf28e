// BatchNorm over the last dimension, per-sample [N, C] or [C]; statistics per channel over all
// M = B·N rows of the batch, so it needs the whole batch (prefers_whole_batch).
//   training:   y = γ (x − μ) / √(σ² + eps) + β, μ and σ² the batch mean and biased variance;
//               unless disabled, running_mean ← (1 − m)·running_mean + m·μ and
//               running_var ← (1 − m)·running_var + m·σ²·M/(M − 1) (unbiased, as PyTorch).
//   evaluation: the same with the running statistics; nothing is updated.
// γ, β are parameters that join the preceding parametric layer's θ_l; the running statistics
// are buffers (not perturbed, not trained, saved with checkpoints). Backward recomputes the
// batch statistics from x (identical to the forward's), so it is correct for whichever forward
// pass produced x. M = 1 in training gives y = β (σ² = 0).
//
// Batch statistics are formed in one fixed order so that a batch split into point chunks gives
// bit-identical μ, σ²: each sample's N rows are cut into blocks of kStatRowBlock rows; a block's
// sum and squared deviations are float sums in row order, and blocks are merged into per-channel
// double (count, mean, M2) (Chan et al.) block-major, then sample: block 0 of samples 0..B−1,
// block 1 of samples 0..B−1, and so on ([C] inputs: the B rows are one sample's rows). Chunks of
// points [p0, p0 + P) of all samples, P a multiple of kStatRowBlock (or reaching N), fed in
// order to accumulate_statistics() therefore repeat the whole-batch forward's operations.
#pragma once

#include <vector>

#include "zotrain/nn/layer.hpp"

namespace zt::nn {

class BatchNorm final : public Layer {
 public:
  BatchNorm(std::string name, int channels, float momentum = 0.1f, float eps = 1e-5f);
  LayerDesc desc() const override { return {LayerOp::kBatchNorm}; }
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
  // x, y [B, N, C].
  void forward(int batch, const float* x, float* y, float* scratch) override;
  bool row_wise() const override { return true; }
  // x, y [rows, C] (in place allowed), normalised with the statistics of the last
  // finish_statistics() (or forward()): y = (x − μ)·γ/√(σ² + eps) + β, bit-identical per row to
  // forward().
  void forward_rows(std::size_t rows, const float* x, float* y, float* scratch) override;

  static constexpr int kStatRowBlock = 32;
  // Chunked statistics: begin, accumulate x [segments, seg_rows, C] in order (see the header
  // comment), finish. finish_statistics() sets μ and 1/√(σ² + eps) for forward_rows() — in
  // evaluation mode from the running statistics, ignoring anything accumulated — and, in
  // training mode with updates enabled, moves the running statistics as forward() does.
  void begin_statistics();
  void accumulate_statistics(int segments, std::size_t seg_rows, const float* x);
  void finish_statistics() { finish(update_stats_); }
  // γ/√(σ² + eps) per channel [C] of the current statistics (its sign tells whether the
  // normalisation is increasing or decreasing in x).
  const float* scale() const { return scale_.data(); }
  // Accumulates dγ, dβ (when bound); dx unless null. Training mode: the full batch-norm
  // backward through μ and σ²; evaluation mode: the affine map of the running statistics.
  void backward(int batch, const float* x, const float* y, const float* dy, float* dx,
                float* scratch) override;
  // The backward in two steps, so a trainer can stream rows (Fp32Trainer's lean plan): the sums
  // over the batch, which accumulate dγ, dβ and fix the per-channel factors, then
  // backward_rows(), which maps any rows x, dy [rows, C] to dx with them, each row bit-identical
  // to backward(). backward() = its own dense sums + backward_rows() over the whole batch.
  // backward_sums_sparse(): the sums (training mode, statistics from the last forward) for a dy
  // of [B, N, C] that is zero except dy[b, at[b, c], c] = val[b, c], where x is x_at[b, c] —
  // what a max-pool over points leaves — bit-identical to the dense sums. at holds point
  // indices as floats (exact for N ≤ 2^24); at, val, x_at are [B, C].
  void backward_sums_sparse(int batch, const float* at, const float* val, const float* x_at);
  void backward_rows(std::size_t rows, const float* x, const float* dy, float* dx) const;

 private:
  void finish(bool update_running);
  // Whole-batch statistics of x [B, N, C] into mean_, inv_std_ (begin, accumulate, finish).
  void batch_statistics(int batch, const float* x, bool update_running);

  int c_;
  int rows_ = 0;  // N (1 for a [C] input)
  float momentum_, eps_;
  bool training_ = true, update_stats_ = true;
  ParamTensor weight_, bias_;               // γ [C], β [C]
  ParamTensor running_mean_, running_var_;  // [C] each
  // Statistics state, sized once at construction: merged count, mean, M2 (double), and the
  // resulting μ, 1/√(σ² + eps), γ/√(σ² + eps) used to normalise.
  double acc_n_ = 0;
  std::vector<double> acc_mean_, acc_m2_;
  std::vector<float> mean_, inv_std_, scale_;
  // Backward: Σdy and Σ(dy·x̂) per channel, then (training) the factors backward_rows() applies.
  std::vector<float> sum_dy_, sum_dy_xhat_;
  void finish_backward_sums(std::size_t rows);
};

}  // namespace zt::nn
