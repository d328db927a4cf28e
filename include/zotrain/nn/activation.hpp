// Parameter-free layers: ReLU, 2x2/2 max-pool (NCHW) and PointNet's max-pool over points.
#pragma once

#include "zotrain/kernels/pool.hpp"
#include "zotrain/kernels/relu.hpp"
#include "zotrain/nn/layer.hpp"

namespace zt::nn {

class Relu final : public Layer {
 public:
  Relu(std::string name, kernels::Isa isa);
  LayerDesc desc() const override { return {LayerOp::kRelu}; }
  Shape infer(const Shape& in) override;
  void forward(int batch, const float* x, float* y, float* scratch) override;
  // Rows of the last input dimension (elementwise, so any split is exact; in place allowed).
  bool row_wise() const override { return true; }
  void forward_rows(std::size_t rows, const float* x, float* y, float* scratch) override;
  void backward(int batch, const float* x, const float* y, const float* dy, float* dx,
                float* scratch) override;

 private:
  std::size_t numel_ = 0, row_ = 0;  // per-sample elements, last dimension
  kernels::ReluForwardF32Fn fwd_;
  kernels::ReluBackwardF32Fn bwd_;
};

class MaxPool2x2 final : public Layer {
 public:
  MaxPool2x2(std::string name, kernels::Isa isa);
  LayerDesc desc() const override { return {LayerOp::kMaxPool2x2}; }
  Shape infer(const Shape& in) override;
  void forward(int batch, const float* x, float* y, float* scratch) override;
  void backward(int batch, const float* x, const float* y, const float* dy, float* dx,
                float* scratch) override;

 private:
  int c_ = 0, h_ = 0, w_ = 0;
  kernels::MaxPoolForwardF32Fn fwd_;
  kernels::MaxPoolBackwardF32Fn bwd_;
};

// Max over points: per-sample [N, C] → [C], y[c] = max_n x[n, c]. Backward routes dy[c] to the
// first maximum over n (recomputed from x, no index buffer); as the 2x2 pool: scan in order with
// `v > best` from x[0, c], so a NaN never replaces a value, a NaN in first place is kept, ties
// keep the first.
class MaxPoolPoints final : public Layer {
 public:
  explicit MaxPoolPoints(std::string name);
  LayerDesc desc() const override { return {LayerOp::kMaxPoolPoints}; }
  Shape infer(const Shape& in) override;  // [N, C] → [C]
  bool prefers_whole_batch() const override { return true; }
  std::size_t scratch_floats(int batch) const override;  // backward: 2C per sample
  void forward(int batch, const float* x, float* y, float* scratch) override;
  // Running max over chunks of points: x [B, np, C] holds the next np points of every sample,
  // y [B, C]. first = true starts the max (y = the chunk's first point), later chunks continue
  // it: chunks fed in point order make exactly forward()'s comparisons, in the same order.
  void forward_points(int batch, int np, bool first, const float* x, float* y) const;
  void backward(int batch, const float* x, const float* y, const float* dy, float* dx,
                float* scratch) override;

 private:
  int n_ = 0, c_ = 0;
};

}  // namespace zt::nn
