// Transforms of a loaded image set, for the fine-tuning data sets (Rotated MNIST /
// Fashion-MNIST, docs/design.md §9): a seeded subset and a rotation. Both give the same bytes
// on x86-64, aarch64 and armv7 (src/data/exact_math.hpp; no libm, no FMA contraction).
#pragma once

#include <cstdint>
#include <vector>

#include "zotrain/data/idx.hpp"

namespace zt::data {

// Keeps `count` samples drawn uniformly without replacement with `seed` (SplitMix64, partial
// Fisher-Yates), in their original order. count >= set.count keeps every sample. The draw
// depends only on (set.count, count, seed).
void draw_subset(ImageSet& set, int count, std::uint64_t seed);
// The rows draw_subset keeps of a set of `total`, ascending (all of them when count >= total).
std::vector<std::int32_t> subset_rows(int total, int count, std::uint64_t seed);

// Rotates every image counter-clockwise (as seen on screen, rows running down) by `degrees`
// about its centre, bilinear, with black (0) outside the source image; results are rounded to
// the nearest uint8 (halves up). Multiples of 90 degrees are exact pixel permutations
// (0 the identity) for square images.
void rotate_images(ImageSet& set, double degrees);

// The same rotation of one image at a time (the batchers rotate as they read).
class Rotation {
 public:
  explicit Rotation(double degrees);  // throws zt::Error when not finite
  bool identity() const { return s_ == 0.0 && c_ == 1.0; }
  // dst [rows, cols] = src rotated; dst and src must not overlap.
  void apply(const std::uint8_t* src, std::uint8_t* dst, int rows, int cols) const;

 private:
  double s_ = 0.0, c_ = 1.0;
};

}  // namespace zt::data
