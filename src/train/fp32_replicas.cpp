// P-RGE's batched probes (zo.batched; docs/design.md §4): the + and − passes of all q queries
// of a step as one forward over R = 2q replicas of the batch, rows replica-major. θ is never
// modified: a ZO layer materialises each replica's weights θ_l ± ε·z_{l,i} into a scratch copy,
// one draw of z_{l,i} serving both signs, and runs once per replica on that replica's rows; every
// other layer (activations, pooling, the backprop segment's shared weights) runs once over all
// R·n rows. z is the sequential step's (the same stream, query and element offset into θ), so
// replica 2i + s gives the loss of L(θ + (1 − 2s)·ε·z_i): what a sequential pass gives when it
// perturbs a clean θ (the in-place +ε, −2ε walk rounds θ − ε·z slightly differently).
#include "zotrain/train/fp32_replicas.hpp"

#include <algorithm>
#include <cstring>

#include "zotrain/core/error.hpp"
#include "zotrain/core/seeds.hpp"

namespace zt::train {

Fp32Replicas::Fp32Replicas(nn::Model& model, const Fp32Plan& plan, bool enabled, int partition,
                           int queries, int batch, float eps, const kernels::Perturber& perturber,
                           Arena& arena)
    : model_(model),
      plan_(plan),
      enabled_(enabled),
      partition_(partition),
      queries_(queries),
      batch_(batch),
      eps_(eps),
      perturber_(perturber) {
  if (!enabled_) return;
  const int R = 2 * queries, B = batch;
  std::size_t act = 0, w = 0, scratch = 0;
  for (int i = 0; i < model_.size(); ++i) {
    nn::Layer& l = model_.layer(i);
    ZT_CHECK_MSG(!l.joins_previous_parametric(), "batched probes: BatchNorm is not supported");
    act = std::max(act, model_.output_floats(i));
    LayerParams lp;
    lp.tensors = l.params();
    if (!lp.tensors.empty()) lp.first = lp.tensors.front()->data;
    for (nn::ParamTensor* p : lp.tensors) {
      ZT_CHECK_MSG(p->data == lp.first + lp.size, "a layer's parameters are contiguous in θ");
      lp.size += p->size();
    }
    w = std::max(w, lp.size);
    scratch = std::max({scratch, l.scratch_floats(B), l.scratch_floats(R * B)});
    layers_.push_back(std::move(lp));
  }
  const std::size_t rows = static_cast<std::size_t>(R) * static_cast<std::size_t>(B);
  for (int k = 0; k < 2; ++k) h_act_[k] = arena.reserve("replicas.activation", act * rows);
  h_w_ = arena.reserve("replicas.weights", w);
  h_z_ = arena.reserve("replicas.direction", w);
  if (scratch > 0) h_scratch_ = arena.reserve("replicas.scratch", scratch);
}

void Fp32Replicas::bind(const Arena& arena) {
  if (!enabled_) return;
  for (int k = 0; k < 2; ++k) act_[k] = arena.get(h_act_[k]);
  w_ = arena.get(h_w_);
  z_ = arena.get(h_z_);
  scratch_ = h_scratch_ >= 0 ? arena.get(h_scratch_) : nullptr;
}

const float* Fp32Replicas::forward(const float* x, int n, std::span<const std::uint64_t> seeds,
                                   bool bp, telemetry::PhaseTimes& times) {
  const int q = static_cast<int>(seeds.size());
  ZT_CHECK(enabled_ && n >= 1 && n <= batch_ && q >= 1 && q <= queries_);
  const int R = 2 * q, layers = model_.size();
  const int seg = model_.bp_segment_start(partition_);
  const std::size_t rows = static_cast<std::size_t>(R) * static_cast<std::size_t>(n);
  const std::size_t un = static_cast<std::size_t>(n);
  const float* const theta = model_.param_data();
  const float* in = nullptr;  // replica r's input: x for layer 0 (shared), else in + r·n·width
  std::size_t in_width = 0;
  int cur = 0;
  for (int i = 0; i < layers; ++i) {
    nn::Layer& l = model_.layer(i);
    float* out = act_[cur];
    const std::size_t out_width = model_.output_floats(i);
    const LayerParams& lp = layers_[static_cast<std::size_t>(i)];
    if (i < seg && !lp.tensors.empty()) {  // a ZO layer: one forward per replica, own weights
      float* const first = lp.first;
      const std::size_t size = lp.size;
      const std::uint64_t offset = static_cast<std::uint64_t>(first - theta);
      for (int qi = 0; qi < q; ++qi) {
        {
          telemetry::ScopedPhase t(times, telemetry::Phase::kZoPerturb);
          perturber_.fill(z_, size, seeds[static_cast<std::size_t>(qi)],
                          seeds::fp32_perturbation_stream(qi), offset);
        }
        for (int s = 0; s < 2; ++s) {
          const int r = 2 * qi + s;
          {
            telemetry::ScopedPhase t(times, telemetry::Phase::kZoPerturb);
            const float scale = s == 0 ? eps_ : -eps_;
            for (std::size_t k = 0; k < size; ++k) w_[k] = first[k] + scale * z_[k];
          }
          for (nn::ParamTensor* p : lp.tensors) p->data = w_ + (p->data - first);
          const float* xr = i == 0 ? x : in + static_cast<std::size_t>(r) * un * in_width;
          {
            telemetry::ScopedPhase t(times, telemetry::Phase::kForward);
            l.forward(n, xr, out + static_cast<std::size_t>(r) * un * out_width, scratch_);
          }
          for (nn::ParamTensor* p : lp.tensors) p->data = first + (p->data - w_);
        }
      }
    } else {  // shared weights (or none): every replica's rows at once
      ZT_CHECK_MSG(i > 0, "batched probes: the first layer is a ZO layer");
      telemetry::ScopedPhase t(times, telemetry::Phase::kForward);
      l.forward(static_cast<int>(rows), in, out, scratch_);
    }
    // The backprop segment reads layer outputs from seg − 1 on: the last query's − replica's
    // (set 0) and, with two sets, its + replica's (set 1).
    if (bp && i >= seg - 1) {
      for (int set = 0; set < plan_.sets; ++set) {
        const int r = 2 * (q - 1) + (set == 0 ? 1 : 0);
        std::memcpy(plan_.layer_output(i, set), out + static_cast<std::size_t>(r) * un * out_width,
                    un * out_width * sizeof(float));
      }
    }
    in = out;
    in_width = out_width;
    cur ^= 1;
  }
  return in;
}

}  // namespace zt::train
