// A sequential model: layers in order, shapes inferred once, all parameters in one contiguous
// FP32 storage (so checkpoints and ZO passes walk one array). Parametric layers are θ_1..θ_L in
// order; a partition point C splits them into the ZO part (θ_1..θ_C) and the BP part.
// A layer that joins_previous_parametric() (BatchNorm) adds its parameters to the θ_l of the
// parametric layer before it, so θ_l is "linear + its BatchNorm" and stays one contiguous range.
// Buffers (BatchNorm running statistics) live in a second contiguous storage, outside θ.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "zotrain/nn/layer.hpp"

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

  // L, and the layer index of θ_{p+1} for p in [0, L) (the layer that starts the group).
  int num_parametric() const { return static_cast<int>(parametric_.size()); }
  int parametric_layer(int p) const { return parametric_[static_cast<std::size_t>(p)]; }
  // Index of the first layer of the backprop segment for partition C (size() when C = L).
  int bp_segment_start(int partition) const;

  std::vector<ParamTensor*> params();                   // all, in order
  std::vector<ParamTensor*> params_of_range(int p_begin, int p_end);  // θ_{p_begin+1..p_end}
  std::size_t num_params() const { return storage_.size(); }
  std::size_t num_params_of_range(int p_begin, int p_end);
  float* param_data() { return storage_.data(); }

  // Non-parameter state (running statistics), in layer order, one contiguous storage.
  std::vector<ParamTensor*> buffers();
  std::size_t num_buffer_floats() const { return buffer_storage_.size(); }
  float* buffer_data() { return buffer_storage_.data(); }

  // Training mode (default) or evaluation, for every layer; see Layer::set_training.
  void set_training(bool training);
  bool training() const { return training_; }
  // See Layer::set_update_running_stats (default true).
  void set_update_running_stats(bool update);

  // Parameters (and buffers) to their initial values.
  void init(std::uint64_t seed);
  std::size_t forward_macs_per_sample() const;
  // The network's description (nn/network_desc.hpp); a joining layer's parameters are counted
  // in the entry of the layer that starts its θ_l (the one marked parametric).
  NetworkDesc describe() const;

 private:
  int group_end(int p) const;  // one past the last layer of θ_{p+1}

  std::string arch_;
  Shape input_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<Shape> shapes_;
  std::vector<int> parametric_;
  std::vector<float> storage_, buffer_storage_;
  bool training_ = true;
};

}  // namespace zt::nn
