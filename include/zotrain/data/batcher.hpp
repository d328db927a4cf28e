// Minibatches of images (a split of samples.hpp, in memory or read from disk by batch): seeded Fisher–Yates shuffle per epoch (own generator, so the
// order is the same on every platform), images converted to normalised FP32 NCHW
// [B, 1, rows, cols] with (p/255 − mean)/std. The last partial batch of an epoch is dropped in
// training (drop_last) and kept in evaluation. The epoch-e order depends on (seed, e) only:
// SplitMix64 seeded with mix64(mix64(seed) ^ e), Fisher–Yates from the identity order.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "zotrain/data/idx.hpp"
#include "zotrain/data/image_transforms.hpp"
#include "zotrain/data/samples.hpp"

namespace zt::data {

// x = (p / 255 − mean) / std; each image set's values are in the data-set registry
// (config/catalogue.hpp).
struct Normalisation {
  float mean = 0.f, std = 1.f;
};

// Starts at epoch 0. Images read are rotated by `rotate_degrees` (image_transforms.hpp) first.
class Batcher {
 public:
  Batcher(std::shared_ptr<const Samples> images, int rows, int cols, int batch_size,
          bool shuffle, bool drop_last, std::uint64_t seed, Normalisation norm,
          double rotate_degrees = 0.0);
  // The images of `set`, which must outlive the Batcher.
  Batcher(const ImageSet& set, int batch_size, bool shuffle, bool drop_last, std::uint64_t seed,
          Normalisation norm);
  void start_epoch(int epoch);  // reshuffles deterministically from (seed, epoch)
  int batches_per_epoch() const;
  // Fills x [n, 1, rows, cols] and labels [n] for batch `index` of the current epoch; returns
  // n (batch_size, or fewer for the last batch when !drop_last). x and labels hold batch_size.
  // Not thread-safe: one thread fills a Batcher's batches.
  int fill(int index, float* x, std::uint8_t* labels);
  // The same batch as raw pixels [n, rows·cols] (uint8, no normalisation; int8 training).
  int fill_raw(int index, std::uint8_t* pixels, std::uint8_t* labels);
  int sample_floats() const { return rows_ * cols_; }
  // Bytes the Batcher itself holds (the epoch order and its batch scratch).
  std::size_t resident_bytes() const;

 private:
  std::shared_ptr<const Samples> images_;
  int rows_, cols_, count_;
  int batch_size_;
  bool shuffle_, drop_last_;
  std::uint64_t seed_;
  Normalisation norm_;
  std::optional<Rotation> rotation_;  // none for the identity
  std::vector<std::int32_t> order_;
  std::vector<std::uint8_t> raw_, turned_;  // one batch of pixels as read / rotated
};

}  // namespace zt::data
