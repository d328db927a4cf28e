// The samples of one split, wherever they live: fixed-size records (an image's uint8 pixels, a
// point cloud's float32 coordinates) with a uint8 label each, read by index. The batchers read
// only the records of the batch they fill, so a split kept on disk (IdxImageFile, the HDF5 point
// files of modelnet40.hpp) costs memory for its labels and one batch, not for the whole set.
//
// read() may run on a background thread (the prefetcher, prefetch.hpp) while the main thread
// reads another split: every implementation is safe to read from several threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace zt::data {

class Samples {
 public:
  virtual ~Samples() = default;
  virtual int count() const = 0;
  virtual std::size_t record_bytes() const = 0;
  // Copies the records of samples idx[0..n) back to back into dst (n × record_bytes()) and
  // their labels into labels[0..n). Throws zt::Error naming the file on a read error.
  virtual void read(const std::int32_t* idx, int n, void* dst, std::uint8_t* labels) const = 0;
  // Bytes this split keeps in memory (records held there, labels, index tables).
  virtual std::size_t resident_bytes() const = 0;
};

// Records held by someone else in memory (an ImageSet's pixels, a PointCloudSet's points): a
// view, the owner must outlive it.
class MemorySamples final : public Samples {
 public:
  MemorySamples(const void* records, const std::uint8_t* labels, int count,
                std::size_t record_bytes)
      : records_(static_cast<const std::uint8_t*>(records)),
        labels_(labels),
        count_(count),
        record_bytes_(record_bytes) {}
  int count() const override { return count_; }
  std::size_t record_bytes() const override { return record_bytes_; }
  void read(const std::int32_t* idx, int n, void* dst, std::uint8_t* labels) const override;
  std::size_t resident_bytes() const override {
    return static_cast<std::size_t>(count_) * (record_bytes_ + 1);
  }

 private:
  const std::uint8_t* records_;
  const std::uint8_t* labels_;
  int count_;
  std::size_t record_bytes_;
};

// Some rows of another split, in a given order: a row limit, a seeded subset (data.subset), the
// training set without its held-out tail and that tail (data.validation).
class RowsView final : public Samples {
 public:
  RowsView(std::shared_ptr<const Samples> base, std::vector<std::int32_t> rows);
  int count() const override { return static_cast<int>(rows_.size()); }
  std::size_t record_bytes() const override { return base_->record_bytes(); }
  void read(const std::int32_t* idx, int n, void* dst, std::uint8_t* labels) const override;
  // Its row table only: views share their base, which is counted once, by its owner.
  std::size_t resident_bytes() const override { return rows_.size() * sizeof(std::int32_t); }
  const Samples& base() const { return *base_; }

 private:
  std::shared_ptr<const Samples> base_;
  std::vector<std::int32_t> rows_;
};

// Rows [begin, end) of `base` as a split of its own; the whole of it when that is all of it.
std::shared_ptr<const Samples> rows_range(std::shared_ptr<const Samples> base, int begin, int end);

}  // namespace zt::data
