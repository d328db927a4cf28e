// Minibatches from an ImageSet: seeded Fisher–Yates shuffle per epoch (own generator, so the
// order is the same on every platform), images converted to normalised FP32 NCHW
// [B, 1, rows, cols] with (p/255 − mean)/std. The last partial batch of an epoch is dropped in
// training (drop_last) and kept in evaluation. The epoch-e order depends on (seed, e) only:
// SplitMix64 seeded with mix64(mix64(seed) ^ e), Fisher–Yates from the identity order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zotrain/data/idx.hpp"

namespace zt::data {

// x = (p / 255 − mean) / std; each image set's values are in the data-set registry
// (config/catalogue.hpp).
struct Normalisation {
  float mean = 0.f, std = 1.f;
};

// Holds a reference to `set`, which must outlive the Batcher. Starts at epoch 0.
class Batcher {
 public:
  Batcher(const ImageSet& set, int batch_size, bool shuffle, bool drop_last, std::uint64_t seed,
          Normalisation norm);
  void start_epoch(int epoch);  // reshuffles deterministically from (seed, epoch)
  int batches_per_epoch() const;
  // Fills x [n, 1, rows, cols] and labels [n] for batch `index` of the current epoch; returns
  // n (batch_size, or fewer for the last batch when !drop_last). x and labels hold batch_size.
  int fill(int index, float* x, std::uint8_t* labels) const;
  // The same batch as raw pixels [n, rows·cols] (uint8, no normalisation; int8 training).
  int fill_raw(int index, std::uint8_t* pixels, std::uint8_t* labels) const;
  int sample_floats() const { return set_.rows * set_.cols; }

 private:
  const ImageSet& set_;
  int batch_size_;
  bool shuffle_, drop_last_;
  std::uint64_t seed_;
  Normalisation norm_;
  std::vector<std::int32_t> order_;
};

}  // namespace zt::data
