#include "zotrain/nn/model.hpp"

#include "zotrain/core/error.hpp"

namespace zt::nn {

Model::Model(std::string arch, Shape input, std::vector<std::unique_ptr<Layer>> layers)
    : arch_(std::move(arch)), input_(std::move(input)), layers_(std::move(layers)) {
  ZT_CHECK(!layers_.empty());
  Shape s = input_;
  std::size_t total = 0;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    s = layers_[i]->infer(s);
    shapes_.push_back(s);
    auto ps = layers_[i]->params();
    if (!ps.empty()) parametric_.push_back(static_cast<int>(i));
    for (ParamTensor* p : ps) total += p->size();
  }
  storage_.assign(total, 0.0f);
  std::size_t offset = 0;
  for (ParamTensor* p : params()) {
    p->data = storage_.data() + offset;
    offset += p->size();
  }
}

int Model::bp_segment_start(int partition) const {
  ZT_CHECK(partition >= 0 && partition <= num_parametric());
  if (partition == num_parametric()) return size();
  return parametric_layer(partition);
}

std::vector<ParamTensor*> Model::params() { return params_of_range(0, num_parametric()); }

std::vector<ParamTensor*> Model::params_of_range(int p_begin, int p_end) {
  ZT_CHECK(0 <= p_begin && p_begin <= p_end && p_end <= num_parametric());
  std::vector<ParamTensor*> out;
  for (int p = p_begin; p < p_end; ++p)
    for (ParamTensor* t : layer(parametric_layer(p)).params()) out.push_back(t);
  return out;
}

std::size_t Model::num_params_of_range(int p_begin, int p_end) {
  std::size_t n = 0;
  for (ParamTensor* t : params_of_range(p_begin, p_end)) n += t->size();
  return n;
}

void Model::init(std::uint64_t seed) {
  // One generator per layer, keyed by its position, so adding a layer does not reshuffle others.
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    SplitMix64 rng(mix64(seed ^ mix64(0x1417 + i)));
    layers_[i]->init(rng);
  }
}

std::size_t Model::forward_macs_per_sample() const {
  std::size_t n = 0;
  for (const auto& l : layers_) n += l->forward_macs();
  return n;
}

std::vector<telemetry::LayerFootprint> Model::footprint() const {
  std::vector<telemetry::LayerFootprint> out;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    telemetry::LayerFootprint f;
    f.name = layers_[i]->name();
    f.kind = layers_[i]->kind();
    f.matmul = layers_[i]->is_matmul();
    for (ParamTensor* p : layers_[i]->params()) f.params += p->size();
    f.parametric = f.params > 0;
    f.out_per_sample = shapes_[i].numel();
    out.push_back(f);
  }
  return out;
}

}  // namespace zt::nn
