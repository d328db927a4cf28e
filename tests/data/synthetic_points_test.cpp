#include "zotrain/data/synthetic_points.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <initializer_list>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "../support.hpp"
#include "h5_fixtures.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/data/modelnet40.hpp"

namespace zt::data {
namespace {

using testing::file_bytes;
using testing::TempDir;
using zt::test::expect_error;

SyntheticOptions small(int classes = 10) {
  SyntheticOptions o;
  o.classes = classes;
  o.train_per_class = 4;
  o.test_per_class = 2;
  o.points = 256;
  o.seed = 5;
  return o;
}

std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(SyntheticPointsTest, SameOptionsGiveByteIdenticalFiles) {
  TempDir a("synth-a"), b("synth-b");
  write_synthetic_modelnet(a.path(), small());
  // More than a second apart: a timestamp anywhere in the files would differ.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  write_synthetic_modelnet(b.path(), small());
  for (const char* name : {"ply_data_train0.h5", "ply_data_test0.h5", "shape_names.txt"}) {
    const auto x = file_bytes(a.path() + "/" + name), y = file_bytes(b.path() + "/" + name);
    EXPECT_FALSE(x.empty()) << name;
    EXPECT_TRUE(x == y) << name << " differs";
  }
  // Rewriting in place replaces the files and leaves no temporary behind.
  write_synthetic_modelnet(a.path(), small());
  EXPECT_TRUE(file_bytes(a.path() + "/ply_data_train0.h5") ==
              file_bytes(b.path() + "/ply_data_train0.h5"));
  EXPECT_EQ(listing(a.path()),
            (std::vector<std::string>{"ply_data_test0.h5", "ply_data_train0.h5", "shape_names.txt"}));
}

TEST(SyntheticPointsTest, SeedChangesTheData) {
  SyntheticOptions o = small();
  std::vector<float> x(256 * 3), y(256 * 3);
  std::uint8_t lx, ly;
  synthetic_sample(o, true, 3, x.data(), &lx);
  o.seed = 6;
  synthetic_sample(o, true, 3, y.data(), &ly);
  EXPECT_EQ(lx, ly);
  EXPECT_NE(x, y);
  synthetic_sample(o, false, 3, x.data(), &lx);  // test split: its own stream
  EXPECT_NE(x, y);
}

TEST(SyntheticPointsTest, EveryClassPresentAndBalancedWithNames) {
  for (const int classes : {10, synthetic_shape_count()}) {
    TempDir dir("synth-classes");
    const SyntheticOptions o = small(classes);
    write_synthetic_modelnet(dir.path(), o);
    const PointCloudDataset ds = load_modelnet40(dir.path(), 0, 0);
    for (const PointCloudSet* set : {&ds.train, &ds.test}) {
      std::vector<int> counts(static_cast<std::size_t>(classes), 0);
      for (std::uint8_t l : set->labels) {
        ASSERT_LT(l, classes);
        ++counts[l];
      }
      for (int c : counts) EXPECT_EQ(c, set->count / classes);
    }
    EXPECT_EQ(ds.train.count, classes * 4);
    EXPECT_EQ(ds.test.count, classes * 2);
    std::ifstream names(dir.path() + "/shape_names.txt");
    std::string line;
    int c = 0;
    while (std::getline(names, line)) EXPECT_EQ(line, synthetic_shape_name(c++));
    EXPECT_EQ(c, classes);
  }
  EXPECT_GE(synthetic_shape_count(), 12);
  EXPECT_EQ(synthetic_shape_name(0), "sphere");
}

TEST(SyntheticPointsTest, CentredInsideTheUnitSphere) {
  const SyntheticOptions o = small(synthetic_shape_count());
  std::vector<float> pts(static_cast<std::size_t>(o.points) * 3);
  for (int i = 0; i < o.classes * o.train_per_class; ++i) {
    std::uint8_t label;
    synthetic_sample(o, true, i, pts.data(), &label);
    EXPECT_EQ(label, i % o.classes);
    double cx = 0, cy = 0, cz = 0, rmax = 0;
    for (int k = 0; k < o.points; ++k) {
      const double x = pts[static_cast<std::size_t>(k) * 3], y = pts[static_cast<std::size_t>(k) * 3 + 1],
                   z = pts[static_cast<std::size_t>(k) * 3 + 2];
      ASSERT_TRUE(std::isfinite(x) && std::isfinite(y) && std::isfinite(z));
      cx += x, cy += y, cz += z;
      rmax = std::max(rmax, std::sqrt(x * x + y * y + z * z));
    }
    EXPECT_LE(rmax, 1.0 + 1e-6) << synthetic_shape_name(label);
    EXPECT_GE(rmax, 1.0 - 1e-6) << synthetic_shape_name(label);
    EXPECT_NEAR(cx / o.points, 0.0, 1e-6);
    EXPECT_NEAR(cy / o.points, 0.0, 1e-6);
    EXPECT_NEAR(cz / o.points, 0.0, 1e-6);
  }
}

// Rotation-invariant features of a cloud: a histogram of distances from the centroid and of the
// |y| (up) coordinate. A nearest-centroid classifier on them separates the shapes well above
// chance but not perfectly — the shapes are distinguishable, not trivial.
std::array<double, 24> features(const std::vector<float>& pts) {
  std::array<double, 24> f{};
  const std::size_t n = pts.size() / 3;
  for (std::size_t k = 0; k < n; ++k) {
    const double x = pts[k * 3], y = pts[k * 3 + 1], z = pts[k * 3 + 2];
    const double r = std::sqrt(x * x + y * y + z * z);
    f[std::min<std::size_t>(11, static_cast<std::size_t>(r * 12))] += 1.0 / static_cast<double>(n);
    f[12 + std::min<std::size_t>(11, static_cast<std::size_t>(std::fabs(y) * 12))] +=
        1.0 / static_cast<double>(n);
  }
  return f;
}

TEST(SyntheticPointsTest, ShapesAreDistinguishable) {
  SyntheticOptions o = small(synthetic_shape_count());
  o.train_per_class = 20;
  o.test_per_class = 20;
  o.points = 512;
  const int classes = o.classes;
  std::vector<std::array<double, 24>> centroid(static_cast<std::size_t>(classes));
  std::vector<float> pts(static_cast<std::size_t>(o.points) * 3);
  std::uint8_t label;
  for (int i = 0; i < classes * o.train_per_class; ++i) {
    synthetic_sample(o, true, i, pts.data(), &label);
    const auto f = features(pts);
    for (std::size_t k = 0; k < f.size(); ++k) centroid[label][k] += f[k] / o.train_per_class;
  }
  int correct = 0;
  const int total = classes * o.test_per_class;
  for (int i = 0; i < total; ++i) {
    synthetic_sample(o, false, i, pts.data(), &label);
    const auto f = features(pts);
    int best = -1;
    double best_d = 1e300;
    for (int c = 0; c < classes; ++c) {
      double d = 0;
      for (std::size_t k = 0; k < f.size(); ++k) d += (f[k] - centroid[c][k]) * (f[k] - centroid[c][k]);
      if (d < best_d) best_d = d, best = c;
    }
    correct += best == label;
  }
  const double acc = static_cast<double>(correct) / total;
  std::printf("nearest-centroid accuracy on %d synthetic shapes: %.3f\n", classes, acc);
  EXPECT_GT(acc, 0.5);
}

TEST(SyntheticPointsTest, PinnedValues) {
  // Only integer generators and +−×/√ (no libm sin/cos): the same bits on every platform.
  // This digest is checked on x86-64 and under qemu on aarch64.
  const SyntheticOptions o = small(synthetic_shape_count());
  std::uint64_t h = 0xcbf29ce484222325ULL;
  std::vector<float> pts(static_cast<std::size_t>(o.points) * 3);
  for (int i = 0; i < o.classes; ++i) {
    std::uint8_t label;
    synthetic_sample(o, i % 2 == 0, i, pts.data(), &label);
    for (float v : pts) {
      std::uint32_t bits;
      std::memcpy(&bits, &v, 4);
      h = (h ^ bits) * 0x100000001b3ULL;
    }
  }
  EXPECT_EQ(h, 0x8d226e8bdbd724a3ULL) << std::hex << h;
}

TEST(SyntheticPointsTest, RejectsBadOptions) {
  TempDir dir("synth-bad");
  const auto with = [&](auto change, std::initializer_list<std::string> parts) {
    SyntheticOptions o = small();
    change(o);
    expect_error([&] { write_synthetic_modelnet(dir.path(), o); }, parts);
  };
  with([](SyntheticOptions& o) { o.classes = 9; }, {"synthetic.classes = 9", "10..14"});
  with([](SyntheticOptions& o) { o.classes = 15; }, {"synthetic.classes = 15"});
  with([](SyntheticOptions& o) { o.train_per_class = 0; }, {"synthetic.train_per_class = 0"});
  with([](SyntheticOptions& o) { o.test_per_class = -1; }, {"synthetic.test_per_class = -1"});
  with([](SyntheticOptions& o) { o.points = 0; }, {"synthetic.points = 0"});
  with([](SyntheticOptions& o) { o.noise = -0.01f; }, {"synthetic.noise"});
  with([](SyntheticOptions& o) { o.noise = NAN; }, {"synthetic.noise"});
  with([](SyntheticOptions& o) { o.train_per_class = 100000000; }, {"synthetic.train_per_class"});
  EXPECT_TRUE(listing(dir.path()).empty());
}

TEST(SyntheticPointsTest, RefusesToMixWithOtherPlyFiles) {
  TempDir dir("synth-mix");
  std::ofstream(dir.path() + "/ply_data_train1.h5") << "x";
  expect_error([&] { write_synthetic_modelnet(dir.path(), small()); },
               {dir.path(), "ply_data_train1.h5", "loaded together"});
  EXPECT_EQ(listing(dir.path()), std::vector<std::string>{"ply_data_train1.h5"});
}

TEST(SyntheticPointsTest, CreatesTheDirectory) {
  TempDir dir("synth-mkdir");
  const std::string sub = dir.path() + "/a/b";
  SyntheticOptions o = small();
  o.points = 1;  // a single point normalises to the origin
  write_synthetic_modelnet(sub, o);
  const PointCloudDataset ds = load_modelnet40(sub, 0, 0);
  EXPECT_EQ(ds.train.stored_points, 1);
  for (float v : ds.train.points) EXPECT_EQ(v, 0.f);
}

}  // namespace
}  // namespace zt::data
