// Tiny hand-made IDX files for the data tests, written into a fresh temporary directory.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "zotrain/core/rng.hpp"

namespace zt::data::testing {

using Bytes = std::vector<std::uint8_t>;

inline void put_be32(Bytes& b, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<std::uint8_t>(v >> s));
}

// Image i has pixel k = (i + 3k) mod 256, so pixel 0 identifies the sample (count ≤ 256).
inline Bytes idx_images(std::uint32_t count, std::uint32_t rows, std::uint32_t cols,
                        std::uint32_t magic = 0x00000803, std::uint32_t header_count = ~0u) {
  Bytes b;
  put_be32(b, magic);
  put_be32(b, header_count == ~0u ? count : header_count);
  put_be32(b, rows);
  put_be32(b, cols);
  for (std::uint32_t i = 0; i < count; ++i)
    for (std::uint32_t k = 0; k < rows * cols; ++k) b.push_back(static_cast<std::uint8_t>(i + 3 * k));
  return b;
}

// Label i is i mod 10.
inline Bytes idx_labels(std::uint32_t count, std::uint32_t magic = 0x00000801) {
  Bytes b;
  put_be32(b, magic);
  put_be32(b, count);
  for (std::uint32_t i = 0; i < count; ++i) b.push_back(static_cast<std::uint8_t>(i % 10));
  return b;
}

inline Bytes gzip_bytes(const Bytes& in) {
  uLongf cap = compressBound(static_cast<uLong>(in.size())) + 64;
  Bytes out(cap);
  z_stream zs{};
  deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    SplitMix64 rng(reinterpret_cast<std::uintptr_t>(this) ^
                   static_cast<std::uint64_t>(std::filesystem::file_time_type::clock::now()
                                                  .time_since_epoch()
                                                  .count()));
    path_ = std::filesystem::temp_directory_path() /
            ("zotrain-" + tag + "-" + std::to_string(rng.next() % 1000000000));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string write(const std::string& name, const Bytes& b) const {
    const std::string p = (path_ / name).string();
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()),
                                             static_cast<std::streamsize>(b.size()));
    return p;
  }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

// The four files of an MNIST-style set in `d`, `train` and `test` images of rows × cols: the
// training images and the test labels gzipped, the other two plain (both kinds are read).
inline void write_mnist_files(const TempDir& d, std::uint32_t train, std::uint32_t test, std::uint32_t rows,
                              std::uint32_t cols) {
  d.write("train-images-idx3-ubyte.gz", gzip_bytes(idx_images(train, rows, cols)));
  d.write("train-labels-idx1-ubyte", idx_labels(train));
  d.write("t10k-images-idx3-ubyte", idx_images(test, rows, cols));
  d.write("t10k-labels-idx1-ubyte.gz", gzip_bytes(idx_labels(test)));
}

}  // namespace zt::data::testing
