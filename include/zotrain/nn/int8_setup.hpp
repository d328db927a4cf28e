// Building and initialising int8 networks (floating point allowed here; training is not).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "zotrain/nn/int8_net.hpp"
#include "zotrain/nn/model.hpp"
#include "zotrain/telemetry/memory.hpp"

namespace zt::nn {

// The int8 counterpart of an FP32 model: same layers and shapes, weights without biases.
// `batchnorm`: a BatchNorm after a per-point linear layer becomes that layer's integer
// standardisation (docs/design.md §5.8); false drops it, as NITI would. Models without
// BatchNorm (LeNet-5) are the same either way.
// Throws zt::Error for a layer kind int8 training does not support.
std::unique_ptr<Int8Net> make_int8_net(Model& model, kernels::Isa isa, bool batchnorm = true);

// NITI initialisation (docs/design.md §5.7): Xavier-uniform w with a = sqrt(6 / (fan_in +
// fan_out)), R = max|w|, e_W = ceil(log2 R) − 7, W = round(w / R · 127). Deterministic for a seed.
void init_niti(Int8Net& net, std::uint64_t seed);

// Quantises FP32 weights w [layer.weight_count] into layer i, preserving values:
// e = ceil(log2(max|w| / 127)), W = round(w / 2^e) (all zero: W = 0, e = 0).
void quantize_weights(Int8Net& net, int i, const float* w);
// Real values W · 2^e of layer i's weights into w [weight_count].
void dequantize_weights(const Int8Net& net, int i, float* w);


}  // namespace zt::nn
