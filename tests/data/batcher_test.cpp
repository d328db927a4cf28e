#include "zotrain/data/batcher.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "zotrain/core/error.hpp"

namespace zt::data {
namespace {

// count samples of 2x3 pixels; sample i has every pixel equal to i (count ≤ 256), label i % 10.
ImageSet make_set(int count) {
  ImageSet s;
  s.count = count;
  s.rows = 2;
  s.cols = 3;
  for (int i = 0; i < count; ++i) {
    for (int k = 0; k < 6; ++k) s.pixels.push_back(static_cast<std::uint8_t>(i));
    s.labels.push_back(static_cast<std::uint8_t>(i % 10));
  }
  return s;
}

constexpr Normalisation kIdentity{0.f, 1.f / 255.f};  // x = p exactly

// The sample indices of one epoch, in batch order.
std::vector<int> epoch_order(Batcher& b, int epoch, int batch_size) {
  b.start_epoch(epoch);
  std::vector<float> x(static_cast<std::size_t>(batch_size) * b.sample_floats());
  std::vector<std::uint8_t> y(batch_size);
  std::vector<int> order;
  for (int i = 0; i < b.batches_per_epoch(); ++i) {
    const int n = b.fill(i, x.data(), y.data());
    for (int j = 0; j < n; ++j) {
      const int id = static_cast<int>(std::lround(x[static_cast<std::size_t>(j) * 6]));
      EXPECT_EQ(y[j], id % 10);
      for (int k = 1; k < 6; ++k) EXPECT_EQ(x[static_cast<std::size_t>(j) * 6 + k], x[j * 6]);
      order.push_back(id);
    }
  }
  return order;
}

TEST(BatcherTest, SameSeedAndEpochGiveSameOrder) {
  const ImageSet s = make_set(103);
  Batcher a(s, 10, true, false, 42, kIdentity), b(s, 10, true, false, 42, kIdentity);
  EXPECT_EQ(epoch_order(a, 3, 10), epoch_order(b, 3, 10));
  // The order depends on (seed, epoch) alone, not on the epochs visited before.
  const std::vector<int> e3 = epoch_order(a, 3, 10);
  epoch_order(b, 0, 10);
  epoch_order(b, 7, 10);
  EXPECT_EQ(epoch_order(b, 3, 10), e3);
}

TEST(BatcherTest, OrderDiffersAcrossEpochsAndSeeds) {
  const ImageSet s = make_set(103);
  Batcher a(s, 10, true, false, 42, kIdentity), b(s, 10, true, false, 43, kIdentity);
  const std::vector<int> e0 = epoch_order(a, 0, 10);
  EXPECT_NE(e0, epoch_order(a, 1, 10));
  EXPECT_NE(e0, epoch_order(b, 0, 10));
  std::vector<int> identity(103);
  for (int i = 0; i < 103; ++i) identity[i] = i;
  EXPECT_NE(e0, identity);
}

TEST(BatcherTest, PinnedOrder) {
  // Guards the documented generator (mix64(mix64(seed) ^ epoch), Fisher–Yates with
  // SplitMix64::below): the same on every platform and compiler.
  const ImageSet s = make_set(10);
  Batcher b(s, 10, true, false, 1, kIdentity);
  EXPECT_EQ(epoch_order(b, 0, 10), (std::vector<int>{5, 6, 1, 8, 7, 4, 3, 9, 0, 2}));
}

TEST(BatcherTest, EverySampleExactlyOncePerEpoch) {
  const ImageSet s = make_set(103);
  Batcher b(s, 10, true, /*drop_last=*/false, 5, kIdentity);
  EXPECT_EQ(b.batches_per_epoch(), 11);
  for (int epoch = 0; epoch < 4; ++epoch) {
    std::vector<int> seen(103, 0);
    for (int id : epoch_order(b, epoch, 10)) ++seen[id];
    for (int i = 0; i < 103; ++i) EXPECT_EQ(seen[i], 1) << "sample " << i << " epoch " << epoch;
  }
  std::vector<float> x(60);
  std::vector<std::uint8_t> y(10);
  EXPECT_EQ(b.fill(10, x.data(), y.data()), 3);  // last, partial batch kept
  EXPECT_EQ(b.fill(0, x.data(), y.data()), 10);
}

TEST(BatcherTest, DropLast) {
  const ImageSet s = make_set(103);
  Batcher b(s, 10, true, /*drop_last=*/true, 5, kIdentity);
  EXPECT_EQ(b.batches_per_epoch(), 10);
  const std::vector<int> order = epoch_order(b, 2, 10);
  ASSERT_EQ(order.size(), 100u);
  std::vector<int> seen(103, 0);
  for (int id : order) ++seen[id];
  for (int i = 0; i < 103; ++i) EXPECT_LE(seen[i], 1);
  // The dropped samples change between epochs.
  EXPECT_NE(epoch_order(b, 2, 10), epoch_order(b, 3, 10));
  const ImageSet exact = make_set(100);
  EXPECT_EQ(Batcher(exact, 10, true, true, 5, kIdentity).batches_per_epoch(), 10);
  EXPECT_EQ(Batcher(exact, 10, true, false, 5, kIdentity).batches_per_epoch(), 10);
  const ImageSet small = make_set(7);
  EXPECT_EQ(Batcher(small, 10, true, true, 5, kIdentity).batches_per_epoch(), 0);
  EXPECT_EQ(Batcher(small, 10, true, false, 5, kIdentity).batches_per_epoch(), 1);
}

TEST(BatcherTest, NoShuffleKeepsFileOrder) {
  const ImageSet s = make_set(25);
  Batcher b(s, 4, /*shuffle=*/false, false, 5, kIdentity);
  for (int epoch : {0, 1, 9}) {
    const std::vector<int> order = epoch_order(b, epoch, 4);
    ASSERT_EQ(order.size(), 25u);
    for (int i = 0; i < 25; ++i) EXPECT_EQ(order[i], i);
  }
}

TEST(BatcherTest, NormalisesPixels) {
  ImageSet s;
  s.count = 1;
  s.rows = 1;
  s.cols = 3;
  s.pixels = {0, 255, 128};
  s.labels = {4};
  const Normalisation n{0.1307f, 0.3081f};
  Batcher b(s, 1, false, false, 1, n);
  float x[3];
  std::uint8_t y;
  ASSERT_EQ(b.fill(0, x, &y), 1);
  EXPECT_EQ(y, 4);
  EXPECT_FLOAT_EQ(x[0], -0.1307f / 0.3081f);
  EXPECT_FLOAT_EQ(x[1], (1.f - 0.1307f) / 0.3081f);
  EXPECT_FLOAT_EQ(x[2], (128.f / 255.f - 0.1307f) / 0.3081f);
}

}  // namespace
}  // namespace zt::data
