// Layer interface (FP32). Layers own their shapes and call kernels; kernels are chosen once, at
// construction, for a given Isa. Parameters live in the model's contiguous storage: a layer only
// holds ParamTensor views, which the model binds.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "zotrain/core/rng.hpp"
#include "zotrain/core/shape.hpp"
#include "zotrain/nn/network_desc.hpp"

namespace zt::nn {

struct ParamTensor {
  std::string name;         // "conv1.weight"
  std::vector<int> shape;   // e.g. {6, 1, 5, 5}
  float* data = nullptr;    // bound by the model
  float* grad = nullptr;    // bound by a trainer for backprop layers; null = no gradient
  std::size_t size() const {
    std::size_t n = 1;
    for (int d : shape) n *= static_cast<std::size_t>(d);
    return n;
  }
};

class Layer {
 public:
  explicit Layer(std::string name) : name_(std::move(name)) {}
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  const std::string& name() const { return name_; }
  virtual LayerDesc desc() const = 0;
  const char* kind() const { return op_name(desc().op); }  // for reports
  // Per-sample output shape for a per-sample input shape; throws zt::Error on a mismatch.
  virtual Shape infer(const Shape& in) = 0;
  virtual std::vector<ParamTensor*> params() { return {}; }
  bool parametric() const { return !const_cast<Layer*>(this)->params().empty(); }
  // True when this layer's parameters belong to the θ_l of the nearest parametric layer before
  // it instead of starting a θ of their own (BatchNorm: γ, β join the linear layer they follow).
  virtual bool joins_previous_parametric() const { return false; }
  // State that is not a parameter — never perturbed, never trained, not in params() — but is
  // saved with checkpoints (BatchNorm running statistics). Bound by the model like params.
  virtual std::vector<ParamTensor*> buffers() { return {}; }
  // Training mode (the default; BatchNorm normalises with batch statistics) or evaluation
  // (running statistics). No-op for layers that behave the same in both.
  virtual void set_training(bool /*training*/) {}
  // Whether a training-mode forward pass updates the running statistics (default true). Lets a
  // ZO step update them once per step although it runs two forward passes.
  virtual void set_update_running_stats(bool /*update*/) {}
  // True when the forward pass is a matrix product over the batch that is much faster on the
  // whole batch than on small chunks of it (linear layers: one packed weight, M = batch).
  virtual bool prefers_whole_batch() const { return false; }
  // PyTorch-default initialisation of this layer's parameters.
  virtual void init(SplitMix64& /*rng*/) {}
  // Multiply–accumulates of one forward pass, per sample.
  virtual std::size_t forward_macs() const { return 0; }
  virtual std::size_t scratch_floats(int /*batch*/) const { return 0; }

  // x [B, in...], y [B, out...].
  virtual void forward(int batch, const float* x, float* y, float* scratch) = 0;
  // Row-wise layers over per-sample [N, C] inputs (PointNet's per-point layers: PointLinear,
  // BatchNorm, ReLU): forward_rows() maps any set of rows x [rows, C_in] to y [rows, C_out], each
  // row bit-identical to what forward() gives it (BatchNorm: with its current statistics).
  // Lets a trainer stream chunks of points through a layer. Others: false, and forward_rows()
  // must not be called.
  virtual bool row_wise() const { return false; }
  virtual void forward_rows(std::size_t rows, const float* x, float* y, float* scratch);
  // Accumulates parameter gradients into ParamTensor::grad (when bound); writes dx unless null.
  virtual void backward(int batch, const float* x, const float* y, const float* dy, float* dx,
                        float* scratch) = 0;

 private:
  std::string name_;
};

}  // namespace zt::nn
