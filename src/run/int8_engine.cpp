// The int8 engine: Int8Trainer on an Int8Net (docs/design.md §5–6). The training step itself is
// integer-only code (Int8Trainer, kernels); this file converts the config's schedules to
// integers, reports float losses and compares the integer sign with the float one.
#include <cmath>
#include <cstring>
#include <string>

#include "zotrain/run/engine.hpp"
#include "data_parallel.hpp"
#include "zotrain/config/catalogue.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/train/int8_zo.hpp"
#include "zotrain/kernels/quant.hpp"
#include "zotrain/nn/architectures.hpp"
#include "zotrain/nn/int8_setup.hpp"
#include "zotrain/nn/lenet5.hpp"
#include "zotrain/train/int8_float.hpp"
#include "zotrain/train/int8_trainer.hpp"
#include "zotrain/train/optimizer.hpp"

namespace zt::run {
using train::decayed_lr;
using train::int8_correct;
using train::int8_layerwise_step;
using train::int8_loss_sum;
using train::int8_step;
using train::Int8Hyper;
using train::Int8Logits;
using train::Int8StepResult;
using train::Int8Trainer;
using train::Int8TrainerOptions;
using train::Int8SignRule;
using train::kDefaultInt8PmtLrElastic;
using train::kDefaultInt8PmtLrFullZo;
using train::kDefaultInt8PmtLrNodes;
using train::make_estimator;
using train::sign_source;
using train::ZoEstimator;
namespace {

using nlohmann::json;

class Int8Engine final : public Engine {
 public:
  Int8Engine(const config::ExperimentConfig& cfg, int batch, int threads, kernels::Isa isa,
             Ranks* ranks)
      : cfg_(cfg), ranks_(ranks != nullptr ? *ranks : single_rank()), batch_(batch), fp32_(nn::make_model(cfg.model.arch, kernels::Isa::kReference, static_cast<int>(cfg.data.points))) {
    net_ = nn::make_int8_net(*fp32_, isa, cfg.int8.batchnorm);
    macs_ = fp32_->forward_macs_per_sample();
    for (int i = 0; i < fp32_->size(); ++i) layer_macs_.push_back(fp32_->layer(i).forward_macs());
    for (const auto& list : {fp32_->params(), fp32_->buffers()})
      for (const nn::ParamTensor* p : list) fp32_names_.push_back(p->name);
    fp32_.reset();  // only its layer sequence (and its tensors' names) was needed
    c_ = config::resolve_partition(cfg.method, net_->num_parametric());
    nn::init_niti(*net_, cfg.seed);
    Int8TrainerOptions o;
    o.isa = isa;
    o.partition = c_;
    o.batch_size = batch;
    o.threads = threads;
    layerwise_ = cfg.zo.estimator == config::Estimator::kLayerwise;
    o.layerwise = layerwise_;
    o.signs = sign_source(cfg.zo.perturbation);
    o.node_perturbation = layerwise_ && cfg.zo.node_perturbation;
    o.queries = static_cast<int>(cfg.zo.queries);
    o.cache_direction = cfg.zo.cache_direction && !layerwise_;  // layerwise: perturb_block
    check_data_parallel(cfg, ranks_, batch, train::kShardChunk);
    o.ranks = &ranks_;
    trainer_ = std::make_unique<Int8Trainer>(*net_, o);
    estimator_ = make_estimator(cfg.zo.estimator, static_cast<int>(cfg.zo.queries));
    sign_.kind = cfg.int8.sign;
    b_bp_ = config::resolve_b_bp(cfg, c_);
    p_zero_ = config::resolve_p_zero(cfg);
    const std::size_t in = net_->input_shape().numel() * static_cast<std::size_t>(batch);
    points_ = config::dataset(cfg.data.dataset).input == config::InputKind::kPoints;
    check_fits_in_memory(trainer_->planned_bytes() + in * ((points_ ? sizeof(float) : 1) + 1),
                         "the memory plan with its input batch");
    (points_ ? coords_.resize(in) : pixels_.resize(in));
    if (!points_) pixel_quant_ = pixel_quant(cfg);
    x8_.resize(in);
    labels_.resize(static_cast<std::size_t>(batch));
  }

  int partition() const override { return c_; }
  int sharded_layers() const override { return trainer_->shard_until(); }
  int num_parametric() const override { return net_->num_parametric(); }
  std::size_t params_total() const override { return net_->num_weights(); }
  std::size_t params_zo() const override { return trainer_->zo_weights(); }
  std::size_t params_bp() const override { return trainer_->bp_weights(); }
  std::size_t forward_macs_per_sample() const override { return macs_; }
  std::size_t input_floats() const override { return net_->input_shape().numel(); }

