#include "zotrain/data/batcher.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "zotrain/core/error.hpp"
#include "zotrain/core/rng.hpp"
#include "zotrain/core/seeds.hpp"

namespace zt::data {

Batcher::Batcher(const ImageSet& set, int batch_size, bool shuffle, bool drop_last,
                 std::uint64_t seed, Normalisation norm)
    : set_(set),
      batch_size_(batch_size),
      shuffle_(shuffle),
      drop_last_(drop_last),
      seed_(seed),
      norm_(norm),
      order_(static_cast<std::size_t>(set.count)) {
  ZT_CHECK(batch_size > 0);
  ZT_CHECK(set.count >= 0 && set.rows > 0 && set.cols > 0);
  ZT_CHECK(set.pixels.size() == static_cast<std::size_t>(set.count) * set.rows * set.cols);
  ZT_CHECK(set.labels.size() == static_cast<std::size_t>(set.count));
  ZT_CHECK(norm.std > 0.f);
  start_epoch(0);
}

void Batcher::start_epoch(int epoch) {
  // Always from the identity, so the order is a function of (seed, epoch) alone.
  for (std::size_t i = 0; i < order_.size(); ++i) order_[i] = static_cast<std::int32_t>(i);
  if (!shuffle_) return;
  SplitMix64 rng(seeds::epoch_order(seed_, epoch));
  for (std::size_t i = order_.size(); i > 1; --i) {  // Fisher–Yates, own generator
    const std::size_t j = static_cast<std::size_t>(rng.below(i));
    std::swap(order_[i - 1], order_[j]);
  }
}

int Batcher::batches_per_epoch() const {
  return drop_last_ ? set_.count / batch_size_ : (set_.count + batch_size_ - 1) / batch_size_;
}

int Batcher::fill(int index, float* x, std::uint8_t* labels) const {
  ZT_CHECK(index >= 0 && index < batches_per_epoch());
  const int begin = index * batch_size_;
  const int n = std::min(batch_size_, set_.count - begin);
  // (p/255 − mean)/std for every byte value, computed with the same expression as a per-pixel
  // loop would, so the result is identical.
  std::array<float, 256> lut;
  for (int p = 0; p < 256; ++p) lut[p] = (static_cast<float>(p) / 255.f - norm_.mean) / norm_.std;
  const std::size_t per = static_cast<std::size_t>(set_.rows) * set_.cols;
  for (int b = 0; b < n; ++b) {
    const std::size_t s = static_cast<std::size_t>(order_[begin + b]);
    const std::uint8_t* src = set_.pixels.data() + s * per;
    float* dst = x + static_cast<std::size_t>(b) * per;
    for (std::size_t k = 0; k < per; ++k) dst[k] = lut[src[k]];
    labels[b] = set_.labels[s];
  }
  return n;
}

int Batcher::fill_raw(int index, std::uint8_t* pixels, std::uint8_t* labels) const {
  ZT_CHECK(index >= 0 && index < batches_per_epoch());
  const int begin = index * batch_size_;
  const int n = std::min(batch_size_, set_.count - begin);
  const std::size_t per = static_cast<std::size_t>(set_.rows) * set_.cols;
  for (int b = 0; b < n; ++b) {
    const std::size_t s = static_cast<std::size_t>(order_[begin + b]);
    std::memcpy(pixels + static_cast<std::size_t>(b) * per, set_.pixels.data() + s * per, per);
    labels[b] = set_.labels[s];
  }
  return n;
}

}  // namespace zt::data
