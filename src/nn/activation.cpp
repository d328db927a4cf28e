#include "zotrain/nn/activation.hpp"

#include <cstring>

#include "zotrain/core/error.hpp"

namespace zt::nn {

Relu::Relu(std::string name, kernels::Isa isa)
    : Layer(std::move(name)),
      fwd_(kernels::select_relu_forward_f32(isa)),
      bwd_(kernels::select_relu_backward_f32(isa)) {}

Shape Relu::infer(const Shape& in) {
  numel_ = in.numel();
  row_ = in.dims.empty() ? 1 : static_cast<std::size_t>(in.dims.back());
  return in;
}

void Relu::forward_rows(std::size_t rows, const float* x, float* y, float* /*scratch*/) {
  fwd_(rows * row_, x, y);
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

MaxPoolPoints::MaxPoolPoints(std::string name) : Layer(std::move(name)) {}

Shape MaxPoolPoints::infer(const Shape& in) {
  if (in.dims.size() != 2 || in.dims[0] < 1 || in.dims[1] < 1 || in.dims[0] > (1 << 24))
    throw Error(name() + ": expected input [N, C] with 1 ≤ N ≤ 2^24, got " + in.str());
  n_ = in.dims[0];
  c_ = in.dims[1];
  return Shape{{c_}};
}

std::size_t MaxPoolPoints::scratch_floats(int batch) const {
  return 2 * static_cast<std::size_t>(c_) * static_cast<std::size_t>(batch);
}

void MaxPoolPoints::forward(int batch, const float* x, float* y, float* /*scratch*/) {
  forward_points(batch, n_, true, x, y);
}

void MaxPoolPoints::forward_points(int batch, int np, bool first, const float* x,
                                   float* y) const {
  const std::size_t C = static_cast<std::size_t>(c_), N = static_cast<std::size_t>(np);
  if (np <= 0) return;
#pragma omp parallel for schedule(static) if (batch > 1 && N * C >= (std::size_t{1} << 16))
  for (int b = 0; b < batch; ++b) {
    const float* xb = x + static_cast<std::size_t>(b) * N * C;
    float* yb = y + static_cast<std::size_t>(b) * C;
    if (first)
      for (std::size_t c = 0; c < C; ++c) yb[c] = xb[c];
    for (std::size_t n = first ? 1 : 0; n < N; ++n)
      for (std::size_t c = 0; c < C; ++c) {
        const float v = xb[n * C + c];
        yb[c] = v > yb[c] ? v : yb[c];
      }
  }
}

void MaxPoolPoints::backward(int batch, const float* x, const float* /*y*/, const float* dy,
                             float* dx, float* scratch) {
  if (dx == nullptr) return;
  const std::size_t C = static_cast<std::size_t>(c_), N = static_cast<std::size_t>(n_);
#pragma omp parallel for schedule(static) if (batch > 1 && N * C >= (std::size_t{1} << 16))
  for (int b = 0; b < batch; ++b) {
    const float* xb = x + static_cast<std::size_t>(b) * N * C;
    float* dxb = dx + static_cast<std::size_t>(b) * N * C;
    float* best = scratch + static_cast<std::size_t>(b) * 2 * C;
    float* idx = best + C;  // point index of the first maximum (exact in float: N ≤ 2^24)
    for (std::size_t c = 0; c < C; ++c) {
      best[c] = xb[c];
      idx[c] = 0.0f;
    }
    for (std::size_t n = 1; n < N; ++n) {
      const float fn = static_cast<float>(n);
      for (std::size_t c = 0; c < C; ++c) {
        const float v = xb[n * C + c];
        const bool gt = v > best[c];
        best[c] = gt ? v : best[c];
        idx[c] = gt ? fn : idx[c];
      }
    }
    std::memset(dxb, 0, N * C * sizeof(float));
    for (std::size_t c = 0; c < C; ++c)
      dxb[static_cast<std::size_t>(idx[c]) * C + c] = dy[static_cast<std::size_t>(b) * C + c];
  }
}

}  // namespace zt::nn
