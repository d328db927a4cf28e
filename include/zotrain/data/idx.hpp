// IDX files (MNIST / Fashion-MNIST), plain or gzip (detected by content, not by name).
// Validates magic number (0x00000803 images, 0x00000801 labels), dimensions, item counts,
// exact file size, and that images and labels agree in count and labels are < 10.
// Every failure throws zt::Error naming the file and what was wrong. Files (and gzip output)
// larger than 1 GiB, or images larger than 4096 per side, are rejected as not MNIST-like.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zt::data {

struct ImageSet {
  int count = 0, rows = 0, cols = 0;
  std::vector<std::uint8_t> pixels;  // [count, rows, cols], row-major
  std::vector<std::uint8_t> labels;  // [count]
};

// Whole file contents, gunzipped when it starts with the gzip magic. Throws zt::Error.
std::vector<std::uint8_t> read_maybe_gzip(const std::string& path);

// Loads one images/labels pair. limit > 0 keeps only the first `limit` items.
ImageSet load_idx_pair(const std::string& images_path, const std::string& labels_path,
                       int limit = 0);

// A dataset directory holds train-images-idx3-ubyte, train-labels-idx1-ubyte,
// t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte, each optionally with ".gz".
// Returns the path that exists (plain preferred; symlinks followed), or throws naming the
// directory and file.
std::string find_idx_file(const std::string& root, const std::string& stem);

struct ImageDataset {
  ImageSet train, test;
};
ImageDataset load_image_dataset(const std::string& root, int train_limit, int test_limit);

}  // namespace zt::data
