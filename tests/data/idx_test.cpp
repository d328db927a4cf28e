#include "zotrain/data/idx.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <string>

#include "idx_fixtures.hpp"
#include "../support.hpp"
#include "zotrain/core/error.hpp"

namespace zt::data {
namespace {

using zt::test::expect_error;

using namespace zt::data::testing;  // the IDX fixtures (idx_fixtures.hpp)

void expect_pair_matches_fixture(const ImageSet& s, int count, int rows, int cols) {
  ASSERT_EQ(s.count, count);
  ASSERT_EQ(s.rows, rows);
  ASSERT_EQ(s.cols, cols);
  const Bytes want = idx_images(count, rows, cols);
  ASSERT_EQ(s.pixels.size(), static_cast<std::size_t>(count) * rows * cols);
  EXPECT_TRUE(std::equal(s.pixels.begin(), s.pixels.end(), want.begin() + 16));
  ASSERT_EQ(s.labels.size(), static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) EXPECT_EQ(s.labels[i], i % 10);
}

TEST(IdxTest, LoadsPlainPair) {
  TempDir d("idx");
  const auto im = d.write("im", idx_images(12, 3, 5));
  const auto lb = d.write("lb", idx_labels(12));
  expect_pair_matches_fixture(load_idx_pair(im, lb), 12, 3, 5);
}

TEST(IdxTest, LoadsGzipPair) {
  TempDir d("idx");
  const auto im = d.write("im.gz", gzip_bytes(idx_images(12, 3, 5)));
  const auto lb = d.write("lb.gz", gzip_bytes(idx_labels(12)));
  expect_pair_matches_fixture(load_idx_pair(im, lb), 12, 3, 5);
}

TEST(IdxTest, GzipDetectedByContentNotName) {
  TempDir d("idx");
  const auto im = d.write("images-without-suffix", gzip_bytes(idx_images(4, 2, 2)));
  const auto lb = d.write("labels.gz", idx_labels(4));  // plain despite the name
  expect_pair_matches_fixture(load_idx_pair(im, lb), 4, 2, 2);
}

TEST(IdxTest, ConcatenatedGzipMembers) {
  TempDir d("idx");
  const Bytes whole = idx_images(6, 2, 3);
  const std::size_t half = whole.size() / 2;
  Bytes gz = gzip_bytes(Bytes(whole.begin(), whole.begin() + half));
  const Bytes second = gzip_bytes(Bytes(whole.begin() + half, whole.end()));
  gz.insert(gz.end(), second.begin(), second.end());
  EXPECT_EQ(read_maybe_gzip(d.write("im.gz", gz)), whole);
}

TEST(IdxTest, LimitKeepsFirstItems) {
  TempDir d("idx");
  const auto im = d.write("im", idx_images(12, 3, 5));
  const auto lb = d.write("lb", idx_labels(12));
  const ImageSet s = load_idx_pair(im, lb, 5);
  expect_pair_matches_fixture(s, 5, 3, 5);
  EXPECT_EQ(load_idx_pair(im, lb, 100).count, 12);  // limit above count keeps all
}

TEST(IdxTest, WrongMagicNamesFileAndBothValues) {
  TempDir d("idx");
  const auto im = d.write("train-images-idx3-ubyte", idx_images(3, 2, 2, 0x00000801));
  const auto lb = d.write("lb", idx_labels(3));
  expect_error([&] { load_idx_pair(im, lb); },
               {im, "bad magic number 0x00000801", "expected 0x00000803 (IDX images)"});
  const auto im_ok = d.write("im_ok", idx_images(3, 2, 2));
  const auto lb_bad = d.write("labels", idx_labels(3, 0x00000803));
  expect_error([&] { load_idx_pair(im_ok, lb_bad); },
               {lb_bad, "0x00000803", "expected 0x00000801 (IDX labels)"});
}

TEST(IdxTest, SwappedImagesAndLabels) {
  TempDir d("idx");
  const auto im = d.write("im", idx_images(3, 2, 2));
  const auto lb = d.write("lb", idx_labels(3));
  expect_error([&] { load_idx_pair(lb, im); }, {lb, "bad magic number", "IDX images"});
}

TEST(IdxTest, TruncatedImages) {
  TempDir d("idx");
  Bytes b = idx_images(10, 4, 4);
  b.resize(b.size() - 7);
  const auto im = d.write("im", b);
  const auto lb = d.write("lb", idx_labels(10));
  expect_error([&] { load_idx_pair(im, lb); }, {im, "truncated", "10 images of 4x4", "176 bytes"});
}

TEST(IdxTest, TruncatedHeader) {
  TempDir d("idx");
  const Bytes b = idx_images(1, 2, 2);
  const auto im = d.write("im", Bytes(b.begin(), b.begin() + 10));
  const auto lb = d.write("lb", idx_labels(1));
  expect_error([&] { load_idx_pair(im, lb); }, {im, "too short", "16 bytes"});
  const auto empty = d.write("empty", {});
  expect_error([&] { load_idx_pair(d.write("ok", b), empty); },
               {empty, "too short (0 bytes)", "IDX labels"});
}

TEST(IdxTest, HeaderCountLargerThanData) {
  TempDir d("idx");
  const auto im = d.write("im", idx_images(5, 2, 2, 0x00000803, /*header_count=*/500));
  const auto lb = d.write("lb", idx_labels(5));
  expect_error([&] { load_idx_pair(im, lb); }, {im, "truncated", "500 images"});
  Bytes labels = idx_labels(5);
  labels[7] = 50;  // header count 50, data 5
  const auto lb2 = d.write("lb2", labels);
  expect_error([&] { load_idx_pair(d.write("im5", idx_images(5, 2, 2)), lb2); },
               {lb2, "truncated", "50 labels"});
}

TEST(IdxTest, TrailingBytesRejected) {
  TempDir d("idx");
  Bytes b = idx_images(5, 2, 2);
  b.push_back(0);
  const auto im = d.write("im", b);
  expect_error([&] { load_idx_pair(im, d.write("lb", idx_labels(5))); },
               {im, "size mismatch", "5 images of 2x2"});
}

TEST(IdxTest, CountMismatchBetweenImagesAndLabels) {
  TempDir d("idx");
  const auto im = d.write("images", idx_images(6, 2, 2));
  const auto lb = d.write("labels", idx_labels(5));
  expect_error([&] { load_idx_pair(im, lb); }, {im, lb, "6 images", "5 labels"});
}

TEST(IdxTest, LabelOutOfRange) {
  TempDir d("idx");
  Bytes labels = idx_labels(5);
  labels[8 + 3] = 10;
  const auto lb = d.write("labels", labels);
  expect_error([&] { load_idx_pair(d.write("im", idx_images(5, 2, 2)), lb); },
               {lb, "label 10 at index 3", "0..9"});
}

TEST(IdxTest, BadDimensions) {
  TempDir d("idx");
  const auto zero = d.write("zero", idx_images(0, 0, 28));
  expect_error([&] { load_idx_pair(zero, d.write("lb", idx_labels(0))); },
               {zero, "bad image size 0x28"});
  const auto huge = d.write("huge", idx_images(0, 100000, 100000));
  expect_error([&] { load_idx_pair(huge, d.write("lb", idx_labels(0))); },
               {huge, "bad image size 100000x100000"});
  // A header promising 2^31−1 items of 4096x4096 must fail cleanly without allocating.
  const auto absurd = d.write("absurd", idx_images(0, 4096, 4096, 0x00000803, 0x7fffffff));
  expect_error([&] { load_idx_pair(absurd, d.write("lb", idx_labels(0))); },
               {absurd, "truncated"});
  const auto too_many = d.write("too-many", idx_images(0, 28, 28, 0x00000803, 0x80000000));
  expect_error([&] { load_idx_pair(too_many, d.write("lb", idx_labels(0))); },
               {too_many, "absurd image count"});
}

TEST(IdxTest, GzipGarbage) {
  TempDir d("idx");
  Bytes garbage = {0x1f, 0x8b};
  SplitMix64 rng(7);
  for (int i = 0; i < 200; ++i) garbage.push_back(static_cast<std::uint8_t>(rng.next()));
  const auto g = d.write("garbage.gz", garbage);
  expect_error([&] { read_maybe_gzip(g); }, {g, "corrupt gzip data"});
  expect_error([&] { read_maybe_gzip(d.write("magic-only.gz", {0x1f, 0x8b})); },
               {"magic-only.gz", "gzip"});
}

TEST(IdxTest, GzipTruncatedOrCorrupted) {
  TempDir d("idx");
  const Bytes gz = gzip_bytes(idx_images(20, 8, 8));
  const auto t = d.write("trunc.gz", Bytes(gz.begin(), gz.begin() + gz.size() / 2));
  expect_error([&] { read_maybe_gzip(t); }, {t, "truncated gzip data"});
  Bytes crc = gz;
  crc[crc.size() - 6] ^= 0xff;  // CRC-32 in the trailer
  const auto c = d.write("crc.gz", crc);
  expect_error([&] { read_maybe_gzip(c); }, {c, "corrupt gzip data"});
  Bytes trailing = gz;
  trailing.push_back(0x42);
  const auto tr = d.write("trailing.gz", trailing);
  expect_error([&] { read_maybe_gzip(tr); }, {tr, "trailing garbage"});
}

TEST(IdxTest, MissingFile) {
  TempDir d("idx");
  const std::string p = d.path() + "/no-such-file";
  expect_error([&] { read_maybe_gzip(p); }, {p, "cannot open"});
  expect_error([&] { load_idx_pair(p, p); }, {p});
  expect_error([&] { read_maybe_gzip(d.path()); }, {d.path(), "is a directory"});
}

TEST(IdxTest, FindIdxFile) {
  TempDir d("idx");
  expect_error([&] { find_idx_file(d.path(), "train-images-idx3-ubyte"); },
               {d.path(), "train-images-idx3-ubyte", ".gz"});
  d.write("train-images-idx3-ubyte.gz", {});
  EXPECT_EQ(find_idx_file(d.path(), "train-images-idx3-ubyte"),
            d.path() + "/train-images-idx3-ubyte.gz");
  d.write("train-images-idx3-ubyte", {});
  EXPECT_EQ(find_idx_file(d.path(), "train-images-idx3-ubyte"),
            d.path() + "/train-images-idx3-ubyte");
  expect_error([&] { find_idx_file(d.path() + "/nope", "x"); }, {"nope", "not found"});
}

TEST(IdxTest, LoadImageDataset) {
  TempDir d("idx");
  write_mnist_files(d, 30, 7, 4, 3);
  const ImageDataset ds = load_image_dataset(d.path(), 0, 5);
  expect_pair_matches_fixture(ds.train, 30, 4, 3);
  expect_pair_matches_fixture(ds.test, 5, 4, 3);
  d.write("t10k-images-idx3-ubyte", idx_images(7, 3, 4));
  expect_error([&] { load_image_dataset(d.path(), 0, 0); }, {"t10k-images", "3x4", "4x3"});
}

TEST(IdxTest, LoadsBundledSubset) {
  const ImageDataset ds = load_image_dataset(ZT_SOURCE_DIR "/data/mnist-subset", 0, 0);
  EXPECT_EQ(ds.train.count, 6000);
  EXPECT_EQ(ds.test.count, 1000);
  for (const ImageSet* s : {&ds.train, &ds.test}) {
    EXPECT_EQ(s->rows, 28);
    EXPECT_EQ(s->cols, 28);
    int per_class[10] = {};
    for (std::uint8_t l : s->labels) ++per_class[l];
    for (int c = 0; c < 10; ++c) EXPECT_GT(per_class[c], s->count / 20) << "class " << c;
  }
  // First training item of MNIST is a 5; first test item is a 7.
  EXPECT_EQ(ds.train.labels[0], 5);
  EXPECT_EQ(ds.test.labels[0], 7);
  const ImageDataset limited = load_image_dataset(ZT_SOURCE_DIR "/data/mnist-subset", 256, 100);
  EXPECT_EQ(limited.train.count, 256);
  EXPECT_EQ(limited.test.count, 100);
  EXPECT_TRUE(std::equal(limited.train.pixels.begin(), limited.train.pixels.end(),
                         ds.train.pixels.begin()));
}

// The full sets installed by scripts/get-data.sh; skipped when they are not installed.
TEST(IdxTest, LoadsFullSetsWhenInstalled) {
  int found = 0;
  for (const char* dir : {"/data/mnist", "/data/fashion-mnist"}) {
    const std::string root = std::string(ZT_SOURCE_DIR) + dir;
    if (!std::filesystem::is_directory(root)) continue;
    ++found;
    const ImageDataset ds = load_image_dataset(root, 0, 0);
    EXPECT_EQ(ds.train.count, 60000) << root;
    EXPECT_EQ(ds.test.count, 10000) << root;
    EXPECT_EQ(ds.train.rows, 28);
    EXPECT_EQ(ds.train.cols, 28);
  }
  if (found == 0) GTEST_SKIP() << "scripts/get-data.sh has not been run";
}

}  // namespace
}  // namespace zt::data
