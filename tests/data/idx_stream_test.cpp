// open_idx_pair (images read by batch from disk) against load_idx_pair (the whole set in
// memory): the same records and labels, and the same errors for the same bad files.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>

#include "idx_fixtures.hpp"
#include "../support.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/data/idx.hpp"

namespace zt::data {
namespace {

using zt::test::expect_error;

using namespace zt::data::testing;  // the IDX fixtures (idx_fixtures.hpp)

// Every record of an opened split, read in a scrambled order and put back in place.
ImageSet read_all(const ImageSplit& s) {
  ImageSet set;
  set.count = s.samples->count();
  set.rows = s.rows;
  set.cols = s.cols;
  const std::size_t per = s.samples->record_bytes();
  EXPECT_EQ(per, static_cast<std::size_t>(s.rows) * s.cols);
  std::vector<std::int32_t> idx(static_cast<std::size_t>(set.count));
  std::iota(idx.begin(), idx.end(), 0);
  std::reverse(idx.begin(), idx.end());
  std::vector<std::uint8_t> px(idx.size() * per), lb(idx.size());
  s.samples->read(idx.data(), set.count, px.data(), lb.data());
  set.pixels.resize(px.size());
  set.labels.resize(lb.size());
  for (std::size_t k = 0; k < idx.size(); ++k) {
    const auto i = static_cast<std::size_t>(idx[k]);
    std::copy_n(px.begin() + static_cast<std::ptrdiff_t>(k * per), per,
                set.pixels.begin() + static_cast<std::ptrdiff_t>(i * per));
    set.labels[i] = lb[k];
  }
  return set;
}

void expect_same(const ImageSet& a, const ImageSet& b) {
  EXPECT_EQ(a.count, b.count);
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(a.cols, b.cols);
  EXPECT_EQ(a.pixels, b.pixels);
  EXPECT_EQ(a.labels, b.labels);
}

TEST(IdxStreamTest, PlainGzipAndLimitReadAsLoaded) {
  TempDir d("idxs");
  const auto im = d.write("im", idx_images(12, 3, 5));
  const auto lb = d.write("lb", idx_labels(12));
  const auto img = d.write("im-no-suffix", gzip_bytes(idx_images(12, 3, 5)));
  expect_same(read_all(open_idx_pair(im, lb)), load_idx_pair(im, lb));
  expect_same(read_all(open_idx_pair(img, lb)), load_idx_pair(img, lb));
  expect_same(read_all(open_idx_pair(im, lb, 5)), load_idx_pair(im, lb, 5));
  expect_same(read_all(open_idx_pair(img, lb, 100)), load_idx_pair(img, lb, 100));
  // Only the labels stay in memory, not the 180 bytes of pixels.
  EXPECT_EQ(open_idx_pair(img, lb).samples->resident_bytes(), 12u);
}

TEST(IdxStreamTest, LargeMultiMemberGzipInflatesInPieces) {
  // 200 images of 28x28 (~157 KB, several 64 KiB pieces), as two gzip members split at an odd
  // offset, so member and piece boundaries fall anywhere.
  TempDir d("idxs");
  const Bytes whole = idx_images(200, 28, 28);
  const std::size_t cut = 70001;
  Bytes gz = gzip_bytes(Bytes(whole.begin(), whole.begin() + cut));
  const Bytes second = gzip_bytes(Bytes(whole.begin() + cut, whole.end()));
  gz.insert(gz.end(), second.begin(), second.end());
  const auto im = d.write("im.gz", gz);
  const auto lb = d.write("lb", idx_labels(200));
  expect_same(read_all(open_idx_pair(im, lb)), load_idx_pair(im, lb));
}

TEST(IdxStreamTest, BadFilesGiveTheLoadersErrors) {
  TempDir d("idxs");
  const auto lb = d.write("lb", idx_labels(10));
  Bytes trunc = idx_images(10, 4, 4);
  trunc.resize(trunc.size() - 7);
  Bytes trailing = idx_images(10, 4, 4);
  trailing.push_back(0);
  const Bytes gz = gzip_bytes(idx_images(10, 4, 4));
  Bytes crc = gz;
  crc[crc.size() - 6] ^= 0xff;
  Bytes garbage_after = gz;
  garbage_after.push_back(0x42);
  struct Case {
    std::string name;
    Bytes bytes;
    std::vector<std::string> parts;
  };
  const std::vector<Case> cases = {
      {"magic", idx_images(10, 2, 2, 0x00000801), {"bad magic number 0x00000801"}},
      {"trunc", trunc, {"truncated", "10 images of 4x4"}},
      {"trailing", trailing, {"size mismatch"}},
      {"header", Bytes(gz.begin(), gz.begin()), {"too short (0 bytes)"}},
      {"count", idx_images(5, 2, 2, 0x00000803, 500), {"truncated", "500 images"}},
      {"half.gz", Bytes(gz.begin(), gz.begin() + static_cast<std::ptrdiff_t>(gz.size() / 2)),
       {"truncated gzip data"}},
      {"crc.gz", crc, {"corrupt gzip data"}},
      {"trailing.gz", garbage_after, {"trailing garbage"}},
      {"labels", idx_images(11, 4, 4), {"holds 11 images but", "10 labels"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const auto im = d.write(c.name, c.bytes);
    std::vector<std::string> parts = c.parts;
    parts.insert(parts.begin(), im);
    expect_error([&] { load_idx_pair(im, lb); }, parts);
    expect_error([&] { open_idx_pair(im, lb); }, parts);
  }
  expect_error([&] { open_idx_pair(d.path(), lb); }, {d.path(), "is a directory"});
  expect_error([&] { open_idx_pair(d.path() + "/none", lb); }, {"/none", "cannot open"});
}

TEST(IdxStreamTest, OpenImageDatasetFindsBothSplits) {
  TempDir d("idxs");
  write_mnist_files(d, 12, 4, 3, 5);
  const ImageDataset mem = load_image_dataset(d.path(), 0, 3);
  const ImageFiles f = open_image_dataset(d.path(), 0, 3);
  expect_same(read_all(f.train), mem.train);
  expect_same(read_all(f.test), mem.test);
}

}  // namespace
}  // namespace zt::data
