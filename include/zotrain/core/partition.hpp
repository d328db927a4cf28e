// The partition point C (docs/design.md §3) on a layer sequence: θ_1..θ_C by ZO, the rest by
// backprop. One definition for the FP32 model, the int8 network and the memory model.
#pragma once

#include <span>

#include "zotrain/core/error.hpp"

namespace zt {

// Index of the first layer of the backprop segment: the layer of θ_{C+1}, or `layers` when
// C = L. `parametric` holds the layer index of each parametric layer, in order.
inline int bp_segment_start(std::span<const int> parametric, int layers, int partition) {
  const int L = static_cast<int>(parametric.size());
  ZT_CHECK_MSG(partition >= 0 && partition <= L, "partition outside [0, L]");
  return partition == L ? layers : parametric[static_cast<std::size_t>(partition)];
}

}  // namespace zt
