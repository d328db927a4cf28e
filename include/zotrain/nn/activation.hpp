// Parameter-free layers: ReLU and 2x2/2 max-pool (NCHW).
#pragma once

#include "zotrain/kernels/pool.hpp"
#include "zotrain/kernels/relu.hpp"
#include "zotrain/nn/layer.hpp"

namespace zt::nn {

class Relu final : public Layer {
 public:
  Relu(std::string name, kernels::Isa isa);
  const char* kind() const override { return "relu"; }
  Shape infer(const Shape& in) override;
  void forward(int batch, const float* x, float* y, float* scratch) override;
  void backward(int batch, const float* x, const float* y, const float* dy, float* dx,
                float* scratch) override;

 private:
  std::size_t numel_ = 0;
  kernels::ReluForwardF32Fn fwd_;
  kernels::ReluBackwardF32Fn bwd_;
};

class MaxPool2x2 final : public Layer {
 public:
  MaxPool2x2(std::string name, kernels::Isa isa);
  const char* kind() const override { return "maxpool2x2"; }
  Shape infer(const Shape& in) override;
  void forward(int batch, const float* x, float* y, float* scratch) override;
  void backward(int batch, const float* x, const float* y, const float* dy, float* dx,
                float* scratch) override;

 private:
  int c_ = 0, h_ = 0, w_ = 0;
  kernels::MaxPoolForwardF32Fn fwd_;
  kernels::MaxPoolBackwardF32Fn bwd_;
};

}  // namespace zt::nn