  std::vector<LayerRow> layers() const override {
    std::vector<LayerRow> rows;
    const nn::NetworkDesc net = net_->describe();
    const int seg = net.bp_segment_start(c_);
    for (int i = 0; i < net.size(); ++i) {
      const nn::LayerInfo& l = net.layers[static_cast<std::size_t>(i)];
      // The int8 network has the FP32 model's layer sequence (nn::make_int8_net).
      const std::size_t macs = layer_macs_.size() == net.layers.size() ? layer_macs_[static_cast<std::size_t>(i)] : 0;
      rows.push_back({l.name, std::string(nn::op_name(l.desc.op)) + " (int8)", l.out.str(),
                      l.params, i < seg, macs});
    }
    return rows;
  }

  telemetry::PaperMemory paper_memory() const override {
    return telemetry::paper_memory(net_->describe().footprint(), batch_, c_, false,
                                   telemetry::Precision::kInt8);
  }
  std::size_t planned_bytes() const override {
    return trainer_->planned_bytes() + pixels_.size() + coords_.size() * sizeof(float) +
           x8_.size() + labels_.size();
  }
  std::vector<std::pair<std::string, std::size_t>> planned_buffers() const override {
    std::vector<std::pair<std::string, std::size_t>> r;
    for (const auto& e : trainer_->arena().entries()) r.emplace_back(e.name, e.bytes);
    return r;
  }
  json hyperparameters() const override {
    if (layerwise_) return {{"learning_rates", {{"zo", lr_base()}}}};
    return {{"int8", {{"r_max", cfg_.int8.r_max}, {"sign", config::name(cfg_.int8.sign)}}}};
  }
  void write_effective(config::ExperimentConfig& cfg) const override {
    cfg.train.batch_size = batch_;
    cfg.int8.b_bp = b_bp_;
    cfg.int8.p_zero = p_zero_;
    if (layerwise_) cfg.optimizer.lr = lr_base();
  }

  json begin_epoch(std::int64_t epoch) override {
    const double p_zero = p_zero_.at(epoch);
    h_.r_max = static_cast<int>(cfg_.int8.r_max);
    h_.b_zo = static_cast<int>(cfg_.int8.b_zo.at(epoch));
    h_.b_bp = static_cast<int>(b_bp_.at(epoch));
    h_.zero_threshold = static_cast<std::uint64_t>(std::llround(std::ldexp(p_zero, 32)));
    sign_.dead_zone = cfg_.int8.dead_zone.at(epoch);
    if (layerwise_) {
      lr_ = decayed_lr(lr_base(), cfg_.optimizer.decay.factor, cfg_.optimizer.decay.every_epochs,
                       epoch);
      return {{"lr", lr_}, {"b_bp", h_.b_bp}};
    }
    json hyper = {{"r_max", h_.r_max}, {"b_zo", h_.b_zo}, {"b_bp", h_.b_bp}, {"p_zero", p_zero}};
    if (sign_.dead_zone > 0) hyper["dead_zone"] = sign_.dead_zone;
    return hyper;
  }

  EngineStep step(BatchSource& batcher, int index, std::uint64_t step_seed,
                  std::uint64_t /*step_number*/, telemetry::PhaseTimes& times) override {
    int n;
    {
      telemetry::ScopedPhase t(times, telemetry::Phase::kData);
      n = load_input(batcher, index);
    }
    mpi_ns_ = ranks_.stats().ns;  // the collectives between steps are not this step's
    EngineStep r;
    r.n = n;
    if (!layerwise_) {
      step_sign(r, n, step_seed, times);
      return r;
    }
    // Poor Man's Training: the loss and accuracy of the clean pass (Full BP: of its one pass).
    const int classes = net_->num_classes();
    const Int8StepResult s = int8_layerwise_step(*trainer_, *estimator_, x8_.data(), x_exp_, n,
                                                 labels_.data(), classes, step_seed, h_, lr_);
    add_phase_times(times);
    const bool clean = s.correct >= 0;
    const Int8Logits last = trainer_->logits_minus();
    r.loss = clean ? s.loss : int8_loss_sum(last, labels_.data(), n, classes) / n;
    r.correct = clean ? s.correct : int8_correct(last, labels_.data(), n, classes);
    return r;
  }

