// Fully connected layer with bias: y[B, O] = x[B, I] · W[O, I]ᵀ + b[O]. Any input shape whose
// element count is I is accepted (flatten is a view, not a layer).
#pragma once

#include "zotrain/kernels/gemm.hpp"
#include "zotrain/nn/layer.hpp"

namespace zt::nn {

class Linear final : public Layer {
 public:
  Linear(std::string name, int in_features, int out_features, kernels::Isa isa);
  const char* kind() const override { return "linear"; }
  Shape infer(const Shape& in) override;
  std::vector<ParamTensor*> params() override { return {&weight_, &bias_}; }
  bool is_matmul() const override { return true; }
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

}  // namespace zt::nn
