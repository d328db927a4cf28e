// Loading a run's data set and wrapping it as batch sources (images or point clouds).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "zotrain/run/engine.hpp"
#include "zotrain/run/prefetch.hpp"
#include "zotrain/config/catalogue.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/data/batcher.hpp"
#include "zotrain/data/idx.hpp"
#include "zotrain/data/image_transforms.hpp"
#include "zotrain/data/modelnet40.hpp"
#include "zotrain/data/point_batcher.hpp"
#include "zotrain/data/samples.hpp"

namespace zt::run {
namespace {

class ImageSource final : public BatchSource {
 public:
  ImageSource(const data::ImageSplit& split, int batch, bool training, std::uint64_t seed,
              data::Normalisation norm, double rotate_degrees)
      : b_(split.samples, split.rows, split.cols, batch, training, training, seed, norm,
           rotate_degrees) {}
  int batches_per_epoch() const override { return b_.batches_per_epoch(); }
  void start_epoch(int epoch) override { b_.start_epoch(epoch); }
  std::size_t sample_floats() const override { return static_cast<std::size_t>(b_.sample_floats()); }
  int fill(int index, float* x, std::uint8_t* labels) override { return b_.fill(index, x, labels); }
  int fill_raw(int index, std::uint8_t* raw, std::uint8_t* labels) override {
    return b_.fill_raw(index, raw, labels);
  }

 private:
  data::Batcher b_;
};

class PointSource final : public BatchSource {
 public:
  PointSource(const data::PointSplit& split, int batch, int points, bool training,
              std::uint64_t seed, data::Augment augment)
      : b_(split.samples, split.stored_points, batch, points, training, training, seed, augment) {}
  int batches_per_epoch() const override { return b_.batches_per_epoch(); }
  void start_epoch(int epoch) override { b_.start_epoch(epoch); }
  std::size_t sample_floats() const override { return static_cast<std::size_t>(b_.sample_floats()); }
  int fill(int index, float* x, std::uint8_t* labels) override { return b_.fill(index, x, labels); }
  int fill_raw(int, std::uint8_t*, std::uint8_t*) override {
    throw Error("point clouds have no raw uint8 form");  // the int8 engine quantises fill()
  }

