#include "zotrain/data/samples.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <utility>

#include "zotrain/core/error.hpp"

namespace zt::data {

void MemorySamples::read(const std::int32_t* idx, int n, void* dst, std::uint8_t* labels) const {
  auto* out = static_cast<std::uint8_t*>(dst);
  for (int b = 0; b < n; ++b) {
    const auto s = static_cast<std::size_t>(idx[b]);
    ZT_CHECK(idx[b] >= 0 && idx[b] < count_);
    std::memcpy(out + static_cast<std::size_t>(b) * record_bytes_, records_ + s * record_bytes_,
                record_bytes_);
    labels[b] = labels_[s];
  }
}

RowsView::RowsView(std::shared_ptr<const Samples> base, std::vector<std::int32_t> rows)
    : base_(std::move(base)), rows_(std::move(rows)) {
  ZT_CHECK(base_ != nullptr);
  for (const std::int32_t r : rows_) ZT_CHECK(r >= 0 && r < base_->count());
}

void RowsView::read(const std::int32_t* idx, int n, void* dst, std::uint8_t* labels) const {
  // Batches are small (≤ a few hundred rows): translate them on the stack in pieces.
  constexpr int kPiece = 256;
  std::int32_t rows[kPiece];
  auto* out = static_cast<std::uint8_t*>(dst);
  for (int b = 0; b < n; b += kPiece) {
    const int m = std::min(kPiece, n - b);
    for (int k = 0; k < m; ++k) {
      ZT_CHECK(idx[b + k] >= 0 && idx[b + k] < count());
      rows[k] = rows_[static_cast<std::size_t>(idx[b + k])];
    }
    base_->read(rows, m, out + static_cast<std::size_t>(b) * record_bytes(), labels + b);
  }
}

std::shared_ptr<const Samples> rows_range(std::shared_ptr<const Samples> base, int begin,
                                          int end) {
  ZT_CHECK(0 <= begin && begin <= end && end <= base->count());
  if (begin == 0 && end == base->count()) return base;
  std::vector<std::int32_t> rows(static_cast<std::size_t>(end - begin));
  std::iota(rows.begin(), rows.end(), begin);
  return std::make_shared<RowsView>(std::move(base), std::move(rows));
}

}  // namespace zt::data
