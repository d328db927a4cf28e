#include "zotrain/data/point_batcher.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <vector>

#include "../support.hpp"
#include "zotrain/core/error.hpp"

namespace zt::data {
namespace {

using zt::test::expect_error;

// count shapes of p points. The y coordinate of point i of shape s is its id s·p + i (exact in
// float), x and z are random in [−1, 1); label s % 40.
PointCloudSet make_set(int count, int p, std::uint64_t seed = 3) {
  PointCloudSet s;
  s.count = count;
  s.stored_points = p;
  const std::vector<float> xz = zt::test::random_floats(static_cast<std::size_t>(count) * p * 2, seed);
  for (int sh = 0; sh < count; ++sh) {
    for (int i = 0; i < p; ++i) {
      const std::size_t k = static_cast<std::size_t>(sh * p + i);
      s.points.push_back(xz[2 * k]);
      s.points.push_back(static_cast<float>(sh * p + i));
      s.points.push_back(xz[2 * k + 1]);
    }
    s.labels.push_back(static_cast<std::uint8_t>(sh % 40));
  }
  return s;
}

struct Batch {
  std::vector<float> x;
  std::vector<std::uint8_t> y;
  int n = 0;
};

Batch fill(PointBatcher& b, int batch_size, int index) {
  Batch out;
  out.x.assign(static_cast<std::size_t>(batch_size) * b.sample_floats(), -7777.25f);
  out.y.assign(static_cast<std::size_t>(batch_size), 255);
  out.n = b.fill(index, out.x.data(), out.y.data());
  // Nothing written past the n filled samples.
  for (std::size_t k = static_cast<std::size_t>(out.n) * b.sample_floats(); k < out.x.size(); ++k)
    EXPECT_EQ(out.x[k], -7777.25f);
  return out;
}

// The shape id of each sample of a whole epoch, in batch order (from the y ids).
std::vector<int> epoch_order(PointBatcher& b, int epoch, int batch_size, int p) {
  b.start_epoch(epoch);
  std::vector<int> order;
  for (int i = 0; i < b.batches_per_epoch(); ++i) {
    const Batch batch = fill(b, batch_size, i);
    for (int j = 0; j < batch.n; ++j) {
      const int id = static_cast<int>(batch.x[static_cast<std::size_t>(j) * b.sample_floats() + 1]) / p;
      EXPECT_EQ(batch.y[static_cast<std::size_t>(j)], id % 40);
      order.push_back(id);
    }
  }
  return order;
}

std::uint64_t fnv1a(const std::vector<float>& v) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (float f : v) {
    std::uint32_t bits;
    std::memcpy(&bits, &f, 4);
    for (int k = 0; k < 4; ++k) {
      h ^= (bits >> (8 * k)) & 0xff;
      h *= 0x100000001b3ULL;
    }
  }
  return h;
}

constexpr Augment kAll{true, 0.01f, 0.05f};

TEST(PointBatcherTest, SameSeedAndEpochGiveSameBatch) {
  const PointCloudSet s = make_set(23, 32);
  PointBatcher a(s, 5, 16, true, true, 42, kAll), b(s, 5, 16, true, true, 42, kAll);
  a.start_epoch(3);
  b.start_epoch(0);
  b.start_epoch(3);  // the epochs visited before do not matter
  for (int i = 0; i < a.batches_per_epoch(); ++i) {
    const Batch x = fill(a, 5, i), y = fill(b, 5, i);
    EXPECT_EQ(x.x, y.x);
    EXPECT_EQ(x.y, y.y);
  }
}

TEST(PointBatcherTest, OrderDiffersAcrossEpochsAndSeeds) {
  const PointCloudSet s = make_set(40, 4);
  PointBatcher a(s, 8, 4, true, false, 42), b(s, 8, 4, true, false, 43);
  const std::vector<int> e0 = epoch_order(a, 0, 8, 4);
  EXPECT_NE(e0, epoch_order(a, 1, 8, 4));
  EXPECT_NE(e0, epoch_order(b, 0, 8, 4));
  EXPECT_EQ(e0, epoch_order(a, 0, 8, 4));
  std::vector<int> sorted = e0;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 40; ++i) EXPECT_EQ(sorted[static_cast<std::size_t>(i)], i);  // each once
  EXPECT_NE(sorted, e0);
}

TEST(PointBatcherTest, PinnedOrderMatchesImageBatcher) {
  // The same documented shuffle as the image Batcher's pinned order (batcher_test.cpp).
  const PointCloudSet s = make_set(10, 2);
  PointBatcher b(s, 10, 2, true, false, 1);
  EXPECT_EQ(epoch_order(b, 0, 10, 2), (std::vector<int>{5, 6, 1, 8, 7, 4, 3, 9, 0, 2}));
}

