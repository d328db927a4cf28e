// Integer-only (compiled with -mgeneral-regs-only in the aarch64 check build).
#include "zotrain/train/int8_direction.hpp"

#include <cstring>

namespace zt::train {

Int8ZoDirection::Int8ZoDirection(nn::Int8Net& net, const Int8Plan& plan, int partition,
                                 bool cache, kernels::SignSource signs, kernels::Isa isa,
                                 Arena& arena)
    : net_(net),
      plan_(plan),
      n_(net.num_weights_of_range(0, partition)),
      signs_(signs),
      perturb_(kernels::select_perturb_s8(isa)),
      update_(kernels::select_zo_update_s8(isa)) {
  if (!cache || n_ == 0) return;
  cache_.reserve(arena, "cached ZO direction (int8)", n_);
  fill_ = kernels::select_fill_perturbation_s8(isa);
  perturb_cached_ = kernels::select_perturb_cached_s8(isa);
  update_cached_ = kernels::select_zo_update_cached_s8(isa);
}

const std::int8_t* Int8ZoDirection::cached(const kernels::PerturbS8Params& p) {
  if (!cache_.enabled()) return nullptr;
  const Key key{p.seed, p.zero_threshold, p.r_max};
  if (!cache_.holds(key)) {
    fill_(p, 0, n_, cache_.data());
    cache_.hold(key);
  }
  return cache_.data();
}

void Int8ZoDirection::perturb(const kernels::PerturbS8Params& p, int k) {
  if (const std::int8_t* z = cached(p)) return perturb_cached_(net_.weights(), z, n_, k);
  perturb_(net_.weights(), n_, 0, p, k);
}

void Int8ZoDirection::update(const kernels::PerturbS8Params& p, int g, int b_zo) {
  if (const std::int8_t* z = cached(p)) return update_cached_(net_.weights(), z, n_, p, g, b_zo);
  update_(net_.weights(), n_, 0, p, g, b_zo);
}

void Int8ZoDirection::perturb_block(int b, std::uint64_t key) {
  const nn::Int8Layer& l = block(b);
  std::int8_t* w = net_.weights() + l.weight_offset;
  std::int8_t* saved = plan_.layer_backup();
  std::memcpy(saved, w, l.weight_count);
  kernels::perturb_signs_s8(signs_, saved, w, l.weight_count,
                            static_cast<std::uint32_t>(l.weight_offset), key);
}

void Int8ZoDirection::restore_block(int b) {
  const nn::Int8Layer& l = block(b);
  std::memcpy(net_.weights() + l.weight_offset, plan_.layer_backup(), l.weight_count);
}

void Int8ZoDirection::update_block(int b, const std::uint64_t* keys, const std::int32_t* coef,
                                   int queries, int frac, std::uint64_t rounding) {
  const nn::Int8Layer& l = block(b);
  kernels::update_signs_s8(signs_, net_.weights() + l.weight_offset, l.weight_count,
                           static_cast<std::uint32_t>(l.weight_offset), keys, coef, queries, frac,
                           rounding);
}

}  // namespace zt::train