  // ElasticZO-INT8's step: the sign of the estimate scales the update.
  void step_sign(EngineStep& r, int n, std::uint64_t step_seed, telemetry::PhaseTimes& times) {
    const int classes = net_->num_classes();
    const bool zo = trainer_->zo_weights() > 0;
    // The step's sign is sign_'s; the other one is computed only to log their agreement.
    const Int8StepResult s =
        int8_step(*trainer_, *estimator_, x8_.data(), x_exp_, n, labels_.data(), classes,
                  step_seed, h_, sign_);
    if (zo) {
      r.sign_agree = s.sign_agree ? 1 : 0;
      r.sign_agree_eq12 = s.sign_agree_eq12 ? 1 : 0;
      r.g = s.g;
    }
    add_phase_times(times);
    // Reported loss: of the last pass (Full BP) or the mean of both passes (ZO), as in FP32.
    double loss = int8_loss_sum(trainer_->logits_minus(), labels_.data(), n, classes);
    if (zo) loss = 0.5 * (loss + int8_loss_sum(trainer_->logits_plus(), labels_.data(), n, classes));
    r.loss = loss / n;
    r.correct = int8_correct(trainer_->logits_minus(), labels_.data(), n, classes);
  }

  // The trainer's phase times since the last call, with the collectives' time (inside its
  // forward passes) as MPI.
  void add_phase_times(telemetry::PhaseTimes& times) {
    const auto ns = trainer_->take_phase_ns();
    for (int p = 0; p < telemetry::kNumPhases; ++p)
      times.add(static_cast<telemetry::Phase>(p),
                static_cast<double>(ns[static_cast<std::size_t>(p)]) * 1e-9);
    carve_mpi_time(times, ranks_.stats().ns - mpi_ns_);
    mpi_ns_ = ranks_.stats().ns;
  }

  // Poor Man's Training's global η: optimizer.lr, or the int8 default (docs/guide/defaults.md).
  double lr_base() const {
    if (cfg_.optimizer.lr) return *cfg_.optimizer.lr;
    if (cfg_.zo.node_perturbation) return kDefaultInt8PmtLrNodes;
    return c_ == net_->num_parametric() ? kDefaultInt8PmtLrFullZo : kDefaultInt8PmtLrElastic;
  }

  EvalResult evaluate(BatchSource& b) override {
    b.start_epoch(0);
    double loss = 0;
    std::int64_t correct = 0, total = 0;
    const int classes = net_->num_classes();
    for (int i = 0; i < b.batches_per_epoch(); ++i) {
      const int n = load_input(b, i);
      const Int8Logits lg = trainer_->infer(x8_.data(), x_exp_, n);
      loss += int8_loss_sum(lg, labels_.data(), n, classes);
      correct += int8_correct(lg, labels_.data(), n, classes);
      total += n;
    }
    trainer_->take_phase_ns();
    if (total == 0) return {};
    return {loss / static_cast<double>(total),
            100.0 * static_cast<double>(correct) / static_cast<double>(total)};
  }

  // Integer weights and exponents only: nothing can be non-finite.
  NonFinite check_finite() override { return {}; }

  void save(TensorFile& f) const override {
    for (int i = 0; i < net_->size(); ++i) {
      const nn::Int8Layer& l = net_->layer(i);
      if (!l.parametric()) continue;
      StoredTensor t{"I8", {}, {}};
      for (int d : l.weight_shape) t.shape.push_back(d);
      const auto* w = reinterpret_cast<const std::uint8_t*>(net_->weights() + l.weight_offset);
      t.bytes.assign(w, w + l.weight_count);
      f.tensors[l.name + ".weight"] = std::move(t);
      StoredTensor e{"I32", {1}, std::vector<std::uint8_t>(4)};
      std::memcpy(e.bytes.data(), &l.exponent, 4);
      f.tensors[l.name + ".weight.exponent"] = std::move(e);
    }
  }

  void load(const TensorFile& f, const std::string& path) override {
    load_int8(f, path);
    refuse_unknown_tensors(f, int8_names(), std::string(config::name(cfg_.model.arch)) + " int8",
                           path);
  }

  void init_from(const TensorFile& f, const std::string& path) override {
    // An FP32 checkpoint (any parametric weight F32): every weight quantised, the rest dropped.
    bool fp32 = false;
    for (int i = 0; i < net_->size(); ++i) {
      const nn::Int8Layer& l = net_->layer(i);
      auto it = f.tensors.find(l.name + ".weight");
      fp32 = fp32 || (l.parametric() && it != f.tensors.end() && it->second.dtype == "F32");
    }
    for (int i = 0; fp32 && i < net_->size(); ++i) {
      const nn::Int8Layer& l = net_->layer(i);
      if (!l.parametric()) continue;
      const StoredTensor& t = checkpoint_tensor(f, l.name + ".weight", "F32", l.weight_shape, path);
      std::vector<float> w(l.weight_count);
      std::memcpy(w.data(), t.bytes.data(), t.bytes.size());
      nn::quantize_weights(*net_, i, w.data());
    }
    if (!fp32) load_int8(f, path);
    // Nothing else: the names of an int8 checkpoint of this model and of an FP32 one.
    std::vector<std::string> known = int8_names();
    known.insert(known.end(), fp32_names_.begin(), fp32_names_.end());
    refuse_unknown_tensors(f, known, std::string(config::name(cfg_.model.arch)) + " int8 or fp32",
                           path);
  }