TEST(PointBatcherTest, DropLastAndPartialBatches) {
  const PointCloudSet s = make_set(23, 4);
  PointBatcher train(s, 5, 4, true, true, 7), eval(s, 5, 4, false, false, 7);
  EXPECT_EQ(train.batches_per_epoch(), 4);
  EXPECT_EQ(eval.batches_per_epoch(), 5);
  EXPECT_EQ(epoch_order(train, 0, 5, 4).size(), 20u);
  EXPECT_EQ(fill(eval, 5, 4).n, 3);
  std::vector<int> identity(23);
  for (int i = 0; i < 23; ++i) identity[static_cast<std::size_t>(i)] = i;
  EXPECT_EQ(epoch_order(eval, 2, 5, 4), identity);
}

TEST(PointBatcherTest, EvaluationTakesTheFirstPoints) {
  const PointCloudSet s = make_set(6, 32);
  PointBatcher b(s, 4, 10, false, false, 9);
  const Batch batch = fill(b, 4, 1);  // shapes 4 and 5
  ASSERT_EQ(batch.n, 2);
  for (int j = 0; j < 2; ++j)
    for (int k = 0; k < 30; ++k)
      EXPECT_EQ(batch.x[static_cast<std::size_t>(j * 30 + k)],
                s.points[static_cast<std::size_t>((4 + j) * 32 * 3 + k)]);
}

TEST(PointBatcherTest, SubsetHasNoDuplicatesAndIsUniform) {
  const int p = 40, n = 10, count = 50;
  const PointCloudSet s = make_set(count, p);
  PointBatcher b(s, 50, n, true, false, 5);
  std::vector<int> hits(static_cast<std::size_t>(p), 0);
  const int epochs = 40;
  for (int e = 0; e < epochs; ++e) {
    b.start_epoch(e);
    const Batch batch = fill(b, 50, 0);
    for (int j = 0; j < batch.n; ++j) {
      std::set<int> ids;
      int prev = -1, shape = -1;
      for (int i = 0; i < n; ++i) {
        const float* pt = batch.x.data() + static_cast<std::size_t>(j * n + i) * 3;
        const int id = static_cast<int>(pt[1]);
        if (shape < 0) shape = id / p;
        EXPECT_EQ(id / p, shape);  // every point from the sample's own shape
        EXPECT_GT(id, prev);       // distinct, in stored order
        prev = id;
        ids.insert(id);
        // The point is copied whole.
        const float* src = s.points.data() + static_cast<std::size_t>(id) * 3;
        EXPECT_EQ(pt[0], src[0]);
        EXPECT_EQ(pt[2], src[2]);
        ++hits[static_cast<std::size_t>(id % p)];
      }
      EXPECT_EQ(ids.size(), static_cast<std::size_t>(n));
    }
  }
  // Each stored point is chosen with probability n/p: expected 500 of 2000 draws each; a
  // binomial sd of ~19, so ±100 is > 5 sd.
  for (int i = 0; i < p; ++i) {
    EXPECT_NEAR(hits[static_cast<std::size_t>(i)], epochs * count * n / p, 100) << "point " << i;
  }
}

TEST(PointBatcherTest, AugmentationDependsOnSampleNotBatch) {
  const PointCloudSet s = make_set(12, 64);
  PointBatcher one(s, 1, 20, true, false, 77, kAll), seven(s, 7, 20, true, false, 77, kAll);
  one.start_epoch(2);
  seven.start_epoch(2);
  std::vector<float> a, b;
  for (int i = 0; i < one.batches_per_epoch(); ++i) {
    const Batch x = fill(one, 1, i);
    a.insert(a.end(), x.x.begin(), x.x.begin() + x.n * one.sample_floats());
  }
  for (int i = 0; i < seven.batches_per_epoch(); ++i) {
    const Batch x = fill(seven, 7, i);
    b.insert(b.end(), x.x.begin(), x.x.begin() + x.n * seven.sample_floats());
  }
  EXPECT_EQ(a, b);
}

