#include "zotrain/data/batcher.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "zotrain/core/error.hpp"
#include "zotrain/core/rng.hpp"
#include "zotrain/core/seeds.hpp"

namespace zt::data {

namespace {
std::shared_ptr<const Samples> view_of(const ImageSet& set) {
  ZT_CHECK(set.count >= 0 && set.rows > 0 && set.cols > 0);
  const std::size_t per = static_cast<std::size_t>(set.rows) * static_cast<std::size_t>(set.cols);
  ZT_CHECK(set.pixels.size() == static_cast<std::size_t>(set.count) * per);
  ZT_CHECK(set.labels.size() == static_cast<std::size_t>(set.count));
  return std::make_shared<MemorySamples>(set.pixels.data(), set.labels.data(), set.count, per);
}
}  // namespace

Batcher::Batcher(const ImageSet& set, int batch_size, bool shuffle, bool drop_last,
                 std::uint64_t seed, Normalisation norm)
    : Batcher(view_of(set), set.rows, set.cols, batch_size, shuffle, drop_last, seed, norm) {}

Batcher::Batcher(std::shared_ptr<const Samples> images, int rows, int cols, int batch_size,
                 bool shuffle, bool drop_last, std::uint64_t seed, Normalisation norm,
                 double rotate_degrees)
    : images_(std::move(images)),
      rows_(rows),
      cols_(cols),
      count_(images_->count()),
      batch_size_(batch_size),
      shuffle_(shuffle),
      drop_last_(drop_last),
      seed_(seed),
      norm_(norm),
      order_(static_cast<std::size_t>(count_)) {
  ZT_CHECK(batch_size > 0);
  ZT_CHECK(rows > 0 && cols > 0);
  ZT_CHECK(images_->record_bytes() == static_cast<std::size_t>(rows) * cols);
  ZT_CHECK(norm.std > 0.f);
  const Rotation r(rotate_degrees);
  if (!r.identity()) rotation_ = r;
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
  return drop_last_ ? count_ / batch_size_ : (count_ + batch_size_ - 1) / batch_size_;
}

std::size_t Batcher::resident_bytes() const {
  return order_.capacity() * sizeof(std::int32_t) + raw_.capacity() + turned_.capacity();
}

int Batcher::fill_raw(int index, std::uint8_t* pixels, std::uint8_t* labels) {
  ZT_CHECK(index >= 0 && index < batches_per_epoch());
  const int begin = index * batch_size_;
  const int n = std::min(batch_size_, count_ - begin);
  images_->read(order_.data() + begin, n, pixels, labels);
  if (rotation_) {
    const std::size_t per = static_cast<std::size_t>(rows_) * cols_;
    turned_.resize(per);
    for (int b = 0; b < n; ++b) {
      std::uint8_t* img = pixels + static_cast<std::size_t>(b) * per;
      rotation_->apply(img, turned_.data(), rows_, cols_);
      std::memcpy(img, turned_.data(), per);
    }
  }
  return n;
}

int Batcher::fill(int index, float* x, std::uint8_t* labels) {
  const std::size_t per = static_cast<std::size_t>(rows_) * cols_;
  raw_.resize(static_cast<std::size_t>(batch_size_) * per);
  const int n = fill_raw(index, raw_.data(), labels);
  // (p/255 − mean)/std for every byte value, computed with the same expression as a per-pixel
  // loop would, so the result is identical.
  std::array<float, 256> lut;
  for (int p = 0; p < 256; ++p) lut[p] = (static_cast<float>(p) / 255.f - norm_.mean) / norm_.std;
  const std::size_t total = static_cast<std::size_t>(n) * per;
  for (std::size_t k = 0; k < total; ++k) x[k] = lut[raw_[k]];
  return n;
}

}  // namespace zt::data