 private:
  data::PointBatcher b_;
};

// data.validation: the last n samples of `s` become a split of their own.
template <class Split>
Split split_off_tail(Split& s, std::int64_t n, const std::string& what, std::size_t* bytes) {
  const int count = s.samples->count();
  if (n >= count)
    throw Error("data.validation: " + std::to_string(n) + " would leave no training " + what +
                " of the " + std::to_string(count) + " there are");
  const int keep = count - static_cast<int>(n);
  Split tail = s;
  tail.samples = data::rows_range(s.samples, keep, count);
  s.samples = data::rows_range(s.samples, 0, keep);
  *bytes += tail.samples->resident_bytes() + s.samples->resident_bytes();
  return tail;
}

void check_batch(int count, int batch, const std::string& what, const std::string& root) {
  if (count < batch)
    throw Error("train.batch_size: " + std::to_string(batch) + " exceeds the " +
                std::to_string(count) + " training " + what + " in " + root);
}

}  // namespace

RunData load_run_data(const config::ExperimentConfig& cfg, const std::string& root, int batch,
                      std::size_t model_input_floats, std::uint64_t seed) {
  RunData r;
  // The loaders take 0 for "all".
  const int train_limit = static_cast<int>(cfg.data.train_limit.value_or(0));
  const int test_limit = static_cast<int>(cfg.data.test_limit.value_or(0));
  const config::DatasetInfo& info = config::dataset(cfg.data.dataset);
  if (info.input == config::InputKind::kPoints) {
    // Point clouds stay in their files; only labels and row tables are held (samples.hpp).
    data::PointFiles f = data::open_modelnet40(root, train_limit, test_limit);
    std::size_t bytes = f.train.samples->resident_bytes() + f.test.samples->resident_bytes();
    data::PointSplit val;
    if (cfg.data.validation) val = split_off_tail(f.train, *cfg.data.validation, "point clouds", &bytes);
    check_batch(f.train.samples->count(), batch, "point clouds", root);
    const int points = static_cast<int>(cfg.data.points);
    if (points > f.train.stored_points)
      throw Error("data.points: " + std::to_string(points) + " exceeds the " +
                  std::to_string(f.train.stored_points) + " points per sample stored in " + root);
    data::Augment aug;
    using config::Augment;
    const Augment a = cfg.data.augment;
    aug.rotate = a == Augment::kRotate || a == Augment::kRotateJitter;
    aug.jitter_sigma = a == Augment::kJitter || a == Augment::kRotateJitter ? 0.01f : 0.0f;
    r.train = std::make_unique<PointSource>(f.train, batch, points, true, seed, aug);
    r.test = std::make_unique<PointSource>(f.test, batch, points, false, 0, data::Augment{});
    if (cfg.data.validation)
      r.val = std::make_unique<PointSource>(val, batch, points, false, 0, data::Augment{});
    r.train_count = f.train.samples->count();
    r.test_count = f.test.samples->count();
    r.val_count = cfg.data.validation ? val.samples->count() : 0;
    // Each source reads a batch of stored clouds before choosing its points.
    r.bytes = bytes + (cfg.data.validation ? 3 : 2) * static_cast<std::size_t>(batch) *
                          f.train.samples->record_bytes();
  } else {
    // Images stay in their files; only labels and row tables are held (samples.hpp).
    data::ImageFiles f = data::open_image_dataset(root, train_limit, test_limit);
    std::size_t bytes = f.train.samples->resident_bytes() + f.test.samples->resident_bytes();
    const auto view = [&bytes](data::ImageSplit& s, std::vector<std::int32_t> rows) {
      auto v = std::make_shared<data::RowsView>(s.samples, std::move(rows));
      bytes += v->resident_bytes();
      s.samples = std::move(v);
    };
    if (cfg.data.subset) {
      const int n = static_cast<int>(*cfg.data.subset);
      // The test draw is independent of the training one (another stream of the same seed).
      if (n < f.train.samples->count())
        view(f.train, data::subset_rows(f.train.samples->count(), n, cfg.data.subset_seed));
      if (n < f.test.samples->count())
        view(f.test, data::subset_rows(f.test.samples->count(), n, ~cfg.data.subset_seed));
    }
    data::ImageSplit val;
    if (cfg.data.validation) val = split_off_tail(f.train, *cfg.data.validation, "images", &bytes);
    check_batch(f.train.samples->count(), batch, "images", root);
    if (static_cast<std::size_t>(f.train.rows * f.train.cols) != model_input_floats)
      throw Error(root + ": images are " + std::to_string(f.train.rows) + "x" +
                  std::to_string(f.train.cols) + ", the model expects " +
                  std::to_string(model_input_floats) + " pixels");
    const data::Normalisation norm{info.mean, info.std};
    const double deg = cfg.data.rotate_degrees;
    r.train = std::make_unique<ImageSource>(f.train, batch, true, seed, norm, deg);
    r.test = std::make_unique<ImageSource>(f.test, batch, false, 0, norm, deg);
    if (cfg.data.validation)
      r.val = std::make_unique<ImageSource>(val, batch, false, 0, norm, deg);
    r.train_count = f.train.samples->count();
    r.test_count = f.test.samples->count();
    r.val_count = cfg.data.validation ? val.samples->count() : 0;
    // Each source reads a batch of pixels before normalising them.
    r.bytes = bytes + (cfg.data.validation ? 3 : 2) * static_cast<std::size_t>(batch) *
                          f.train.samples->record_bytes();
  }
  if (cfg.data.prefetch) {
    const bool raw = info.input != config::InputKind::kPoints &&
                     cfg.model.precision == config::Precision::kInt8;
    for (std::unique_ptr<BatchSource>* s : {&r.train, &r.test, &r.val}) {
      if (!*s) continue;
      r.bytes += prefetch_bytes((*s)->sample_floats(), batch, raw);
      *s = prefetched(std::move(*s), batch);
    }
  }
  return r;
}

}  // namespace zt::run