TEST(PointBatcherTest, RotationKeepsNormsAndTheUpCoordinate) {
  const PointCloudSet s = make_set(30, 16);
  PointBatcher plain(s, 30, 16, false, false, 4), rot(s, 30, 16, false, false, 4, {true, 0.f, 0.f});
  const Batch a = fill(plain, 30, 0), b = fill(rot, 30, 0);
  int moved = 0;
  std::vector<double> angles;
  for (int j = 0; j < 30; ++j) {
    for (int i = 0; i < 16; ++i) {
      const float* p = a.x.data() + static_cast<std::size_t>(j * 16 + i) * 3;
      const float* q = b.x.data() + static_cast<std::size_t>(j * 16 + i) * 3;
      EXPECT_EQ(q[1], p[1]);  // y is the axis
      const double r0 = std::hypot(p[0], p[2]), r1 = std::hypot(q[0], q[2]);
      EXPECT_NEAR(r1, r0, 4e-7 * std::max(1.0, r0));
      if (q[0] != p[0] || q[2] != p[2]) ++moved;
      if (i == 0 && r0 > 0.1) {
        angles.push_back(std::atan2(q[2], q[0]) - std::atan2(p[2], p[0]));
      }
    }
    // One rigid rotation per sample: the angle is the same for all its points.
    const float* p0 = a.x.data() + static_cast<std::size_t>(j * 16) * 3;
    const float* q0 = b.x.data() + static_cast<std::size_t>(j * 16) * 3;
    const double c = (p0[0] * q0[0] + p0[2] * q0[2]), sn = (p0[0] * q0[2] - p0[2] * q0[0]);
    for (int i = 1; i < 16; ++i) {
      const float* p = a.x.data() + static_cast<std::size_t>(j * 16 + i) * 3;
      const float* q = b.x.data() + static_cast<std::size_t>(j * 16 + i) * 3;
      const double r2 = p0[0] * p0[0] + p0[2] * p0[2];
      const double ci = (p[0] * q[0] + p[2] * q[2]), si = (p[0] * q[2] - p[2] * q[0]);
      const double ri2 = p[0] * p[0] + p[2] * p[2];
      if (r2 > 0.01 && ri2 > 0.01) {
        EXPECT_NEAR(ci / ri2, c / r2, 1e-5);
        EXPECT_NEAR(si / ri2, sn / r2, 1e-5);
      }
    }
  }
  EXPECT_GT(moved, 30 * 16 * 9 / 10);
  // Angles spread over the circle, not a constant.
  double lo = 10, hi = -10;
  for (double t : angles) {
    const double w = std::remainder(t, 2 * M_PI);
    lo = std::min(lo, w);
    hi = std::max(hi, w);
  }
  EXPECT_GT(hi - lo, 3.0);
}

TEST(PointBatcherTest, JitterIsBoundedByClipAndHasSigma) {
  const PointCloudSet s = make_set(20, 64);
  PointBatcher plain(s, 20, 64, false, false, 8);
  PointBatcher clipped(s, 20, 64, false, false, 8, {false, 0.01f, 0.015f});
  PointBatcher free(s, 20, 64, false, false, 8, {false, 0.01f, 1.0f});
  const Batch a = fill(plain, 20, 0), b = fill(clipped, 20, 0), c = fill(free, 20, 0);
  double sum2 = 0, max_clipped = 0;
  int at_clip = 0;
  for (std::size_t k = 0; k < a.x.size(); ++k) {
    const double base = a.x[k];
    const double tol = 1e-7 * std::max(1.0, std::fabs(base)) + 1e-9;
    const double dc = b.x[k] - base, df = c.x[k] - base;
    EXPECT_LE(std::fabs(dc), 0.015 + tol);
    EXPECT_LE(std::fabs(df), 0.06 + tol);  // |g| ≤ 6
    max_clipped = std::max(max_clipped, std::fabs(dc));
    if (std::fabs(dc) > 0.015 - 1e-4) ++at_clip;
    sum2 += df * df;
  }
  const double sd = std::sqrt(sum2 / static_cast<double>(a.x.size()));
  EXPECT_NEAR(sd, 0.01, 0.001);
  EXPECT_GT(at_clip, 0);  // the clip was hit (~13% of the values are beyond 1.5σ)
}

TEST(PointBatcherTest, PinnedAugmentedBatch) {
  // Subset, rotation and jitter use only integer generators and +−×/√: the same bits on every
  // platform. This digest is checked on x86-64 and under qemu on aarch64.
  const PointCloudSet s = make_set(8, 48, 21);
  PointBatcher b(s, 8, 32, true, false, 2024, kAll);
  b.start_epoch(5);
  const Batch batch = fill(b, 8, 0);
  EXPECT_EQ(fnv1a(batch.x), 0x7eb99ad9097cb6beULL) << std::hex << fnv1a(batch.x);
}

TEST(PointBatcherTest, RejectsBadArguments) {
  const PointCloudSet s = make_set(4, 16);
  expect_error([&] { PointBatcher(s, 2, 17, true, true, 1); }, {"data.points = 17", "1..16"});
  expect_error([&] { PointBatcher(s, 2, 0, true, true, 1); }, {"data.points = 0"});
  expect_error([&] { PointBatcher(s, 2, 8, true, true, 1, {false, -0.1f, 0.05f}); },
               {"jitter sigma"});
  expect_error([&] { PointBatcher(s, 2, 8, true, true, 1, {false, 0.01f, NAN}); },
               {"jitter clip"});
  PointBatcher ok(s, 2, 16, true, true, 1);  // all stored points is fine
  EXPECT_EQ(ok.points(), 16);
  EXPECT_EQ(ok.sample_floats(), 48);
}

}  // namespace
}  // namespace zt::data
