// ModelNet40 in the common HDF5 release (ply_data_train*.h5 / ply_data_test*.h5, as PointNet
// distributes it): each file holds `data` float32 [n, P, 3] (P = 2048 points per shape, x y z,
// centred in the unit sphere, y up) and `label` uint8 [n, 1] (class 0..39). The synthetic
// generator (synthetic_points.hpp) writes the same layout.
//
// Accepted, beyond the exact release: `data` of any floating type (converted to float32 by
// HDF5), `label` of any integer type as [n] or [n, 1]. Rejected with a zt::Error naming the file
// and what was expected: a missing or non-HDF5 file, a missing dataset, wrong rank or shape,
// wrong type class, n differing between `data` and `label`, P differing between files, a label
// outside [0, 40), a NaN or infinite coordinate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "zotrain/data/samples.hpp"

namespace zt::data {

inline constexpr int kModelNet40Classes = 40;

// Point clouds as stored: every stored point of every sample, float32. Batches take N of the
// stored_points per sample (point_batcher.hpp).
struct PointCloudSet {
  int count = 0, stored_points = 0;
  std::vector<float> points;          // [count, stored_points, 3]
  std::vector<std::uint8_t> labels;   // [count]
  std::size_t bytes() const { return points.size() * sizeof(float) + labels.size(); }
};

struct PointCloudDataset {
  PointCloudSet train, test;
  int classes = kModelNet40Classes;
  std::size_t bytes() const { return train.bytes() + test.bytes(); }
};

// The files of one split ("train" or "test") in `root`: regular files (symlinks followed)
// named ply_data_<split>*.h5, sorted by name (byte order, as the release numbers them 0..4).
// Throws zt::Error when root is not a directory or holds no such file.
std::vector<std::string> find_ply_h5_files(const std::string& root, const std::string& split);

// Loads and concatenates `files` in order. limit > 0 keeps only the first `limit` samples (only
// those are read and value-checked; every file's metadata is still validated). All files must
// hold the same number of points per sample.
PointCloudSet load_ply_h5_files(const std::vector<std::string>& files, int limit = 0);

// Both splits of `root`. The test files must hold as many points per sample as the training
// files. limit > 0 as above, per split.
PointCloudDataset load_modelnet40(const std::string& root, int train_limit, int test_limit);

// One split read by batch from its files (samples.hpp): records are stored_points × 3 float32.
struct PointSplit {
  std::shared_ptr<const Samples> samples;
  int stored_points = 0;
};

// Opens `files` checked as load_ply_h5_files checks them — metadata, every label, every
// coordinate finite (read once, 64 shapes at a time) — and keeps only the labels and the open
// files: each read() reads the batch's shapes, one HDF5 hyperslab each. limit > 0 as there.
PointSplit open_ply_h5_files(const std::vector<std::string>& files, int limit = 0);

struct PointFiles {
  PointSplit train, test;
};
PointFiles open_modelnet40(const std::string& root, int train_limit, int test_limit);

}  // namespace zt::data
