// The paper's analytic memory model (Eqs. 2–5 and 13–15) under docs/design.md §7's convention:
// one buffer per layer output (input not counted, flatten is a view), θ and g = all parameters,
// e_l = one buffer per layer output inside the backprop segment. Computed from layer shapes.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "zotrain/core/precision.hpp"

namespace zt::telemetry {

struct LayerFootprint {
  std::string name, kind;
  bool parametric = false;
  bool matmul = false;              // conv/linear
  std::size_t params = 0;           // weights + biases of this layer's θ_l (+ its BN's γ, β)
  std::size_t out_per_sample = 0;   // output elements per sample
};

using zt::Precision;

struct PaperMemory {
  std::size_t params = 0, grads = 0, activations = 0, errors = 0, optimizer_state = 0,
              int32_buffers = 0, total = 0;  // bytes
  std::vector<std::pair<std::string, std::size_t>> breakdown;  // named buffers, bytes
};

// partition C in [0, L]; adam adds 2|g| for the layers Adam updates (Eq. 5).
PaperMemory paper_memory(const std::vector<LayerFootprint>& layers, int batch, int partition,
                         bool adam, Precision precision);

// Index of the first layer of the backprop segment (layers.size() for C = L).
int bp_segment_start(const std::vector<LayerFootprint>& layers, int partition);

}  // namespace zt::telemetry
