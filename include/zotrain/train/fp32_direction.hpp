// The FP32 trainer's perturbation of θ_{1..C} in place (docs/design.md §4): θ += scale·z_i over
// all of θ_{1..C} or one ZO layer's block of it (layer-wise estimators), z regenerated from
// (seed, stream) at every use, or with cache_direction drawn once into a planned buffer
// (train/direction_cache.hpp) and read back; with defer_zo_update the step's last update is
// kept pending and merged into the next step's first draw (Perturber::update_perturb_fill).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "zotrain/core/arena.hpp"
#include "zotrain/kernels/perturb.hpp"
#include "zotrain/nn/model.hpp"
#include "zotrain/train/direction_cache.hpp"

namespace zt::train {

class Fp32ZoDirection {
 public:
  // θ_{1..C} = the parameters of the first `partition` parametric layers (one contiguous range);
  // with `cache`, reserves the direction buffer (zo.direction) in `arena`.
  Fp32ZoDirection(nn::Model& model, int partition, bool cache, bool defer,
                  const kernels::Perturber& perturber, Arena& arena);
  void bind(const Arena& arena) { cache_.bind(arena); }

  // θ_{1..C} (or the selected block) += scale · z of (seed, stream). `deferrable`: the step's
  // last ZO update, which defer_zo_update may keep pending.
  void perturb(std::uint64_t seed, std::uint64_t stream, float scale, bool deferrable = false);
  // A pending update applied (θ current), or dropped (θ about to be overwritten).
  void sync();
  void discard_pending() { cache_.clear_pending(); }

  // The ZO layers as blocks of θ_{1..C}; select_block(b) restricts perturb() to block b, −1 to
  // all of θ_{1..C}.
  int blocks() const { return static_cast<int>(blocks_.size()); }
  std::size_t block_size(int b) const { return blocks_[static_cast<std::size_t>(b)].second; }
  void select_block(int b);

 private:
  struct Key {
    std::uint64_t seed = 0, stream = 0;
    bool operator==(const Key&) const = default;
  };
  float* theta_;  // θ_{1..C}: the start of the model's parameter storage
  std::size_t params_;
  bool defer_;
  const kernels::Perturber& perturber_;
  std::vector<std::pair<std::size_t, std::size_t>> blocks_;  // (begin, size) per ZO layer
  std::size_t begin_ = 0, len_ = 0;                          // the range perturb() acts on
  DirectionCache<float, Key> cache_;
};

}  // namespace zt::train
