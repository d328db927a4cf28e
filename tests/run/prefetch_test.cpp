// The prefetching BatchSource: every batch it hands out (by view or by copy, FP32 or raw, in
// order or not) is the inner source's, and a handed-out view stays intact while the next batch
// is prepared in the other buffer.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

#include "zotrain/run/prefetch.hpp"

namespace zt::run {
namespace {

constexpr int kBatch = 3, kBatches = 5;
constexpr std::size_t kFloats = 7;

// Batch `index` of epoch e: x = e·1000 + index·10 + position, labels = index + sample.
float value(int epoch, int index, std::size_t k) {
  return static_cast<float>(epoch * 1000 + index * 10) + static_cast<float>(k);
}
// The same value as a raw byte (its low 8 bits) or as a float.
template <class T>
T as(float v) {
  if constexpr (std::is_same_v<T, std::uint8_t>) {
    return static_cast<std::uint8_t>(static_cast<std::uint32_t>(v) % 256U);
  } else {
    return v;
  }
}

class Counting final : public BatchSource {
 public:
  int batches_per_epoch() const override { return kBatches; }
  void start_epoch(int epoch) override { epoch_ = epoch; }
  std::size_t sample_floats() const override { return kFloats; }
  int fill(int index, float* x, std::uint8_t* labels) override {
    for (std::size_t k = 0; k < kFloats * kBatch; ++k) x[k] = value(epoch_, index, k);
    for (int s = 0; s < kBatch; ++s) labels[s] = static_cast<std::uint8_t>(index + s);
    return kBatch;
  }
  int fill_raw(int index, std::uint8_t* raw, std::uint8_t* labels) override {
    for (std::size_t k = 0; k < kFloats * kBatch; ++k)
      raw[k] = as<std::uint8_t>(value(epoch_, index, k));
    for (int s = 0; s < kBatch; ++s) labels[s] = static_cast<std::uint8_t>(index + s);
    return kBatch;
  }

 private:
  int epoch_ = 0;
};

template <class T>
void expect_batch(const BatchSource::View<T>& v, int epoch, int index) {
  ASSERT_EQ(v.n, kBatch);
  for (std::size_t k = 0; k < kFloats * kBatch; ++k)
    ASSERT_EQ(v.x[k], as<T>(value(epoch, index, k))) << "epoch " << epoch << " batch " << index;
  for (int s = 0; s < kBatch; ++s) ASSERT_EQ(v.labels[s], index + s);
}

TEST(Prefetch, ViewsAreTheInnerBatchesAndOutliveThePreparationOfTheNext) {
  auto src = prefetched(std::make_unique<Counting>(), kBatch);
  std::vector<float> x(kFloats * kBatch);
  std::vector<std::uint8_t> raw(kFloats * kBatch), labels(kBatch);
  for (int epoch = 0; epoch < 2; ++epoch) {
    src->start_epoch(epoch);
    for (int i = 0; i < kBatches; ++i) {
      const auto v = src->take(i, x.data(), labels.data());
      expect_batch(v, epoch, i);
      if (i > 0) {
        EXPECT_NE(v.x, x.data()) << "batch " << i << " was prefetched, not copied";
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // batch i + 1 is being filled
      expect_batch(v, epoch, i);
    }
  }
  src->start_epoch(2);
  for (int i : {0, 1, 3, 4, 2}) {  // out of order: read on demand where not prefetched
    const auto v = src->take_raw(i, raw.data(), labels.data());
    expect_batch(v, 2, i);
    const int n = src->fill(i == 4 ? 0 : i + 1, x.data(), labels.data());  // copies
    ASSERT_EQ(n, kBatch);
    expect_batch(BatchSource::View<float>{x.data(), labels.data(), n}, 2, i == 4 ? 0 : i + 1);
  }
}

}  // namespace
}  // namespace zt::run
