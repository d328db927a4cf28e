#include "zotrain/nn/network_desc.hpp"

#include "zotrain/core/partition.hpp"

namespace zt::nn {

std::vector<int> NetworkDesc::parametric() const {
  std::vector<int> p;
  for (int i = 0; i < size(); ++i)
    if (layers[static_cast<std::size_t>(i)].parametric) p.push_back(i);
  return p;
}

int NetworkDesc::bp_segment_start(int partition) const {
  return zt::bp_segment_start(parametric(), size(), partition);
}

std::vector<telemetry::LayerFootprint> NetworkDesc::footprint() const {
  std::vector<telemetry::LayerFootprint> out;
  out.reserve(layers.size());
  for (const LayerInfo& l : layers) {
    telemetry::LayerFootprint f;
    f.name = l.name;
    f.kind = op_name(l.desc.op);
    f.parametric = l.parametric;
    f.matmul = l.matmul();
    f.params = l.params;
    f.out_per_sample = l.out.numel();
    out.push_back(std::move(f));
  }
  return out;
}

PointStack find_point_stack(const NetworkDesc& net) {
  PointStack s;
  if (net.input.dims.size() != 2) return s;  // per-sample [N, C] only
  for (int i = 0; i < net.size(); ++i) {
    const LayerOp op = net.layers[static_cast<std::size_t>(i)].desc.op;
    if (op == LayerOp::kMaxPoolPoints) {
      if (s.tail < 0) return PointStack{};
      s.pool = i;
      for (int k = s.tail + 1; k < i; ++k)
        s.between.push_back(net.layers[static_cast<std::size_t>(k)].desc.op);
      return s;
    }
    if (op == LayerOp::kPointLinear) s.tail = i;
    else if (op == LayerOp::kBatchNorm) s.batchnorms.push_back(i);
    else if (op != LayerOp::kRelu) return PointStack{};
  }
  return PointStack{};
}

}  // namespace zt::nn
