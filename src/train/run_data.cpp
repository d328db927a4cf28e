// Loading a run's data set and wrapping it as batch sources (images or point clouds).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine.hpp"
#include "zotrain/config/catalogue.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/data/batcher.hpp"
#include "zotrain/data/idx.hpp"
#include "zotrain/data/image_transforms.hpp"
#include "zotrain/data/modelnet40.hpp"
#include "zotrain/data/point_batcher.hpp"

namespace zt::train {
namespace {

class ImageSource final : public BatchSource {
 public:
  ImageSource(const data::ImageSet& set, int batch, bool training, std::uint64_t seed,
              data::Normalisation norm)
      : b_(set, batch, training, training, seed, norm) {}
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
  PointSource(const data::PointCloudSet& set, int batch, int points, bool training,
              std::uint64_t seed, data::Augment augment)
      : b_(set, batch, points, training, training, seed, augment) {}
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

// data.validation: moves the last n samples of `s` into a set of their own (images or point
// clouds: `data` is the member holding the samples' values, `per_sample` of them each).
template <class Set, class T>
Set split_off_tail(Set& s, std::vector<T> Set::*data, std::size_t per_sample, std::int64_t n,
                   const std::string& what) {
  if (n >= s.count)
    throw Error("data.validation: " + std::to_string(n) + " would leave no training " + what +
                " of the " + std::to_string(s.count) + " there are");
  const int keep = s.count - static_cast<int>(n);
  std::vector<T> values = std::move(s.*data);
  std::vector<std::uint8_t> labels = std::move(s.labels);
  Set tail = s;  // the shape fields; the vectors are empty now
  const auto cut = static_cast<std::ptrdiff_t>(static_cast<std::size_t>(keep) * per_sample);
  tail.*data = std::vector<T>(values.begin() + cut, values.end());
  tail.labels = std::vector<std::uint8_t>(labels.begin() + keep, labels.end());
  tail.count = static_cast<int>(n);
  values.resize(static_cast<std::size_t>(cut));
  labels.resize(static_cast<std::size_t>(keep));
  s.*data = std::move(values);
  s.labels = std::move(labels);
  s.count = keep;
  return tail;
}

template <class Dataset, class Set>
struct WithValidation {
  Dataset ds;
  Set val;
};

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
    auto store = std::make_shared<WithValidation<data::PointCloudDataset, data::PointCloudSet>>();
    data::PointCloudDataset* ds = &store->ds;
    *ds = data::load_modelnet40(root, train_limit, test_limit);
    if (cfg.data.validation)
      store->val = split_off_tail(ds->train, &data::PointCloudSet::points,
                                  static_cast<std::size_t>(ds->train.stored_points) * 3,
                                  *cfg.data.validation, "point clouds");
    check_batch(ds->train.count, batch, "point clouds", root);
    const int points = static_cast<int>(cfg.data.points);
    if (points > ds->train.stored_points)
      throw Error("data.points: " + std::to_string(points) + " exceeds the " +
                  std::to_string(ds->train.stored_points) + " points per sample stored in " + root);
    data::Augment aug;
    using config::Augment;
    const Augment a = cfg.data.augment;
    aug.rotate = a == Augment::kRotate || a == Augment::kRotateJitter;
    aug.jitter_sigma = a == Augment::kJitter || a == Augment::kRotateJitter ? 0.01f : 0.0f;
    r.train = std::make_unique<PointSource>(ds->train, batch, points, true, seed, aug);
    r.test = std::make_unique<PointSource>(ds->test, batch, points, false, 0, data::Augment{});
    if (cfg.data.validation)
      r.val = std::make_unique<PointSource>(store->val, batch, points, false, 0, data::Augment{});
    r.train_count = ds->train.count;
    r.test_count = ds->test.count;
    r.val_count = store->val.count;
    r.bytes = ds->bytes() + store->val.bytes();
    r.storage = store;
  } else {
    auto store = std::make_shared<WithValidation<data::ImageDataset, data::ImageSet>>();
    data::ImageDataset* ds = &store->ds;
    *ds = data::load_image_dataset(root, train_limit, test_limit);
    if (cfg.data.subset) {
      data::draw_subset(ds->train, static_cast<int>(*cfg.data.subset), cfg.data.subset_seed);
      // The test draw is independent of the training one (another stream of the same seed).
      data::draw_subset(ds->test, static_cast<int>(*cfg.data.subset), ~cfg.data.subset_seed);
    }
    if (cfg.data.rotate_degrees != 0.0) {
      data::rotate_images(ds->train, cfg.data.rotate_degrees);
      data::rotate_images(ds->test, cfg.data.rotate_degrees);
    }
    if (cfg.data.validation)
      store->val = split_off_tail(ds->train, &data::ImageSet::pixels,
                                  static_cast<std::size_t>(ds->train.rows * ds->train.cols),
                                  *cfg.data.validation, "images");
    check_batch(ds->train.count, batch, "images", root);
    if (static_cast<std::size_t>(ds->train.rows * ds->train.cols) != model_input_floats)
      throw Error(root + ": images are " + std::to_string(ds->train.rows) + "x" +
                  std::to_string(ds->train.cols) + ", the model expects " +
                  std::to_string(model_input_floats) + " pixels");
    const data::Normalisation norm{info.mean, info.std};
    r.train = std::make_unique<ImageSource>(ds->train, batch, true, seed, norm);
    r.test = std::make_unique<ImageSource>(ds->test, batch, false, 0, norm);
    if (cfg.data.validation)
      r.val = std::make_unique<ImageSource>(store->val, batch, false, 0, norm);
    r.train_count = ds->train.count;
    r.test_count = ds->test.count;
    r.val_count = store->val.count;
    r.bytes = 0;
    for (const data::ImageSet* s : {&ds->train, &ds->test, &store->val})
      r.bytes += s->pixels.size() + s->labels.size();
    r.storage = store;
  }
  return r;
}

}  // namespace zt::train
