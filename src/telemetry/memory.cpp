#include "zotrain/telemetry/memory.hpp"

#include "zotrain/core/error.hpp"
#include "zotrain/core/partition.hpp"

namespace zt::telemetry {

int bp_segment_start(const std::vector<LayerFootprint>& layers, int partition) {
  std::vector<int> parametric;
  for (std::size_t i = 0; i < layers.size(); ++i)
    if (layers[i].parametric) parametric.push_back(static_cast<int>(i));
  return zt::bp_segment_start(parametric, static_cast<int>(layers.size()), partition);
}

PaperMemory paper_memory(const std::vector<LayerFootprint>& layers, int batch, int partition,
                         bool adam, Precision precision) {
  const std::size_t elem = precision == Precision::kFp32 ? 4 : 1;  // θ, g, a, e element size
  const std::size_t b = static_cast<std::size_t>(batch);
  const int seg = bp_segment_start(layers, partition);
  PaperMemory m;
  std::size_t bp_params = 0, int32_acts = 0, int32_grads = 0, int32_errors = 0;
  bool first_bp_parametric = true;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const LayerFootprint& l = layers[i];
    const bool in_bp = static_cast<int>(i) >= seg;
    m.params += l.params * elem;
    m.activations += l.out_per_sample * b * elem;
    if (precision == Precision::kInt8 && l.matmul) int32_acts += l.out_per_sample * b * 4;
    if (!in_bp) continue;
    m.errors += l.out_per_sample * b * elem;
    if (!l.parametric) continue;
    bp_params += l.params;
    if (precision == Precision::kInt8) {
      int32_grads += l.params * 4;
      // e_{l−1}^int32: the error propagated to this layer's input, except for the first
      // parametric layer of the segment (it propagates nothing further back).
      if (!first_bp_parametric) int32_errors += layers[i - 1].out_per_sample * b * 4;
    }
    first_bp_parametric = false;
  }
  m.grads = bp_params * elem;
  if (adam) m.optimizer_state = 2 * m.grads;
  m.int32_buffers = int32_acts + int32_grads + int32_errors;
  m.total = m.params + m.grads + m.activations + m.errors + m.optimizer_state + m.int32_buffers;
  m.breakdown = {{"params", m.params},           {"grads", m.grads},
                 {"activations", m.activations}, {"errors", m.errors},
                 {"optimizer_state", m.optimizer_state}};
  if (precision == Precision::kInt8) {
    m.breakdown.push_back({"activations_int32", int32_acts});
    m.breakdown.push_back({"grads_int32", int32_grads});
    m.breakdown.push_back({"errors_int32", int32_errors});
  }
  return m;
}

}  // namespace zt::telemetry
