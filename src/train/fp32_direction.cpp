#include "zotrain/train/fp32_direction.hpp"

#include <tuple>

#include "zotrain/core/error.hpp"

namespace zt::train {

Fp32ZoDirection::Fp32ZoDirection(nn::Model& model, int partition, bool cache, bool defer,
                                 const kernels::Perturber& perturber, Arena& arena)
    : theta_(model.param_data()),
      params_(model.num_params_of_range(0, partition)),
      defer_(defer),
      perturber_(perturber),
      len_(params_) {
  for (int l = 0; l < partition; ++l) {
    std::size_t size = 0;
    const std::vector<nn::ParamTensor*> ps = model.params_of_range(l, l + 1);
    for (nn::ParamTensor* p : ps) size += p->size();
    const auto begin = static_cast<std::size_t>(ps.front()->data - theta_);
    ZT_CHECK_MSG(begin == (blocks_.empty() ? 0 : blocks_.back().first + blocks_.back().second),
                 "the ZO layers' parameters are contiguous in θ");
    blocks_.emplace_back(begin, size);
  }
  if (cache) cache_.reserve(arena, "zo.direction", params_);
}

void Fp32ZoDirection::select_block(int b) {
  if (b < 0) {
    begin_ = 0;
    len_ = params_;
  } else {
    std::tie(begin_, len_) = blocks_[static_cast<std::size_t>(b)];
  }
}

void Fp32ZoDirection::sync() {
  if (!cache_.pending()) return;
  cache_.clear_pending();
  kernels::add_scaled_f32(theta_, cache_.data(), params_, cache_.pending_scale());
}

void Fp32ZoDirection::perturb(std::uint64_t seed, std::uint64_t stream, float scale,
                              bool deferrable) {
  float* theta = theta_ + begin_;
  if (!cache_.enabled()) {
    perturber_.perturb(theta, len_, seed, stream, begin_, scale);
    return;
  }
  float* z = cache_.data();
  const Key key{seed, stream};
  const bool whole = begin_ == 0 && len_ == params_;
  if (cache_.holds(key)) {
    if (deferrable && whole && defer_ && !cache_.pending()) {
      cache_.defer(scale);
      return;
    }
    sync();
    kernels::add_scaled_f32(theta, z + begin_, len_, scale);
    return;
  }
  if (whole) {  // drawn and added in one pass, after a pending update of the old direction
    if (cache_.pending()) {
      cache_.clear_pending();
      perturber_.update_perturb_fill(theta, z, len_, seed, stream, 0, cache_.pending_scale(),
                                     scale);
    } else {
      perturber_.perturb_fill(theta, z, len_, seed, stream, 0, scale);
    }
    cache_.hold(key);
    return;
  }
  sync();  // before the buffer's direction is replaced
  cache_.hold(key);
  perturber_.fill(z, params_, seed, stream, 0);
  kernels::add_scaled_f32(theta, z + begin_, len_, scale);
}

}  // namespace zt::train
