// Fuzz target: the IDX readers (data/idx.hpp), plain and gzip. Input: the images file, then
// optionally "ZTLABELS" and the labels file; without the separator the labels file is made to
// match the images header (magic, count, that many zero labels), so the images reader is reached
// whatever the input. Both readers run on the same two files: load_idx_pair (whole files in
// memory) and open_idx_pair (pread by batch, gzip inflated to a temporary file), and a batch is
// read. Each must give data or throw zt::Error, both must accept the same files, and the images
// and labels they read must be the same.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_samples.hpp"
#include "fuzz_support.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/data/idx.hpp"

namespace {

constexpr char kSeparator[] = "ZTLABELS";
constexpr std::size_t kMadeLabelsMax = 1 << 16;

std::vector<std::uint8_t> made_labels(const std::uint8_t* images, std::size_t size) {
  std::uint32_t count = 0;
  if (size >= 8) {
    count = (std::uint32_t{images[4]} << 24) | (std::uint32_t{images[5]} << 16) |
            (std::uint32_t{images[6]} << 8) | images[7];
  }
  const std::size_t n = std::min<std::size_t>(count, kMadeLabelsMax);
  std::vector<std::uint8_t> b(8 + n, 0);
  b[2] = 0x08;
  b[3] = 0x01;
  for (int i = 0; i < 4; ++i) b[4 + i] = static_cast<std::uint8_t>(count >> (24 - 8 * i));
  for (std::size_t i = 0; i < n; ++i) b[8 + i] = static_cast<std::uint8_t>(i % 10);
  return b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::uint8_t* end = data + size;
  const std::uint8_t* sep =
      std::search(data, end, kSeparator, kSeparator + sizeof kSeparator - 1);
  std::string images, labels;
  if (sep != end) {
    images = zt::fuzz::write_input("images", data, static_cast<std::size_t>(sep - data));
    const std::uint8_t* l = sep + sizeof kSeparator - 1;
    labels = zt::fuzz::write_input("labels", l, static_cast<std::size_t>(end - l));
  } else {
    images = zt::fuzz::write_input("images", data, size);
    const std::vector<std::uint8_t> made = made_labels(data, size);
    labels = zt::fuzz::write_input("labels", made.data(), made.size());
  }

  zt::data::ImageSet whole;
  bool loaded = false;
  try {
    whole = zt::data::load_idx_pair(images, labels);
    loaded = true;
  } catch (const zt::Error&) {
  }
  bool opened = false;
  try {
    const zt::data::ImageSplit split = zt::data::open_idx_pair(images, labels);
    opened = true;
    const zt::data::Samples& s = *split.samples;
    const std::size_t per = s.record_bytes();
    ZT_FUZZ_EXPECT(per == static_cast<std::size_t>(split.rows) * split.cols, "record size");
    // A batch: the first few images and the last one, the last first.
    const zt::fuzz::SampleBatch batch = zt::fuzz::read_batch(s, 7);
    if (loaded) {
      ZT_FUZZ_EXPECT(whole.count == s.count() && whole.rows == split.rows &&
                         whole.cols == split.cols,
                     "load_idx_pair and open_idx_pair must agree on the header");
      zt::fuzz::expect_batch_of(batch, per, whole.pixels.data(), whole.labels, "pixels");
    }
  } catch (const zt::Error&) {
  }
  ZT_FUZZ_EXPECT(loaded == opened, "load_idx_pair and open_idx_pair must accept the same files");
  // A limit keeps the first images only.
  try {
    const zt::data::ImageSet first = zt::data::load_idx_pair(images, labels, 1);
    ZT_FUZZ_EXPECT(first.count <= 1 && first.labels.size() == static_cast<std::size_t>(first.count),
                   "limit 1 keeps at most one image");
  } catch (const zt::Error&) {
  }
  return 0;
}