 private:
  // The int8.input table: the data set's mean and std, from the catalogue, in units of 10^−4.
  static kernels::PixelQuant pixel_quant(const config::ExperimentConfig& cfg) {
    if (cfg.int8.input == config::Int8Input::kShift) return kernels::pixel_quant_shift();
    const config::DatasetInfo& d = config::dataset(cfg.data.dataset);
    return kernels::pixel_quant_normalised(static_cast<std::int32_t>(std::lround(d.mean * 1e4)),
                                           static_cast<std::int32_t>(std::lround(d.std * 1e4)));
  }

  // Batch `index` of `src` as int8 input in x8_ (exponent x_exp_): images by the int8.input
  // table (docs/design.md §5.6); point coordinates (inside the unit sphere, jitter ≤ 0.05) round(x ·
  // 2^6) clamped to ±127 with exponent −6, fixed, so no statistic of the batch is needed.
  int load_input(BatchSource& src, int index) {
    int n;
    const std::uint8_t* labels;
    if (points_) {
      const BatchSource::View<float> b = src.take(index, coords_.data(), labels_.data());
      n = b.n, labels = b.labels;
      const std::size_t count = static_cast<std::size_t>(n) * net_->input_shape().numel();
      for (std::size_t i = 0; i < count; ++i)
        x8_[i] = kernels::clamp_s8(std::llround(static_cast<double>(b.x[i]) * 64.0));
      x_exp_ = -6;
    } else {
      const BatchSource::View<std::uint8_t> b = src.take_raw(index, pixels_.data(), labels_.data());
      n = b.n, labels = b.labels;
      kernels::quantize_pixels_s8(b.x, static_cast<std::size_t>(n) * net_->input_shape().numel(),
                                  pixel_quant_, x8_.data());
      x_exp_ = pixel_quant_.exponent;
    }
    if (labels != labels_.data()) std::memcpy(labels_.data(), labels, static_cast<std::size_t>(n));
    return n;
  }

  void load_int8(const TensorFile& f, const std::string& path) {
    for (int i = 0; i < net_->size(); ++i) {
      nn::Int8Layer& l = net_->layer(i);
      if (!l.parametric()) continue;
      const StoredTensor& t = checkpoint_tensor(f, l.name + ".weight", "I8", l.weight_shape, path);
      l.exponent = checkpoint_exponent(f, l.name + ".weight.exponent", path);
      std::memcpy(net_->weights_of(i), t.bytes.data(), t.bytes.size());
    }
  }

  // The tensors of an int8 checkpoint of this network.
  std::vector<std::string> int8_names() const {
    std::vector<std::string> names;
    for (int i = 0; i < net_->size(); ++i)
      if (net_->layer(i).parametric()) {
        names.push_back(net_->layer(i).name + ".weight");
        names.push_back(net_->layer(i).name + ".weight.exponent");
      }
    return names;
  }

  config::ExperimentConfig cfg_;
  Ranks& ranks_;
  int batch_, c_ = 0;
  std::vector<std::size_t> layer_macs_;  // the FP32 model's, per layer
  std::int64_t mpi_ns_ = 0;  // the ranks' collective time at the step's start or last add_phase_times
  std::unique_ptr<nn::Model> fp32_;  // the layer sequence the int8 network mirrors
  std::vector<std::string> fp32_names_;  // its parameters and buffers (--init-from an FP32 file)
  std::size_t macs_ = 0;
  std::unique_ptr<nn::Int8Net> net_;
  std::unique_ptr<Int8Trainer> trainer_;
  std::unique_ptr<ZoEstimator> estimator_;
  Int8SignRule sign_;
  config::Schedule b_bp_, p_zero_;
  Int8Hyper h_;
  bool layerwise_ = false;  // Poor Man's Training (zo.estimator layerwise)
  double lr_ = 0;           // its η this epoch
  bool points_ = false;
  std::vector<std::uint8_t> pixels_, labels_;
  std::vector<float> coords_;
  std::vector<std::int8_t> x8_;
  kernels::PixelQuant pixel_quant_;
  int x_exp_ = 0;
};

}  // namespace

std::unique_ptr<Engine> make_int8_engine(const config::ExperimentConfig& cfg, int batch,
                                         int threads, kernels::Isa isa, Ranks* ranks) {
  return std::make_unique<Int8Engine>(cfg, batch, threads, isa, ranks);
}

}  // namespace zt::run
