#include "zotrain/nn/int8_setup.hpp"

#include <algorithm>
#include <cmath>

#include "zotrain/core/error.hpp"
#include "zotrain/core/rng.hpp"
#include "zotrain/core/seeds.hpp"

namespace zt::nn {

std::unique_ptr<Int8Net> make_int8_net(Model& model, kernels::Isa isa, bool batchnorm) {
  std::vector<Int8Layer> layers;
  Shape in = model.input_shape();
  for (int i = 0; i < model.size(); ++i) {
    Layer& src = model.layer(i);
    Int8Layer l;
    l.name = src.name();
    l.in = in;
    l.out = model.output_shape(i);
    const LayerDesc d = src.desc();
    switch (d.op) {
      case LayerOp::kConv2d: {
        const std::vector<int>& ws = src.params().at(0)->shape;  // [O, C, k, k]
        l.op = LayerOp::kConv2d;
        l.weight_shape = ws;
        l.conv.in_c = in.dims.at(0);
        l.conv.in_h = in.dims.at(1);
        l.conv.in_w = in.dims.at(2);
        l.conv.out_c = ws[0];
        l.conv.kernel = d.kernel;
        l.conv.pad = d.pad;
        break;
      }
      case LayerOp::kLinear:
      case LayerOp::kPointLinear:
        l.op = d.op;
        l.weight_shape = src.params().at(0)->shape;  // [N, K] (the bias, if any, is dropped)
        break;
      case LayerOp::kBatchNorm:
        // NITI has no BatchNorm. With `batchnorm` the BatchNorm after a per-point linear layer
        // becomes that layer's integer standardisation (docs/design.md §5.8); without it the
        // per-tensor requantisation is all the normalisation the int8 network gets.
        if (batchnorm) {
          ZT_CHECK_MSG(!layers.empty() && layers.back().op == LayerOp::kPointLinear,
                       "int8 BatchNorm follows a per-point linear layer only");
          layers.back().norm = true;
        }
        in = model.output_shape(i);
        continue;
      case LayerOp::kMaxPoolPoints:
      case LayerOp::kRelu:
      case LayerOp::kMaxPool2x2: l.op = d.op; break;
    }
    layers.push_back(std::move(l));
    in = model.output_shape(i);
  }
  return std::make_unique<Int8Net>(model.arch(), model.input_shape(), std::move(layers), isa);
}

void init_niti(Int8Net& net, std::uint64_t seed) {
  SplitMix64 rng(seeds::int8_init(seed));
  std::vector<float> w;
  for (int i = 0; i < net.size(); ++i) {
    Int8Layer& l = net.layer(i);
    if (!l.parametric()) continue;
    const auto& s = l.weight_shape;
    std::size_t receptive = 1;
    for (std::size_t d = 2; d < s.size(); ++d) receptive *= static_cast<std::size_t>(s[d]);
    const double fan_in = static_cast<double>(s[1] * receptive);
    const double fan_out = static_cast<double>(s[0] * receptive);
    const float a = static_cast<float>(std::sqrt(6.0 / (fan_in + fan_out)));
    w.resize(l.weight_count);
    float r = 0;
    for (float& v : w) {
      v = (2.0f * rng.uniform() - 1.0f) * a;
      r = std::max(r, std::fabs(v));
    }
    if (r == 0) r = a;
    l.exponent = static_cast<int>(std::ceil(std::log2(static_cast<double>(r)))) - 7;
    std::int8_t* dst = net.weights_of(i);
    for (std::size_t k = 0; k < w.size(); ++k)
      dst[k] = kernels::clamp_s8(std::lround(w[k] / r * 127.0f));
  }
}

void quantize_weights(Int8Net& net, int i, const float* w) {
  Int8Layer& l = net.layer(i);
  float r = 0;
  for (std::size_t k = 0; k < l.weight_count; ++k) r = std::max(r, std::fabs(w[k]));
  std::int8_t* dst = net.weights_of(i);
  if (!(r > 0) || !std::isfinite(r)) {
    if (!std::isfinite(r)) throw Error("weights of '" + l.name + "' are not finite");
    std::fill(dst, dst + l.weight_count, std::int8_t{0});
    l.exponent = 0;
    return;
  }
  l.exponent = static_cast<int>(std::ceil(std::log2(static_cast<double>(r) / 127.0)));
  const double scale = std::ldexp(1.0, -l.exponent);
  for (std::size_t k = 0; k < l.weight_count; ++k)
    dst[k] = kernels::clamp_s8(std::llround(static_cast<double>(w[k]) * scale));
}

void dequantize_weights(const Int8Net& net, int i, float* w) {
  const Int8Layer& l = net.layer(i);
  const std::int8_t* src = net.weights() + l.weight_offset;
  for (std::size_t k = 0; k < l.weight_count; ++k)
    w[k] = static_cast<float>(std::ldexp(static_cast<double>(src[k]), l.exponent));
}

}  // namespace zt::nn
