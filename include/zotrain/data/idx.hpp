// IDX files (MNIST / Fashion-MNIST), plain or gzip (detected by content, not by name).
// Validates magic number (0x00000803 images, 0x00000801 labels), dimensions, item counts,
// exact file size, and that images and labels agree in count and labels are < 10.
// Every failure throws zt::Error naming the file and what was wrong. Files (and gzip output)
// larger than 1 GiB, or images larger than 4096 per side, are rejected as not MNIST-like.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "zotrain/data/samples.hpp"

namespace zt::data {

struct ImageSet {
  int count = 0, rows = 0, cols = 0;
  std::vector<std::uint8_t> pixels;  // [count, rows, cols], row-major
  std::vector<std::uint8_t> labels;  // [count]
};

// Whole file contents, gunzipped when it starts with the gzip magic. Throws zt::Error.
std::vector<std::uint8_t> read_maybe_gzip(const std::string& path);

// Loads one images/labels pair. limit > 0 keeps only the first `limit` items (all of them when
// the file holds fewer).
ImageSet load_idx_pair(const std::string& images_path, const std::string& labels_path,
                       std::int64_t limit = 0);

// A dataset directory holds train-images-idx3-ubyte, train-labels-idx1-ubyte,
// t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte, each optionally with ".gz".
// Returns the path that exists (plain preferred; symlinks followed), or throws naming the
// directory and file.
std::string find_idx_file(const std::string& root, const std::string& stem);

struct ImageDataset {
  ImageSet train, test;
};
ImageDataset load_image_dataset(const std::string& root, std::int64_t train_limit,
                                std::int64_t test_limit);

// One split read by batch from disk (samples.hpp): records are images of rows·cols uint8.
struct ImageSplit {
  std::shared_ptr<const Samples> samples;
  int rows = 0, cols = 0;
};

// Opens an images/labels pair checked as load_idx_pair checks it, without loading the images:
// the labels are loaded, each read() preads the batch's images from the file. A gzip images file
// is inflated once, in 64 KiB pieces, into an unlinked temporary file in $TMPDIR (else /tmp; on
// a tmpfs that costs RAM, though not this process's RSS) and read the same way. limit > 0 keeps
// only the first `limit` items.
ImageSplit open_idx_pair(const std::string& images_path, const std::string& labels_path,
                         std::int64_t limit = 0);

struct ImageFiles {
  ImageSplit train, test;
};
ImageFiles open_image_dataset(const std::string& root, std::int64_t train_limit,
                              std::int64_t test_limit);

}  // namespace zt::data
