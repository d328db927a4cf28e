#include "zotrain/data/point_batcher.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "exact_math.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/core/rng.hpp"
#include "zotrain/core/seeds.hpp"

namespace zt::data {
namespace {

// Each sample has one independent generator per purpose, so switching rotation on or off does
// not change the subset or the jitter.
enum Stream : std::uint64_t { kSubset = 0, kRotate = 1, kJitter = 2, kStreams = 3 };


}  // namespace

namespace {
std::shared_ptr<const Samples> view_of(const PointCloudSet& set) {
  ZT_CHECK(set.count >= 0 && set.stored_points > 0);
  const std::size_t per = static_cast<std::size_t>(set.stored_points) * 3;
  ZT_CHECK(set.points.size() == static_cast<std::size_t>(set.count) * per);
  ZT_CHECK(set.labels.size() == static_cast<std::size_t>(set.count));
  return std::make_shared<MemorySamples>(set.points.data(), set.labels.data(), set.count,
                                         per * sizeof(float));
}
}  // namespace

PointBatcher::PointBatcher(const PointCloudSet& set, int batch_size, int points, bool shuffle,
                           bool drop_last, std::uint64_t seed, Augment augment)
    : PointBatcher(view_of(set), set.stored_points, batch_size, points, shuffle, drop_last, seed,
                   augment) {}

PointBatcher::PointBatcher(std::shared_ptr<const Samples> clouds, int stored_points,
                           int batch_size, int points, bool shuffle, bool drop_last,
                           std::uint64_t seed, Augment augment)
    : clouds_(std::move(clouds)),
      stored_points_(stored_points),
      count_(clouds_->count()),
      batch_size_(batch_size),
      points_(points),
      shuffle_(shuffle),
      drop_last_(drop_last),
      seed_(seed),
      augment_(augment),
      order_(static_cast<std::size_t>(count_)) {
  ZT_CHECK(batch_size > 0);
  ZT_CHECK(stored_points > 0);
  ZT_CHECK(clouds_->record_bytes() == static_cast<std::size_t>(stored_points) * 3 * sizeof(float));
  if (points < 1 || points > stored_points) {
    throw Error("data.points = " + std::to_string(points) + ", expected 1.." +
                std::to_string(stored_points) + " (the points stored per shape)");
  }
  if (!(std::isfinite(augment.jitter_sigma) && augment.jitter_sigma >= 0.f)) {
    throw Error("jitter sigma = " + std::to_string(augment.jitter_sigma) +
                ", expected a finite value >= 0");
  }
  if (!(std::isfinite(augment.jitter_clip) && augment.jitter_clip >= 0.f)) {
    throw Error("jitter clip = " + std::to_string(augment.jitter_clip) +
                ", expected a finite value >= 0");
  }
  start_epoch(0);
}

void PointBatcher::start_epoch(int epoch) {
  const std::uint64_t key = seeds::epoch_order(seed_, epoch);
  sample_key_ = seeds::point_samples(key);
  // Always from the identity, so the order is a function of (seed, epoch) alone.
  for (std::size_t i = 0; i < order_.size(); ++i) order_[i] = static_cast<std::int32_t>(i);
  if (!shuffle_) return;
  SplitMix64 rng(key);
  for (std::size_t i = order_.size(); i > 1; --i) {  // Fisher–Yates, own generator
    const std::size_t j = static_cast<std::size_t>(rng.below(i));
    std::swap(order_[i - 1], order_[j]);
  }
}

int PointBatcher::batches_per_epoch() const {
  return drop_last_ ? count_ / batch_size_ : (count_ + batch_size_ - 1) / batch_size_;
}

std::size_t PointBatcher::resident_bytes() const {
  return order_.capacity() * sizeof(std::int32_t) + stored_.capacity() * sizeof(float);
}

int PointBatcher::fill(int index, float* x, std::uint8_t* labels) {
  ZT_CHECK(index >= 0 && index < batches_per_epoch());
  const int begin = index * batch_size_;
  const int n = std::min(batch_size_, count_ - begin);
  const std::size_t per = static_cast<std::size_t>(stored_points_) * 3;
  stored_.resize(static_cast<std::size_t>(batch_size_) * per);
  clouds_->read(order_.data() + begin, n, stored_.data(), labels);
  for (int b = 0; b < n; ++b) {
    fill_sample(order_[static_cast<std::size_t>(begin + b)],
                stored_.data() + static_cast<std::size_t>(b) * per,
                x + static_cast<std::size_t>(b) * sample_floats());
  }
  return n;
}

void PointBatcher::fill_sample(std::int32_t s, const float* src, float* out) const {
  const std::size_t stored = static_cast<std::size_t>(stored_points_);
  const auto stream = [&](Stream p) {
    return SplitMix64(mix64(sample_key_ + static_cast<std::uint64_t>(s) * kStreams + p));
  };

  if (!shuffle_ || static_cast<std::size_t>(points_) == stored) {
    std::memcpy(out, src, static_cast<std::size_t>(points_) * 3 * sizeof(float));
  } else {
    // Algorithm S: keep point i with probability needed / remaining — every N-subset equally
    // likely, exactly N kept, one draw per stored point, no scratch memory.
    SplitMix64 rng = stream(kSubset);
    std::size_t needed = static_cast<std::size_t>(points_);
    float* dst = out;
    for (std::size_t i = 0; i < stored && needed > 0; ++i) {
      if (rng.below(stored - i) < needed) {
        dst[0] = src[i * 3];
        dst[1] = src[i * 3 + 1];
        dst[2] = src[i * 3 + 2];
        dst += 3;
        --needed;
      }
    }
  }

  if (augment_.rotate) {
    SplitMix64 rng = stream(kRotate);
    double sd, cd;
    exact::sincos_turns(exact::uniform53(rng), &sd, &cd);
    const float c = static_cast<float>(cd), sn = static_cast<float>(sd);
    for (int i = 0; i < points_; ++i) {
      float* p = out + static_cast<std::size_t>(i) * 3;
      const float x = p[0], z = p[2];
      p[0] = c * x - sn * z;
      p[2] = sn * x + c * z;
    }
  }

  if (augment_.jitter_sigma > 0.f) {
    SplitMix64 rng = stream(kJitter);
    const float sigma = augment_.jitter_sigma, clip = augment_.jitter_clip;
    const std::size_t n = static_cast<std::size_t>(points_) * 3;
    for (std::size_t k = 0; k < n; ++k) {
      const float g = static_cast<float>(exact::gauss12(rng));  // exact: k/2^17, |k| < 2^21
      out[k] += std::clamp(sigma * g, -clip, clip);
    }
  }
}

}  // namespace zt::data
