// The direction cache's bookkeeping, free of any precision's kernels: one planned buffer that
// holds a direction z (drawn once, read back by later perturbations of the same step), the key
// it was drawn for, and an update θ += s·z kept pending for its owner to apply later (the
// deferred update, docs/design.md §4). Whoever owns θ draws into data() and applies pending
// updates; FP32: train/fp32_direction.hpp.
#pragma once

#include <cstddef>
#include <string>

#include "zotrain/core/arena.hpp"

namespace zt::train {

// T: the element type of z; Key: what identifies a draw (equality-comparable); Scale: the
// factor of a pending update.
template <ArenaElement T, class Key, class Scale = float>
class DirectionCache {
 public:
  // Reserves `count` elements named `name` in the plan's arena (before it is allocated).
  void reserve(Arena& arena, const std::string& name, std::size_t count) {
    handle_ = arena.reserve<T>(name, count);
    size_ = count;
  }
  void bind(const Arena& arena) { data_ = handle_ >= 0 ? arena.get<T>(handle_) : nullptr; }
  bool enabled() const { return handle_ >= 0; }
  T* data() const { return data_; }
  std::size_t size() const { return size_; }

  // Whether the buffer holds the draw of `key`; hold(key): it now does.
  bool holds(const Key& key) const { return held_ && key_ == key; }
  void hold(const Key& key) {
    key_ = key;
    held_ = true;
  }

  // The pending update θ += scale·z of the held direction.
  bool pending() const { return pending_; }
  Scale pending_scale() const { return scale_; }
  void defer(Scale scale) {
    pending_ = true;
    scale_ = scale;
  }
  void clear_pending() { pending_ = false; }

 private:
  int handle_ = -1;
  std::size_t size_ = 0;
  T* data_ = nullptr;
  Key key_{};
  bool held_ = false;
  bool pending_ = false;
  Scale scale_{};
};

}  // namespace zt::train
