#include "zotrain/nn/linear.hpp"

#include <cmath>

#include "zotrain/core/error.hpp"

namespace zt::nn {

Linear::Linear(std::string name, int in_features, int out_features, kernels::Isa isa)
    : Layer(std::move(name)),
      in_(in_features),
      out_(out_features),
      weight_{this->name() + ".weight", {out_features, in_features}},
      bias_{this->name() + ".bias", {out_features}},
      gemm_(kernels::select_gemm_f32(isa)) {}

Shape Linear::infer(const Shape& in) {
  if (in.numel() != static_cast<std::size_t>(in_))
    throw Error(name() + ": expected " + std::to_string(in_) + " input features, got " + in.str());
  return Shape{{out_}};
}

void Linear::init(SplitMix64& rng) {
  const float bound = 1.0f / std::sqrt(static_cast<float>(in_));
  for (std::size_t i = 0; i < weight_.size(); ++i) weight_.data[i] = (2 * rng.uniform() - 1) * bound;
  for (std::size_t i = 0; i < bias_.size(); ++i) bias_.data[i] = (2 * rng.uniform() - 1) * bound;
}

std::size_t Linear::forward_macs() const { return static_cast<std::size_t>(in_) * out_; }

void Linear::forward(int batch, const float* x, float* y, float* /*scratch*/) {
  // y[B, O] = b (broadcast), then += x[B, I] · W[O, I]ᵀ
  for (int b = 0; b < batch; ++b)
    for (int o = 0; o < out_; ++o) y[static_cast<std::size_t>(b) * out_ + o] = bias_.data[o];
  gemm_(false, true, batch, out_, in_, x, in_, weight_.data, in_, y, out_, true);
}

void Linear::backward(int batch, const float* x, const float* /*y*/, const float* dy, float* dx,
                      float* /*scratch*/) {
  if (weight_.grad != nullptr) {
    // dW[O, I] += dy[B, O]ᵀ · x[B, I];  db[O] += Σ_b dy[b, O]
    gemm_(true, false, out_, in_, batch, dy, out_, x, in_, weight_.grad, in_, true);
    for (int b = 0; b < batch; ++b)
      for (int o = 0; o < out_; ++o) bias_.grad[o] += dy[static_cast<std::size_t>(b) * out_ + o];
  }
  // dx[B, I] = dy[B, O] · W[O, I]
  if (dx != nullptr) gemm_(false, false, batch, in_, out_, dy, out_, weight_.data, in_, dx, in_, false);
}

PointLinear::PointLinear(std::string name, int in_features, int out_features, bool bias,
                         kernels::Isa isa)
    : Layer(std::move(name)),
      in_(in_features),
      out_(out_features),
      has_bias_(bias),
      weight_{this->name() + ".weight", {out_features, in_features}},
      bias_{this->name() + ".bias", {out_features}},
      gemm_(kernels::select_gemm_f32(isa)) {}

Shape PointLinear::infer(const Shape& in) {
  if (in.dims.size() != 2 || in.dims[0] < 1 || in.dims[1] != in_)
    throw Error(name() + ": expected input [N, " + std::to_string(in_) + "], got " + in.str());
  points_ = in.dims[0];
  return Shape{{points_, out_}};
}

std::vector<ParamTensor*> PointLinear::params() {
  if (has_bias_) return {&weight_, &bias_};
  return {&weight_};
}

void PointLinear::init(SplitMix64& rng) {
  // PyTorch's Linear / Conv1d(k = 1): Kaiming-uniform(a = √5) = U(±1/√fan_in), bias likewise.
  const float bound = 1.0f / std::sqrt(static_cast<float>(in_));
  for (std::size_t i = 0; i < weight_.size(); ++i)
    weight_.data[i] = (2 * rng.uniform() - 1) * bound;
  if (has_bias_)
    for (std::size_t i = 0; i < bias_.size(); ++i) bias_.data[i] = (2 * rng.uniform() - 1) * bound;
}

std::size_t PointLinear::forward_macs() const {
  return static_cast<std::size_t>(points_) * static_cast<std::size_t>(in_) * out_;
}

void PointLinear::forward(int batch, const float* x, float* y, float* scratch) {
  forward_rows(static_cast<std::size_t>(batch) * static_cast<std::size_t>(points_), x, y, scratch);
}

void PointLinear::forward_rows(std::size_t nrows, const float* x, float* y, float* /*scratch*/) {
  // y[rows, O] = (b broadcast) + x[rows, I] · W[O, I]ᵀ
  const int rows = static_cast<int>(nrows);
  if (has_bias_)
    for (int r = 0; r < rows; ++r)
      for (int o = 0; o < out_; ++o) y[static_cast<std::size_t>(r) * out_ + o] = bias_.data[o];
  gemm_(false, true, rows, out_, in_, x, in_, weight_.data, in_, y, out_, has_bias_);
}

void PointLinear::backward(int batch, const float* x, const float* /*y*/, const float* dy,
                           float* dx, float* /*scratch*/) {
  backward_rows(static_cast<std::size_t>(batch) * static_cast<std::size_t>(points_), x, dy, dx);
}

void PointLinear::backward_rows(std::size_t nrows, const float* x, const float* dy, float* dx) {
  const int rows = static_cast<int>(nrows);
  if (weight_.grad != nullptr) {
    // dW[O, I] += dy[B·N, O]ᵀ · x[B·N, I];  db[O] += Σ_rows dy[r, O]
    gemm_(true, false, out_, in_, rows, dy, out_, x, in_, weight_.grad, in_, true);
    if (has_bias_)
      for (int r = 0; r < rows; ++r)
        for (int o = 0; o < out_; ++o) bias_.grad[o] += dy[static_cast<std::size_t>(r) * out_ + o];
  }
  // dx[B·N, I] = dy[B·N, O] · W[O, I]
  if (dx != nullptr)
    gemm_(false, false, rows, in_, out_, dy, out_, weight_.data, in_, dx, in_, false);
}

}  // namespace zt::nn
