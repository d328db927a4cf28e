// Minibatches of point clouds from a PointCloudSet, with the conventions of the image Batcher
// (batcher.hpp): the epoch-e order is a Fisher–Yates shuffle by SplitMix64 seeded with
// mix64(mix64(seed) ^ e) from the identity order (shuffle), or the stored order (evaluation);
// the last partial batch is dropped when drop_last. Output x is FP32 [n, N, 3].
//
// Per sample, in this order:
//  1. N of the P stored points. With shuffle: a uniformly random N-subset without replacement
//     (selection sampling, Knuth's Algorithm S), kept in stored order — PointNet is invariant to
//     point order. Without shuffle (evaluation): the first N, as PointNet's evaluation does.
//  2. Optional rotation about the up axis, which is y in this data (as the original PointNet
//     code rotates ModelNet40): x' = c·x − s·z, z' = s·x + c·z, y' = y, angle uniform in [0, 2π).
//  3. Optional jitter: each coordinate += clamp(σ·g, −clip, clip), g ≈ N(0, 1) as the centred
//     sum of twelve uniforms (Irwin–Hall, |g| ≤ 6) — chosen because it is exactly reproducible,
//     unlike Box–Muller through a libm. PointNet uses σ = 0.01, clip = 0.05.
// Randomness is a function of (seed, epoch, sample index) only — not of the batch size or the
// batch a sample lands in — and bit-identical on every platform: integer generators, and sin/cos
// of the angle by a fixed polynomial with FMA contraction off (no libm calls).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "zotrain/data/modelnet40.hpp"
#include "zotrain/data/samples.hpp"

namespace zt::data {

struct Augment {
  bool rotate = false;        // random rotation about the up (y) axis
  float jitter_sigma = 0.f;   // σ of the per-coordinate noise; 0 = no jitter
  float jitter_clip = 0.05f;  // |noise| ≤ clip
};

// Starts at epoch 0. Throws zt::Error when points exceeds the stored points or the
// augmentation is not finite and >= 0.
class PointBatcher {
 public:
  // `clouds`: records of stored_points × 3 float32 (samples.hpp).
  PointBatcher(std::shared_ptr<const Samples> clouds, int stored_points, int batch_size,
               int points, bool shuffle, bool drop_last, std::uint64_t seed,
               Augment augment = {});
  // The clouds of `set`, which must outlive the PointBatcher.
  PointBatcher(const PointCloudSet& set, int batch_size, int points, bool shuffle, bool drop_last,
               std::uint64_t seed, Augment augment = {});
  void start_epoch(int epoch);  // reorders deterministically from (seed, epoch)
  int batches_per_epoch() const;
  // Fills x [n, points, 3] and labels [n] for batch `index` of the current epoch; returns n
  // (batch_size, or fewer for the last batch when !drop_last). x and labels hold batch_size.
  // Not thread-safe: one thread fills a PointBatcher's batches.
  int fill(int index, float* x, std::uint8_t* labels);
  int points() const { return points_; }
  int sample_floats() const { return points_ * 3; }
  // Bytes the PointBatcher itself holds (the epoch order and one batch of stored clouds).
  std::size_t resident_bytes() const;

 private:
  // out [points, 3] from sample s's stored cloud src [stored_points, 3].
  void fill_sample(std::int32_t s, const float* src, float* out) const;

  std::shared_ptr<const Samples> clouds_;
  int stored_points_, count_;
  int batch_size_, points_;
  bool shuffle_, drop_last_;
  std::uint64_t seed_;
  Augment augment_;
  std::uint64_t sample_key_ = 0;  // per-epoch key of the per-sample generators
  std::vector<std::int32_t> order_;
  std::vector<float> stored_;     // one batch of clouds as read
};

}  // namespace zt::data
