#include "zotrain/data/image_transforms.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <set>
#include <vector>

#include "zotrain/core/error.hpp"
#include "zotrain/core/rng.hpp"

namespace zt::data {
namespace {

// count random images of rows x cols (seeded), label = index % 10.
ImageSet random_set(int count, int rows, int cols, std::uint64_t seed = 7) {
  ImageSet s;
  s.count = count;
  s.rows = rows;
  s.cols = cols;
  SplitMix64 rng(seed);
  for (int i = 0; i < count * rows * cols; ++i)
    s.pixels.push_back(static_cast<std::uint8_t>(rng.next() >> 56));
  for (int i = 0; i < count; ++i) s.labels.push_back(static_cast<std::uint8_t>(i % 10));
  return s;
}

std::uint8_t px(const ImageSet& s, int n, int y, int x) {
  return s.pixels[static_cast<std::size_t>((n * s.rows + y) * s.cols + x)];
}

TEST(RotateImages, ZeroAndWholeTurnsAreTheIdentity) {
  const ImageSet orig = random_set(3, 28, 28);
  for (double deg : {0.0, 360.0, -360.0}) {
    ImageSet s = orig;
    rotate_images(s, deg);
    EXPECT_EQ(s.pixels, orig.pixels) << deg;
  }
}

TEST(RotateImages, NinetyDegreesIsAnIndexPermutation) {
  const ImageSet orig = random_set(2, 28, 28);
  ImageSet s = orig;
  rotate_images(s, 90.0);
  // Counter-clockwise on screen: the right-hand column becomes the top row.
  for (int n = 0; n < 2; ++n)
    for (int y = 0; y < 28; ++y)
      for (int x = 0; x < 28; ++x)
        ASSERT_EQ(px(s, n, y, x), px(orig, n, x, 27 - y)) << y << "," << x;
  ImageSet cw = orig;
  rotate_images(cw, -90.0);
  for (int y = 0; y < 28; ++y)
    for (int x = 0; x < 28; ++x) ASSERT_EQ(px(cw, 0, y, x), px(orig, 0, 27 - x, y));
}

TEST(RotateImages, FourQuarterTurnsRoundTrip) {
  const ImageSet orig = random_set(2, 28, 28);
  ImageSet s = orig;
  for (int k = 0; k < 4; ++k) rotate_images(s, 90.0);
  EXPECT_EQ(s.pixels, orig.pixels);
  ImageSet h = orig;
  rotate_images(h, 180.0);
  rotate_images(h, 180.0);
  EXPECT_EQ(h.pixels, orig.pixels);
}

TEST(RotateImages, SmallAnglesInterpolateAndKeepTheCentre) {
  // A single bright pixel at the centre of an odd-sized image stays there for any angle; a
  // uniform image stays uniform inside a disc of radius 4 (bilinear weights sum to 1).
  ImageSet dot;
  dot.count = 1, dot.rows = 9, dot.cols = 9;
  dot.pixels.assign(81, 0);
  dot.pixels[40] = 200;
  dot.labels = {3};
  rotate_images(dot, 30.0);
  EXPECT_EQ(px(dot, 0, 4, 4), 200);  // exact: the centre maps to itself
  ImageSet flat;
  flat.count = 1, flat.rows = 9, flat.cols = 9;
  flat.pixels.assign(81, 100);
  flat.labels = {1};
  rotate_images(flat, 45.0);
  for (int y = 0; y < 9; ++y) {
    for (int x = 0; x < 9; ++x) {
      if ((y - 4) * (y - 4) + (x - 4) * (x - 4) <= 9) {
        EXPECT_EQ(px(flat, 0, y, x), 100) << y << "," << x;
      }
    }
  }
  EXPECT_EQ(px(flat, 0, 0, 0), 0);  // a corner comes from outside the source: black
  EXPECT_EQ(flat.labels, std::vector<std::uint8_t>{1});
}

TEST(RotateImages, RejectsNonFiniteAngles) {
  ImageSet s = random_set(1, 4, 4);
  EXPECT_THROW(rotate_images(s, std::numeric_limits<double>::infinity()), Error);
}

TEST(DrawSubset, ReproducibleForASeedAndInFileOrder) {
  // Each image's first pixel is unique (its index), so the kept indices can be read back.
  ImageSet base = random_set(1000, 2, 2);
  for (int i = 0; i < 1000; ++i) {
    base.pixels[static_cast<std::size_t>(i) * 4] = static_cast<std::uint8_t>(i % 256);
    base.pixels[static_cast<std::size_t>(i) * 4 + 1] = static_cast<std::uint8_t>(i / 256);
  }
  auto kept = [&](std::uint64_t seed) {
    ImageSet s = base;
    draw_subset(s, 100, seed);
    EXPECT_EQ(s.count, 100);
    EXPECT_EQ(s.labels.size(), 100u);
    EXPECT_EQ(s.pixels.size(), 400u);
    std::vector<int> idx;
    for (int k = 0; k < s.count; ++k) {
      const int i = px(s, k, 0, 0) + 256 * px(s, k, 0, 1);
      EXPECT_EQ(s.labels[static_cast<std::size_t>(k)], i % 10);  // labels travel with images
      EXPECT_EQ(px(s, k, 1, 0), px(base, i, 1, 0));
      idx.push_back(i);
    }
    return idx;
  };
  const std::vector<int> a = kept(5);
  EXPECT_EQ(a, kept(5));
  EXPECT_NE(a, kept(6));
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  EXPECT_EQ(std::set<int>(a.begin(), a.end()).size(), 100u);  // without replacement
  // Spread over the whole split, not a prefix.
  EXPECT_GT(a.back(), 500);
}

TEST(DrawSubset, AtLeastTheWholeSetKeepsEverything) {
  const ImageSet orig = random_set(10, 3, 3);
  ImageSet s = orig;
  draw_subset(s, 10, 1);
  EXPECT_EQ(s.pixels, orig.pixels);
  draw_subset(s, 50, 1);
  EXPECT_EQ(s.count, 10);
}

}  // namespace
}  // namespace zt::data
