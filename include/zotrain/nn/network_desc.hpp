// The description of a network that everything above the layers plans from: per layer, its
// operation and geometry (LayerDesc), its per-sample shapes and the size of the θ_l it starts.
// The FP32 model and the int8 network each describe themselves in this form (Model::describe,
// Int8Net::describe); the backprop segment of a partition, the paper's memory accounting
// (footprint) and the trainers' buffer plans (find_point_stack) are computed from it once,
// the same way for both precisions. Float-free (the int8 code includes it).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "zotrain/core/shape.hpp"
#include "zotrain/telemetry/memory.hpp"

namespace zt::nn {

// What a layer computes, independent of precision: its operation and geometry. The int8
// network is built from these (nn/int8_setup.cpp), so it never re-derives a layer from a name
// or from shapes.
enum class LayerOp {
  kConv2d, kLinear, kPointLinear, kBatchNorm, kRelu, kMaxPool2x2, kMaxPoolPoints
};
struct LayerDesc {
  LayerOp op;
  int kernel = 0, pad = 0;  // kConv2d: square kernel and zero padding
};
inline const char* op_name(LayerOp op) {
  switch (op) {
    case LayerOp::kConv2d: return "conv2d";
    case LayerOp::kLinear: return "linear";
    case LayerOp::kPointLinear: return "point_linear";
    case LayerOp::kBatchNorm: return "batchnorm";
    case LayerOp::kRelu: return "relu";
    case LayerOp::kMaxPool2x2: return "maxpool2x2";
    case LayerOp::kMaxPoolPoints: return "maxpool_points";
  }
  return "?";
}

// One layer as the planners see it.
struct LayerInfo {
  std::string name;
  LayerDesc desc{LayerOp::kRelu};
  Shape in, out;           // per sample
  bool parametric = false;  // starts a θ_l (a joining BatchNorm does not: it adds to its owner's)
  std::size_t params = 0;  // elements of the θ_l it starts (its joining layers' included)
  bool matmul() const {
    return desc.op == LayerOp::kConv2d || desc.op == LayerOp::kLinear ||
           desc.op == LayerOp::kPointLinear;
  }
};

struct NetworkDesc {
  Shape input;
  std::vector<LayerInfo> layers;

  int size() const { return static_cast<int>(layers.size()); }
  // Layer index of θ_1..θ_L.
  std::vector<int> parametric() const;
  // Index of the first layer of the backprop segment for partition C (size() when C = L).
  int bp_segment_start(int partition) const;
  // The paper's accounting entries (telemetry/memory.hpp), one per layer.
  std::vector<telemetry::LayerFootprint> footprint() const;
};

// PointNet's per-point stack: the leading layers that act on each point's row of a per-sample
// [N, C] input (PointLinear, BatchNorm, ReLU), ending in the max over points. A trainer can
// stream it in chunks of points (docs/design.md §8).
struct PointStack {
  int pool = -1;                // the MaxPoolPoints that ends the stack; −1: the network has none
  int tail = -1;                // the stack's last PointLinear (its widest product)
  std::vector<int> batchnorms;  // BatchNorm layers of the stack, in order
  bool found() const { return pool >= 0; }
  // The ops of layers (tail, pool), i.e. what lies between the last product and the pool.
  std::vector<LayerOp> between;
};
PointStack find_point_stack(const NetworkDesc& net);

}  // namespace zt::nn
