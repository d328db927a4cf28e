#include "zotrain/nn/conv2d.hpp"

#include <cmath>

#include "zotrain/core/error.hpp"

namespace zt::nn {

Conv2d::Conv2d(std::string name, int in_c, int out_c, int kernel, int pad, kernels::Isa isa)
    : Layer(std::move(name)),
      in_c_(in_c),
      out_c_(out_c),
      kernel_(kernel),
      pad_(pad),
      weight_{this->name() + ".weight", {out_c, in_c, kernel, kernel}},
      bias_{this->name() + ".bias", {out_c}},
      fwd_(kernels::select_conv2d_forward_f32(isa)),
      bwd_(kernels::select_conv2d_backward_f32(isa)) {}

Shape Conv2d::infer(const Shape& in) {
  if (in.dims.size() != 3 || in.dims[0] != in_c_)
    throw Error(name() + ": expected input [" + std::to_string(in_c_) + ", H, W], got " + in.str());
  in_h_ = in.dims[1];
  in_w_ = in.dims[2];
  const kernels::Conv2dShape s = shape(1);
  if (s.out_h() < 1 || s.out_w() < 1) throw Error(name() + ": input " + in.str() + " too small");
  return Shape{{out_c_, s.out_h(), s.out_w()}};
}

kernels::Conv2dShape Conv2d::shape(int batch) const {
  kernels::Conv2dShape s;
  s.batch = batch;
  s.in_c = in_c_;
  s.in_h = in_h_;
  s.in_w = in_w_;
  s.out_c = out_c_;
  s.kernel = kernel_;
  s.pad = pad_;
  return s;
}

void Conv2d::init(SplitMix64& rng) {
  // PyTorch default: kaiming_uniform(a = √5) ⇒ U(−1/√fan_in, 1/√fan_in); bias likewise.
  const float bound = 1.0f / std::sqrt(static_cast<float>(in_c_ * kernel_ * kernel_));
  for (std::size_t i = 0; i < weight_.size(); ++i) weight_.data[i] = (2 * rng.uniform() - 1) * bound;
  for (std::size_t i = 0; i < bias_.size(); ++i) bias_.data[i] = (2 * rng.uniform() - 1) * bound;
}

std::size_t Conv2d::forward_macs() const {
  const kernels::Conv2dShape s = shape(1);
  return static_cast<std::size_t>(out_c_) * s.out_h() * s.out_w() * in_c_ * kernel_ * kernel_;
}

std::size_t Conv2d::scratch_floats(int batch) const {
  return kernels::conv2d_scratch_floats(shape(batch));
}

void Conv2d::forward(int batch, const float* x, float* y, float* scratch) {
  fwd_(shape(batch), x, weight_.data, bias_.data, y, scratch);
}

void Conv2d::backward(int batch, const float* x, const float* /*y*/, const float* dy, float* dx,
                      float* scratch) {
  if (weight_.grad == nullptr && dx == nullptr) return;
  ZT_CHECK(weight_.grad != nullptr);  // a BP layer has both gradients bound
  bwd_(shape(batch), x, weight_.data, dy, dx, weight_.grad, bias_.grad, scratch);
}

}  // namespace zt::nn
