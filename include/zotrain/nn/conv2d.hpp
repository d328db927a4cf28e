// Conv2d layer: NCHW, square kernel, stride 1, zero padding, with bias. Weight [O, C, k, k].
#pragma once

#include "zotrain/kernels/conv2d.hpp"
#include "zotrain/nn/layer.hpp"

namespace zt::nn {

class Conv2d final : public Layer {
 public:
  Conv2d(std::string name, int in_c, int out_c, int kernel, int pad, kernels::Isa isa);
  LayerDesc desc() const override { return {LayerOp::kConv2d, kernel_, pad_}; }
  Shape infer(const Shape& in) override;
  std::vector<ParamTensor*> params() override { return {&weight_, &bias_}; }
  void init(SplitMix64& rng) override;
  std::size_t forward_macs() const override;
  std::size_t scratch_floats(int batch) const override;
  void forward(int batch, const float* x, float* y, float* scratch) override;
  void backward(int batch, const float* x, const float* y, const float* dy, float* dx,
                float* scratch) override;

 private:
  kernels::Conv2dShape shape(int batch) const;
  int in_c_, out_c_, kernel_, pad_, in_h_ = 0, in_w_ = 0;
  ParamTensor weight_, bias_;
  kernels::Conv2dForwardF32Fn fwd_;
  kernels::Conv2dBackwardF32Fn bwd_;
};

}  // namespace zt::nn
