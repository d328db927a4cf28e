// Loading a run's data set and wrapping it as batch sources (images or point clouds).
#include <memory>
#include <string>

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
    auto ds = std::make_shared<data::PointCloudDataset>(
        data::load_modelnet40(root, train_limit, test_limit));
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
    r.train_count = ds->train.count;
    r.test_count = ds->test.count;
    r.bytes = ds->bytes();
    r.storage = ds;
  } else {
    auto ds = std::make_shared<data::ImageDataset>(
        data::load_image_dataset(root, train_limit, test_limit));
    if (cfg.data.subset) {
      data::draw_subset(ds->train, static_cast<int>(*cfg.data.subset), cfg.data.subset_seed);
      // The test draw is independent of the training one (another stream of the same seed).
      data::draw_subset(ds->test, static_cast<int>(*cfg.data.subset), ~cfg.data.subset_seed);
    }
    if (cfg.data.rotate_degrees != 0.0) {
      data::rotate_images(ds->train, cfg.data.rotate_degrees);
      data::rotate_images(ds->test, cfg.data.rotate_degrees);
    }
    check_batch(ds->train.count, batch, "images", root);
    if (static_cast<std::size_t>(ds->train.rows * ds->train.cols) != model_input_floats)
      throw Error(root + ": images are " + std::to_string(ds->train.rows) + "x" +
                  std::to_string(ds->train.cols) + ", the model expects " +
                  std::to_string(model_input_floats) + " pixels");
    const data::Normalisation norm{info.mean, info.std};
    r.train = std::make_unique<ImageSource>(ds->train, batch, true, seed, norm);
    r.test = std::make_unique<ImageSource>(ds->test, batch, false, 0, norm);
    r.train_count = ds->train.count;
    r.test_count = ds->test.count;
    r.bytes = ds->train.pixels.size() + ds->train.labels.size() + ds->test.pixels.size() +
              ds->test.labels.size();
    r.storage = ds;
  }
  return r;
}

}  // namespace zt::train
