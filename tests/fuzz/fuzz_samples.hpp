// Shared by the harnesses of readers with two ways in (a whole set in memory, a Samples read by
// batch): a batch read through the Samples, and the check that it is what the whole set holds.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "zotrain/data/samples.hpp"

namespace zt::fuzz {

// Records idx of a Samples as read by batch: record b (record_bytes() each) and its label.
struct SampleBatch {
  std::vector<std::int32_t> idx;
  std::vector<std::uint8_t> records, labels;
};

// Reads the last record of s, then its first `first` records (the last first, so the batch is out
// of order).
inline SampleBatch read_batch(const data::Samples& s, int first) {
  SampleBatch b;
  if (s.count() > 0) b.idx.push_back(s.count() - 1);
  for (int i = 0; i < std::min(s.count(), first); ++i) b.idx.push_back(i);
  const std::size_t per = s.record_bytes();
  b.records.resize(b.idx.size() * per);
  b.labels.resize(b.idx.size());
  s.read(b.idx.data(), static_cast<int>(b.idx.size()), b.records.data(), b.labels.data());
  return b;
}

// Expects record b of the batch to be record idx[b] of `all` (per bytes each) and its label
// labels[idx[b]]; `what` names the records ("pixels", "points").
inline void expect_batch_of(const SampleBatch& b, std::size_t per, const std::uint8_t* all,
                            const std::vector<std::uint8_t>& labels, const char* what) {
  const std::string same = std::string("the two readers must read the same ") + what;
  for (std::size_t k = 0; k < b.idx.size(); ++k) {
    const auto i = static_cast<std::size_t>(b.idx[k]);
    ZT_FUZZ_EXPECT(std::memcmp(b.records.data() + k * per, all + i * per, per) == 0, same.c_str());
    ZT_FUZZ_EXPECT(b.labels[k] == labels[i], "the two readers must read the same labels");
  }
}

}  // namespace zt::fuzz
