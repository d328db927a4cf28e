// Fully connected layer with bias: y[B, O] = x[B, I] · W[O, I]ᵀ + b[O]. Any input shape whose
// element count is I is accepted (flatten is a view, not a layer).
// PointLinear: the same map shared by every point (PointNet's 1x1 convolution), per-sample
// [N, I] → [N, O], bias optional: one GEMM over all B·N rows.
#pragma once

#include "zotrain/kernels/gemm.hpp"
#include "zotrain/nn/layer.hpp"

namespace zt::nn {

class Linear final : public Layer {
 public:
  Linear(std::string name, int in_features, int out_features, kernels::Isa isa);
  LayerDesc desc() const override { return {LayerOp::kLinear}; }
  Shape infer(const Shape& in) override;
  std::vector<ParamTensor*> params() override { return {&weight_, &bias_}; }
  bool prefers_whole_batch() const override { return true; }
  void init(SplitMix64& rng) override;
  std::size_t forward_macs() const override;
  void forward(int batch, const float* x, float* y, float* scratch) override;
  void backward(int batch, const float* x, const float* y, const float* dy, float* dx,
                float* scratch) override;

 private:
  int in_, out_;
  ParamTensor weight_, bias_;
  kernels::GemmF32Fn gemm_;
};

class PointLinear final : public Layer {
 public:
  PointLinear(std::string name, int in_features, int out_features, bool bias, kernels::Isa isa);
  LayerDesc desc() const override { return {LayerOp::kPointLinear}; }
  Shape infer(const Shape& in) override;  // [N, I] → [N, O]
  std::vector<ParamTensor*> params() override;
  bool prefers_whole_batch() const override { return true; }
  void init(SplitMix64& rng) override;
  std::size_t forward_macs() const override;  // N·I·O
  // x [B, N, I], y [B, N, O].
  void forward(int batch, const float* x, float* y, float* scratch) override;
  // x [rows, I], y [rows, O]: one GEMM over the rows (per row the same k-ordered sums as
  // forward(), whatever the row count).
  bool row_wise() const override { return true; }
  void forward_rows(std::size_t rows, const float* x, float* y, float* scratch) override;
  void backward(int batch, const float* x, const float* y, const float* dy, float* dx,
                float* scratch) override;
  // backward() for any rows x [rows, I], dy [rows, O]: dx rows bit-identical to backward()'s;
  // dW, db accumulate, so consecutive row ranges in order give backward()'s sums when each
  // range but the last is a multiple of kernels::kGemmDepthBlock rows.
  void backward_rows(std::size_t rows, const float* x, const float* dy, float* dx);

 private:
  int in_, out_, points_ = 0;
  bool has_bias_;
  ParamTensor weight_, bias_;  // [O, I], [O] (bias_ unused without bias)
  kernels::GemmF32Fn gemm_;
};

}  // namespace zt::nn
