#include "zotrain/nn/activation.hpp"

#include "zotrain/core/error.hpp"

namespace zt::nn {

Relu::Relu(std::string name, kernels::Isa isa)
    : Layer(std::move(name)),
      fwd_(kernels::select_relu_forward_f32(isa)),
      bwd_(kernels::select_relu_backward_f32(isa)) {}

Shape Relu::infer(const Shape& in) {
  numel_ = in.numel();
  return in;
}

void Relu::forward(int batch, const float* x, float* y, float* /*scratch*/) {
  fwd_(numel_ * static_cast<std::size_t>(batch), x, y);
}

void Relu::backward(int batch, const float* /*x*/, const float* y, const float* dy, float* dx,
                    float* /*scratch*/) {
  if (dx != nullptr) bwd_(numel_ * static_cast<std::size_t>(batch), y, dy, dx);
}

MaxPool2x2::MaxPool2x2(std::string name, kernels::Isa isa)
    : Layer(std::move(name)),
      fwd_(kernels::select_maxpool2x2_forward_f32(isa)),
      bwd_(kernels::select_maxpool2x2_backward_f32(isa)) {}

Shape MaxPool2x2::infer(const Shape& in) {
  if (in.dims.size() != 3 || in.dims[1] < 2 || in.dims[2] < 2)
    throw Error(name() + ": expected input [C, H≥2, W≥2], got " + in.str());
  c_ = in.dims[0];
  h_ = in.dims[1];
  w_ = in.dims[2];
  return Shape{{c_, h_ / 2, w_ / 2}};
}

void MaxPool2x2::forward(int batch, const float* x, float* y, float* /*scratch*/) {
  fwd_(batch * c_, h_, w_, x, y);
}

void MaxPool2x2::backward(int batch, const float* x, const float* /*y*/, const float* dy,
                          float* dx, float* /*scratch*/) {
  if (dx != nullptr) bwd_(batch * c_, h_, w_, x, dy, dx);
}

}  // namespace zt::nn
