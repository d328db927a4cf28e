// P-RGE's batched probes (zo.batched; docs/design.md §4): the + and − passes of all q queries
// of a step as one forward over R = 2q replicas of the batch, rows replica-major. θ is never
// modified: a ZO layer materialises each replica's weights θ_l ± ε·z_{l,i} into a scratch copy,
// one draw of z_{l,i} serving both signs, and runs once per replica on that replica's rows; every
// other layer (activations, pooling, the backprop segment's shared weights) runs once over all
// R·n rows. z is the sequential step's (the same stream, query and element offset into θ), so
// replica 2i + s gives the loss of L(θ + (1 − 2s)·ε·z_i): what a sequential pass gives when it
// perturbs a clean θ (the in-place +ε, −2ε walk rounds θ − ε·z slightly differently).
#include <algorithm>
#include <cstring>

#include "zotrain/core/error.hpp"
#include "zotrain/core/seeds.hpp"
#include "zotrain/train/fp32_trainer.hpp"

namespace zt::train {

void Fp32Trainer::init_replicas() {
  const int R = 2 * opt_.queries, B = opt_.batch_size;
  std::size_t act = 0, w = 0, scratch = 0;
  for (int i = 0; i < model_.size(); ++i) {
    nn::Layer& l = model_.layer(i);
    ZT_CHECK_MSG(!l.joins_previous_parametric(), "batched probes: BatchNorm is not supported");
    act = std::max(act, model_.output_floats(i));
    std::size_t params = 0;
    for (const nn::ParamTensor* p : l.params()) params += p->size();
    w = std::max(w, params);
    scratch = std::max({scratch, l.scratch_floats(B), l.scratch_floats(R * B)});
  }
  const std::size_t rows = static_cast<std::size_t>(R) * static_cast<std::size_t>(B);
  for (auto& a : rep_act_) a.assign(act * rows, 0.0f);
  rep_w_.assign(w, 0.0f);
  rep_z_.assign(w, 0.0f);
  rep_scratch_.assign(scratch, 0.0f);
}

const float* Fp32Trainer::forward_replicas(const float* x, int n, std::uint64_t seed, int q,
                                           bool bp, telemetry::PhaseTimes& times) {
  ZT_CHECK(opt_.batched && n >= 1 && n <= opt_.batch_size && q >= 1 && q <= opt_.queries);
  sync_weights();
  const int R = 2 * q, layers = model_.size();
  const int seg = model_.bp_segment_start(opt_.partition);
  const std::size_t rows = static_cast<std::size_t>(R) * static_cast<std::size_t>(n);
  const std::size_t un = static_cast<std::size_t>(n);
  float* const theta = model_.param_data();
  const float* in = nullptr;  // replica r's input: x for layer 0 (shared), else in + r·n·width
  std::size_t in_width = 0;
  int cur = 0;
  for (int i = 0; i < layers; ++i) {
    nn::Layer& l = model_.layer(i);
    float* out = rep_act_[cur].data();
    const std::size_t out_width = model_.output_floats(i);
    const std::vector<nn::ParamTensor*> params = l.params();
    if (i < seg && !params.empty()) {  // a ZO layer: one forward per replica, own weights
      float* const first = params.front()->data;
      std::size_t size = 0;
      for (nn::ParamTensor* p : params) {
        ZT_CHECK_MSG(p->data == first + size, "a layer's parameters are contiguous in θ");
        size += p->size();
      }
      const std::uint64_t offset = static_cast<std::uint64_t>(first - theta);
      for (int qi = 0; qi < q; ++qi) {
        {
          telemetry::ScopedPhase t(times, telemetry::Phase::kZoPerturb);
          perturber_.fill(rep_z_.data(), size, draw_seed(seed, qi),
                          seeds::fp32_perturbation_stream(qi), offset);
        }
        for (int s = 0; s < 2; ++s) {
          const int r = 2 * qi + s;
          {
            telemetry::ScopedPhase t(times, telemetry::Phase::kZoPerturb);
            const float scale = s == 0 ? opt_.eps : -opt_.eps;
            for (std::size_t k = 0; k < size; ++k) rep_w_[k] = first[k] + scale * rep_z_[k];
          }
          for (nn::ParamTensor* p : params) p->data = rep_w_.data() + (p->data - first);
          const float* xr = i == 0 ? x : in + static_cast<std::size_t>(r) * un * in_width;
          {
            telemetry::ScopedPhase t(times, telemetry::Phase::kForward);
            l.forward(n, xr, out + static_cast<std::size_t>(r) * un * out_width,
                      rep_scratch_.data());
          }
          for (nn::ParamTensor* p : params) p->data = first + (p->data - rep_w_.data());
        }
      }
    } else {  // shared weights (or none): every replica's rows at once
      ZT_CHECK_MSG(i > 0, "batched probes: the first layer is a ZO layer");
      telemetry::ScopedPhase t(times, telemetry::Phase::kForward);
      l.forward(static_cast<int>(rows), in, out, rep_scratch_.data());
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
  if (bp) input_ = x;
  return in;
}

}  // namespace zt::train
