#include "zotrain/nn/model.hpp"

#include "zotrain/core/error.hpp"
#include "zotrain/core/partition.hpp"
#include "zotrain/core/seeds.hpp"

namespace zt::nn {

void Layer::forward_rows(std::size_t /*rows*/, const float* /*x*/, float* /*y*/,
                         float* /*scratch*/) {
  ZT_CHECK_MSG(false, name() + " (" + kind() + ") has no row-wise forward");
}

Model::Model(std::string arch, Shape input, std::vector<std::unique_ptr<Layer>> layers)
    : arch_(std::move(arch)), input_(std::move(input)), layers_(std::move(layers)) {
  ZT_CHECK(!layers_.empty());
  Shape s = input_;
  std::size_t total = 0, buffer_total = 0;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    s = layers_[i]->infer(s);
    shapes_.push_back(s);
    auto ps = layers_[i]->params();
    if (!ps.empty()) {
      if (layers_[i]->joins_previous_parametric())
        ZT_CHECK_MSG(!parametric_.empty(), layers_[i]->name() + " joins no parametric layer");
      else
        parametric_.push_back(static_cast<int>(i));
    }
    for (ParamTensor* p : ps) total += p->size();
    for (ParamTensor* b : layers_[i]->buffers()) buffer_total += b->size();
  }
  // Layer order = θ order: params() walks θ_1..θ_L group by group, which is layer order.
  storage_.assign(total, 0.0f);
  std::size_t offset = 0;
  for (ParamTensor* p : params()) {
    p->data = storage_.data() + offset;
    offset += p->size();
  }
  ZT_CHECK(offset == total);
  buffer_storage_.assign(buffer_total, 0.0f);
  offset = 0;
  for (ParamTensor* b : buffers()) {
    b->data = buffer_storage_.data() + offset;
    offset += b->size();
  }
}

int Model::group_end(int p) const {
  return p + 1 < num_parametric() ? parametric_layer(p + 1) : size();
}

int Model::bp_segment_start(int partition) const {
  return zt::bp_segment_start(parametric_, size(), partition);
}

std::vector<ParamTensor*> Model::params() { return params_of_range(0, num_parametric()); }

std::vector<ParamTensor*> Model::params_of_range(int p_begin, int p_end) {
  ZT_CHECK(0 <= p_begin && p_begin <= p_end && p_end <= num_parametric());
  std::vector<ParamTensor*> out;
  for (int p = p_begin; p < p_end; ++p)
    for (int i = parametric_layer(p); i < group_end(p); ++i)  // the layer and those joining it
      for (ParamTensor* t : layer(i).params()) out.push_back(t);
  return out;
}

std::size_t Model::num_params_of_range(int p_begin, int p_end) {
  std::size_t n = 0;
  for (ParamTensor* t : params_of_range(p_begin, p_end)) n += t->size();
  return n;
}

std::vector<ParamTensor*> Model::buffers() {
  std::vector<ParamTensor*> out;
  for (auto& l : layers_)
    for (ParamTensor* b : l->buffers()) out.push_back(b);
  return out;
}

void Model::set_training(bool training) {
  training_ = training;
  for (auto& l : layers_) l->set_training(training);
}

void Model::set_update_running_stats(bool update) {
  for (auto& l : layers_) l->set_update_running_stats(update);
}

void Model::init(std::uint64_t seed) {
  // One generator per layer, keyed by its position, so adding a layer does not reshuffle others.
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    SplitMix64 rng(seeds::layer_init(seed, i));
    layers_[i]->init(rng);
  }
}

std::size_t Model::forward_macs_per_sample() const {
  std::size_t n = 0;
  for (const auto& l : layers_) n += l->forward_macs();
  return n;
}

NetworkDesc Model::describe() const {
  NetworkDesc net{input_, {}};
  int owner = -1;  // entry of the θ_l the current layer belongs to
  Shape in = input_;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    LayerInfo l{layers_[i]->name(), layers_[i]->desc(), in, shapes_[i]};
    std::size_t n = 0;
    for (ParamTensor* p : layers_[i]->params()) n += p->size();
    if (n > 0 && layers_[i]->joins_previous_parametric()) {
      net.layers[static_cast<std::size_t>(owner)].params += n;
    } else {
      l.params = n;
      l.parametric = n > 0;
      if (l.parametric) owner = static_cast<int>(i);
    }
    net.layers.push_back(std::move(l));
    in = shapes_[i];
  }
  return net;
}

}  // namespace zt::nn
