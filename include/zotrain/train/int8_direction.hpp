// The int8 trainer's perturbation of θ_{1..C} in place (docs/design.md §6), the counterpart of
// train/fp32_direction.hpp:
//   ElasticZO-INT8   θ_{1..C} += k·z and the merged restore + update, z sparse uniform int8
//                    regenerated from its PerturbS8Params at every use, or with cache_direction
//                    drawn once per query into a planned buffer (train/direction_cache.hpp) and
//                    read back by the other probe and the update (the same bits);
//   Poor Man's       one ZO layer (block b) at a time: θ_b = clamp(θ_b + ξ_i, ±127) from its
//   Training         saved copy (the plan's layer backup), restored exactly, and updated by
//                    θ_b −= StoShift(Σ_i c_i ξ_i, frac).
// Integer-only, like the int8 trainer.
#pragma once

#include <cstddef>
#include <cstdint>

#include "zotrain/core/arena.hpp"
#include "zotrain/kernels/perturb_s8.hpp"
#include "zotrain/nn/int8_net.hpp"
#include "zotrain/train/direction_cache.hpp"
#include "zotrain/train/int8_plan.hpp"

namespace zt::train {

class Int8ZoDirection {
 public:
  // θ_{1..C}: the weights of the first `partition` parametric layers; with `cache` (and any ZO
  // weights), reserves the direction buffer in `arena` (the plan's, before its allocation).
  Int8ZoDirection(nn::Int8Net& net, const Int8Plan& plan, int partition, bool cache,
                  kernels::SignSource signs, kernels::Isa isa, Arena& arena);
  void bind(const Arena& arena) { cache_.bind(arena); }
  std::size_t weights() const { return n_; }

  // θ_{1..C} += k·z of p.
  void perturb(const kernels::PerturbS8Params& p, int k);
  // θ_{1..C} += z of p, then −= PstoShift(g·z) (the kernel's merged restore and update).
  void update(const kernels::PerturbS8Params& p, int g, int b_zo);

  // Layer-wise (block b of θ_{1..C}, key: seeds::int8_perturbation of the step and query).
  void perturb_block(int b, std::uint64_t key);
  void restore_block(int b);
  // keys[q], coef[q] for q < queries; `rounding`: the stochastic rounding's seed.
  void update_block(int b, const std::uint64_t* keys, const std::int32_t* coef, int queries,
                    int frac, std::uint64_t rounding);

 private:
  struct Key {
    std::uint64_t seed = 0, zero_threshold = 0;
    int r_max = 0;
    bool operator==(const Key&) const = default;
  };
  const std::int8_t* cached(const kernels::PerturbS8Params& p);  // nullptr: no cache
  const nn::Int8Layer& block(int b) const { return net_.layer(net_.parametric_layer(b)); }

  nn::Int8Net& net_;
  const Int8Plan& plan_;
  std::size_t n_;  // |θ_{1..C}|
  kernels::SignSource signs_;
  kernels::PerturbS8Fn perturb_;
  kernels::ZoUpdateS8Fn update_;
  kernels::FillPerturbationS8Fn fill_ = nullptr;
  kernels::PerturbCachedS8Fn perturb_cached_ = nullptr;
  kernels::ZoUpdateCachedS8Fn update_cached_ = nullptr;
  DirectionCache<std::int8_t, Key, int> cache_;
};

}  // namespace zt::train
