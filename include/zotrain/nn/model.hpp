// A sequential model: layers in order, shapes inferred once, all parameters in one contiguous
// FP32 storage (so checkpoints and ZO passes walk one array). Parametric layers are θ_1..θ_L in
// order; a partition point C splits them into the ZO part (θ_1..θ_C) and the BP part.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "zotrain/nn/layer.hpp"
#include "zotrain/telemetry/memory.hpp"

namespace zt::nn {

class Model {
 public:
  Model(std::string arch, Shape input, std::vector<std::unique_ptr<Layer>> layers);

  const std::string& arch() const { return arch_; }
  int size() const { return static_cast<int>(layers_.size()); }
  Layer& layer(int i) { return *layers_[static_cast<std::size_t>(i)]; }
  const Shape& input_shape() const { return input_; }
  const Shape& output_shape(int i) const { return shapes_[static_cast<std::size_t>(i)]; }
  std::size_t input_floats() const { return input_.numel(); }
  std::size_t output_floats(int i) const { return output_shape(i).numel(); }
  int num_classes() const { return static_cast<int>(output_floats(size() - 1)); }

  // L, and the layer index of θ_{p+1} for p in [0, L).
  int num_parametric() const { return static_cast<int>(parametric_.size()); }
  int parametric_layer(int p) const { return parametric_[static_cast<std::size_t>(p)]; }
  // Index of the first layer of the backprop segment for partition C (size() when C = L).
  int bp_segment_start(int partition) const;

  std::vector<ParamTensor*> params();                   // all, in order
  std::vector<ParamTensor*> params_of_range(int p_begin, int p_end);  // θ_{p_begin+1..p_end}
  std::size_t num_params() const { return storage_.size(); }
  std::size_t num_params_of_range(int p_begin, int p_end);
  float* param_data() { return storage_.data(); }

  void init(std::uint64_t seed);
  std::size_t forward_macs_per_sample() const;
  std::vector<telemetry::LayerFootprint> footprint() const;

 private:
  std::string arch_;
  Shape input_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<Shape> shapes_;
  std::vector<int> parametric_;
  std::vector<float> storage_;
};

}  // namespace zt::nn
