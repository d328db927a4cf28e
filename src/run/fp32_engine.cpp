// The FP32 engine: Fp32Trainer on a Model (docs/design.md §4).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "zotrain/run/engine.hpp"
#include "data_parallel.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/core/seeds.hpp"
#include "zotrain/nn/architectures.hpp"
#include "zotrain/nn/int8_setup.hpp"
#include "zotrain/nn/lenet5.hpp"
#include "zotrain/train/fp32_trainer.hpp"
#include "zotrain/train/optimizer.hpp"

namespace zt::run {
using train::decayed_lr;
using train::perturb_source;
using train::EvalStats;
using train::Fp32Trainer;
using train::Fp32TrainerOptions;
using train::LearningRates;
using train::resolve_learning_rates;
using train::StepStats;
using config::OptimizerKind;
namespace {

using nlohmann::json;

std::vector<std::uint8_t> float_bytes(const float* p, std::size_t n) {
  std::vector<std::uint8_t> b(n * sizeof(float));
  std::memcpy(b.data(), p, b.size());
  return b;
}

// BatchNorm's running variance: its values are ≥ 0 as well as finite.
bool is_variance(const std::string& name) { return name.ends_with(".running_var"); }

class Fp32Engine final : public Engine {
 public:
  Fp32Engine(const config::ExperimentConfig& cfg, int batch, int threads, kernels::Isa isa,
             Ranks* ranks)
      : cfg_(cfg), ranks_(ranks != nullptr ? *ranks : single_rank()), batch_(batch), model_(nn::make_model(cfg.model.arch, isa, static_cast<int>(cfg.data.points))) {
    (void)threads;  // the FP32 trainer sizes per-thread scratch itself
    const int L = model_->num_parametric();
    c_ = config::resolve_partition(cfg.method, L);
    Fp32TrainerOptions o;
    o.isa = isa;
    o.partition = c_;
    o.batch_size = batch;
    o.eps = static_cast<float>(cfg.zo.eps);
    o.grad_clip = static_cast<float>(cfg.zo.grad_clip);
    o.estimator = cfg.zo.estimator;
    o.queries = static_cast<int>(cfg.zo.queries);
    o.perturbation = perturb_source(cfg.zo.perturbation);
    o.batched = cfg.zo.batched;
    o.cache_direction = cfg.zo.cache_direction;
    o.defer_zo_update = o.cache_direction;  // save() syncs, load() and init_from() discard
    o.node_perturbation = cfg.zo.node_perturbation;
    o.pezo = {static_cast<std::size_t>(cfg.zo.pool_size), cfg.zo.pezo_pow2,
              seeds::pezo_pool(cfg.seed), static_cast<int>(cfg.zo.rngs),
              static_cast<int>(cfg.zo.rng_bits)};
    o.pezo.stream_offsets = cfg.zo.pezo_offset == config::PezoOffset::kStream;
    o.optimizer = cfg.optimizer.name;
    o.bp_activations = cfg.method.bp_activations;
    o.plan = cfg.train.memory_plan;
    check_data_parallel(cfg, ranks_, batch, train::kForwardChunk);
    o.ranks = &ranks_;
    lrs_ = resolve_learning_rates(cfg.optimizer.lr, cfg.optimizer.bp_lr, o.optimizer);
    model_->init(cfg.seed);
    trainer_ = std::make_unique<Fp32Trainer>(*model_, o);
    if (o.pezo.stream_offsets && o.perturbation == kernels::PerturbSource::kPezoPool &&
        trainer_->zo_params() > 0) {
      const std::uint64_t windows = kernels::pezo_stream_windows(o.pezo.size, trainer_->zo_params());
      if (windows < 1000) {
        spdlog::warn("zo.pezo_offset stream: the pool of {} repeats its windows after {} "
                     "perturbations (N / gcd(D, N), D = {} ZO weights); a prime zo.pool_size "
                     "such as 4093 or zo.pezo_offset seeded avoids that",
                     o.pezo.size, windows, trainer_->zo_params());
      }
    }
    check_fits_in_memory(trainer_->planned_bytes() + model_->input_floats() * sizeof(float) *
                                                         static_cast<std::size_t>(batch),
                         "the memory plan with its input batch");
    x_.resize(model_->input_floats() * static_cast<std::size_t>(batch));
    y_.resize(static_cast<std::size_t>(batch));
    const int seg = model_->bp_segment_start(c_);
    for (int i = 0; i < model_->size(); ++i)
      for (const auto& list : {model_->layer(i).params(), model_->layer(i).buffers()})
        for (nn::ParamTensor* p : list) checked_.push_back({p->data, p->size(), p->name.c_str(), i < seg});
    if (trainer_->adam_m() != nullptr)
      for (const char* name : {"optimizer.adam.m", "optimizer.adam.v"})
        checked_.push_back({std::strcmp(name, "optimizer.adam.m") == 0 ? trainer_->adam_m() : trainer_->adam_v(),
                            trainer_->bp_params(), name, false});
  }

  int partition() const override { return c_; }
  int sharded_layers() const override { return trainer_->shard_until(); }
  int num_parametric() const override { return model_->num_parametric(); }
  std::size_t params_total() const override { return model_->num_params(); }
  std::size_t params_zo() const override { return trainer_->zo_params(); }
  std::size_t params_bp() const override { return trainer_->bp_params(); }
  std::size_t forward_macs_per_sample() const override { return model_->forward_macs_per_sample(); }
  std::size_t input_floats() const override { return model_->input_floats(); }

  std::vector<LayerRow> layers() const override {
    std::vector<LayerRow> rows;
    const int seg = model_->bp_segment_start(c_);
    for (int i = 0; i < model_->size(); ++i) {
      nn::Layer& l = model_->layer(i);
      std::size_t np = 0;
      for (auto* p : l.params()) np += p->size();
      rows.push_back({l.name(), l.kind(), model_->output_shape(i).str(), np, i < seg, l.forward_macs()});
    }
    return rows;
  }

  telemetry::PaperMemory paper_memory() const override {
    const bool adam = trainer_->options().optimizer == OptimizerKind::kAdam;
    return telemetry::paper_memory(model_->describe().footprint(), batch_, c_,
                                   adam && c_ < model_->num_parametric(),
                                   telemetry::Precision::kFp32);
  }
  std::size_t planned_bytes() const override {
    // The trainer's plan plus the FP32 batch buffer and its labels.
    return trainer_->planned_bytes() + x_.size() * sizeof(float) + y_.size();
  }
  std::vector<std::pair<std::string, std::size_t>> planned_buffers() const override {
    std::vector<std::pair<std::string, std::size_t>> r;
    for (const auto& e : trainer_->arena().entries()) r.emplace_back(e.name, e.bytes);
    return r;
  }
  json hyperparameters() const override { return {{"learning_rates", {{"zo", lrs_.zo}, {"bp", lrs_.bp}}}}; }
  void write_effective(config::ExperimentConfig& cfg) const override {
    cfg.optimizer.lr = lrs_.zo;
    cfg.optimizer.bp_lr = lrs_.bp;
    cfg.train.batch_size = batch_;
  }

  json begin_epoch(std::int64_t epoch) override {
    lr_ = decayed_lr(lrs_.zo, cfg_.optimizer.decay.factor, cfg_.optimizer.decay.every_epochs, epoch);
    bp_lr_ = decayed_lr(lrs_.bp, cfg_.optimizer.decay.factor, cfg_.optimizer.decay.every_epochs, epoch);
    return {{"lr", lr_}, {"bp_lr", bp_lr_}};
  }

  EngineStep step(BatchSource& batcher, int index, std::uint64_t step_seed,
                  std::uint64_t step_number, telemetry::PhaseTimes& times) override {
    BatchSource::View<float> b;
    {
      telemetry::ScopedPhase t(times, telemetry::Phase::kData);
      b = batcher.take(index, x_.data(), y_.data());
    }
    trainer_->set_step_number(step_number);
    const std::int64_t mpi_ns = ranks_.stats().ns;
    const StepStats st = trainer_->step(b.x, b.labels, b.n, step_seed, static_cast<float>(lr_),
                                        static_cast<float>(bp_lr_), times);
    carve_mpi_time(times, ranks_.stats().ns - mpi_ns);
    EngineStep r;
    r.loss = st.loss, r.correct = st.correct, r.n = b.n, r.g = st.g, r.clipped = st.clipped;
    r.nonfinite = find_nonfinite();
    return r;
  }

  NonFinite check_finite() override {
    trainer_->sync_weights();
    return find_nonfinite();
  }

  EvalResult evaluate(BatchSource& b) override {
    b.start_epoch(0);
    double loss = 0;
    std::int64_t correct = 0, total = 0;
    for (int i = 0; i < b.batches_per_epoch(); ++i) {
      const int n = b.fill(i, x_.data(), y_.data());
      const EvalStats e = trainer_->evaluate(x_.data(), y_.data(), n);
      loss += e.loss_sum;
      correct += e.correct;
      total += n;
    }
    if (total == 0) return {};
    return {loss / static_cast<double>(total),
            100.0 * static_cast<double>(correct) / static_cast<double>(total)};
  }

  void save(TensorFile& f) const override {
    trainer_->sync_weights();  // a deferred ZO update applied: the parameters as of this step
    // Parameters and buffers (BatchNorm running statistics).
    for (const auto& list : {model_->params(), model_->buffers()})
      for (nn::ParamTensor* p : list) {
        StoredTensor t{"F32", {}, float_bytes(p->data, p->size())};
        for (int d : p->shape) t.shape.push_back(d);
        f.tensors[p->name] = std::move(t);
      }
    if (trainer_->adam_m() != nullptr) {
      const auto n = static_cast<std::int64_t>(trainer_->bp_params());
      f.tensors["optimizer.adam.m"] = {"F32", {n}, float_bytes(trainer_->adam_m(), trainer_->bp_params())};
      f.tensors["optimizer.adam.v"] = {"F32", {n}, float_bytes(trainer_->adam_v(), trainer_->bp_params())};
    }
    f.metadata["adam_t"] = std::to_string(trainer_->adam_t());
  }

  void load(const TensorFile& f, const std::string& path) override {
    trainer_->discard_deferred();
    std::vector<std::string> known;
    for (const auto& list : {model_->params(), model_->buffers()})
      for (nn::ParamTensor* p : list) {
        const StoredTensor& t =
            checkpoint_tensor(f, p->name, "F32", p->shape, path, is_variance(p->name));
        std::memcpy(p->data, t.bytes.data(), t.bytes.size());
        known.push_back(p->name);
      }
    if (trainer_->adam_m() != nullptr) {
      const std::vector<int> shape = {static_cast<int>(trainer_->bp_params())};
      for (const char* key : {"optimizer.adam.m", "optimizer.adam.v"}) {
        const bool v = std::strcmp(key, "optimizer.adam.v") == 0;
        const StoredTensor& t = checkpoint_tensor(f, key, "F32", shape, path, v);
        std::memcpy(v ? trainer_->adam_v() : trainer_->adam_m(), t.bytes.data(), t.bytes.size());
        known.push_back(key);
      }
    }
    refuse_unknown_tensors(f, known,
                           std::string(config::name(cfg_.model.arch)) + " fp32 with optimizer " +
                               std::string(config::name(cfg_.optimizer.name)),
                           path);
    if (trainer_->adam_m() == nullptr) return;
    const std::string& adam_t = checkpoint_meta(f, "adam_t", path);
    if (adam_t.empty() || adam_t.size() > 18 ||
        adam_t.find_first_not_of("0123456789") != std::string::npos)
      throw Error(path + ": checkpoint metadata 'adam_t' is '" + adam_t + "', not a count");
    // Adam takes one step per training step (every step has a backprop part when it has state).
    const std::string& global_step = checkpoint_meta(f, "global_step", path);
    if (adam_t != global_step)
      throw Error(path + ": checkpoint metadata 'adam_t' " + adam_t + " contradicts 'global_step' " +
                  global_step + " (Adam takes one step per training step)");
    trainer_->set_adam_t(std::stoll(adam_t));
  }

  void init_from(const TensorFile& f, const std::string& path) override {
    trainer_->discard_deferred();
    // An int8 checkpoint (weights I8 + exponent, no biases): dequantised, biases zero.
    std::unique_ptr<nn::Int8Net> int8;
    for (nn::ParamTensor* p : model_->params()) {
      auto it = f.tensors.find(p->name);
      if (it != f.tensors.end() && it->second.dtype == "I8") {
        if (!int8) int8 = nn::make_int8_net(*model_, kernels::Isa::kReference);
        bool found = false;
        for (int i = 0; i < int8->size(); ++i) {
          nn::Int8Layer& l = int8->layer(i);
          if (!l.parametric() || l.name + ".weight" != p->name) continue;
          const StoredTensor& t = checkpoint_tensor(f, p->name, "I8", l.weight_shape, path);
          l.exponent = checkpoint_exponent(f, p->name + ".exponent", path);
          std::memcpy(int8->weights_of(i), t.bytes.data(), t.bytes.size());
          nn::dequantize_weights(*int8, i, p->data);
          found = true;
        }
        if (found) continue;  // (an I8 tensor the int8 network does not have is refused below)
      }
      if (it == f.tensors.end() && int8 && p->name.ends_with(".bias")) {
        std::fill(p->data, p->data + p->size(), 0.0f);
        continue;
      }
      const StoredTensor& t = checkpoint_tensor(f, p->name, "F32", p->shape, path);
      std::memcpy(p->data, t.bytes.data(), t.bytes.size());
    }
    for (nn::ParamTensor* b : model_->buffers())  // running statistics, when the source has them
      if (f.tensors.count(b->name) != 0) {
        const StoredTensor& t = checkpoint_tensor(f, b->name, "F32", b->shape, path, is_variance(b->name));
        std::memcpy(b->data, t.bytes.data(), t.bytes.size());
      }
    // Nothing else: the names of an FP32 checkpoint of this model and of an int8 one.
    std::vector<std::string> known;
    for (const auto& list : {model_->params(), model_->buffers()})
      for (nn::ParamTensor* p : list) {
        known.push_back(p->name);
        if (p->name.ends_with(".weight")) known.push_back(p->name + ".exponent");
      }
    refuse_unknown_tensors(f, known, std::string(config::name(cfg_.model.arch)) + " fp32 or int8",
                           path);
  }

 private:
  // The divergence guard after every update (README, "What zotrain guarantees"): θ (one
  // contiguous storage), the BatchNorm buffers and Adam's m and v, one pass each; the tensor is
  // looked up only when a pass fails.
  NonFinite find_nonfinite() const {
    const std::size_t bp = trainer_->bp_params();
    const bool ok = all_finite(model_->param_data(), model_->num_params()) &&
                    all_finite(model_->buffer_data(), model_->num_buffer_floats()) &&
                    (trainer_->adam_m() == nullptr ||
                     (all_finite(trainer_->adam_m(), bp) && all_finite(trainer_->adam_v(), bp)));
    if (ok) return {};
    for (const Checked& c : checked_)
      if (!all_finite(c.data, c.n)) return {c.name, c.zo};
    return {};
  }

  struct Checked {  // a tensor of the state, in layer order
    const float* data;
    std::size_t n;
    const char* name;
    bool zo;
  };

  config::ExperimentConfig cfg_;
  Ranks& ranks_;
  int batch_, c_ = 0;
  std::unique_ptr<nn::Model> model_;
  std::unique_ptr<Fp32Trainer> trainer_;
  LearningRates lrs_;
  double lr_ = 0, bp_lr_ = 0;
  std::vector<float> x_;
  std::vector<std::uint8_t> y_;
  std::vector<Checked> checked_;
};

}  // namespace

std::unique_ptr<Engine> make_fp32_engine(const config::ExperimentConfig& cfg, int batch,
                                         int threads, kernels::Isa isa, Ranks* ranks) {
  return std::make_unique<Fp32Engine>(cfg, batch, threads, isa, ranks);
}

namespace {

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s;
  for (std::int64_t d : shape) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return "[" + s + "]";
}

// Element `i` of a row-major tensor of `shape` as an index, e.g. [0, 2, 3, 1].
std::string index_text(std::size_t i, const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> at(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    const auto n = static_cast<std::size_t>(shape[d]);
    at[d] = static_cast<std::int64_t>(i % n);
    i /= n;
  }
  return shape_text(at);
}

}  // namespace

const StoredTensor& checkpoint_tensor(const TensorFile& f, const std::string& name,
                                      const std::string& dtype, const std::vector<int>& shape,
                                      const std::string& path, bool non_negative) {
  auto it = f.tensors.find(name);
  if (it == f.tensors.end()) throw Error(path + ": checkpoint has no tensor '" + name + "'");
  const StoredTensor& t = it->second;
  const std::vector<std::int64_t> want(shape.begin(), shape.end());
  if (t.dtype != dtype || t.shape != want)
    throw Error(path + ": tensor '" + name + "' is " + t.dtype + " " + shape_text(t.shape) +
                "; the model expects " + dtype + " " + shape_text(want));
  check_tensor_values(t, name, path, non_negative);
  return t;
}

void check_tensor_values(const StoredTensor& t, const std::string& name, const std::string& path,
                         bool non_negative) {
  // Int8 tensors hold values in [−127, 127] (the NITI range; the int8 products rely on it).
  if (t.dtype == "I8")
    for (std::size_t i = 0; i < t.bytes.size(); ++i)
      if (static_cast<std::int8_t>(t.bytes[i]) == -128)
        throw Error(path + ": tensor '" + name + "' holds −128 at element " + std::to_string(i) +
                    "; int8 values must be in [−127, 127]");
  // A NaN or infinite weight, statistic or moment would only show later, as a NaN loss blamed on
  // the learning rate.
  if (t.dtype == "F32")
    for (std::size_t i = 0; i < t.bytes.size() / 4; ++i) {
      float v;
      std::memcpy(&v, t.bytes.data() + 4 * i, 4);
      if (std::isfinite(v) && !(non_negative && v < 0)) continue;
      throw Error(path + ": tensor '" + name + "' holds " + fmt::format("{}", v) + " at element " +
                  std::to_string(i) + " " + index_text(i, t.shape) + "; " +
                  (std::isfinite(v) ? "its values must be >= 0" : "checkpoint values must be finite"));
    }
}

int checkpoint_exponent(const TensorFile& f, const std::string& name, const std::string& path) {
  const StoredTensor& t = checkpoint_tensor(f, name, "I32", {1}, path);
  std::int32_t e;
  std::memcpy(&e, t.bytes.data(), 4);
  // quantize_weights gives ceil(log2(max|w| / 127)) for a finite float max|w|: about −156..122.
  constexpr std::int32_t kMin = -160, kMax = 128;
  if (e < kMin || e > kMax)
    throw Error(path + ": tensor '" + name + "' holds exponent " + std::to_string(e) +
                "; int8 weight exponents must be in [" + std::to_string(kMin) + ", " +
                std::to_string(kMax) + "]");
  return e;
}

void refuse_unknown_tensors(const TensorFile& f, const std::vector<std::string>& known,
                            const std::string& model, const std::string& path) {
  for (const auto& [name, t] : f.tensors)
    if (std::find(known.begin(), known.end(), name) == known.end())
      throw Error(path + ": tensor '" + name + "' is not a tensor of this model (" + model + ")");
}

const std::string& checkpoint_meta(const TensorFile& f, const std::string& key,
                                   const std::string& path) {
  auto it = f.metadata.find(key);
  if (it == f.metadata.end()) throw Error(path + ": checkpoint metadata lacks '" + key + "'");
  return it->second;
}

// x − x is 0 for every finite x and NaN for ±Inf and NaN: a subtraction, a compare and an AND
// per element, which compilers vectorise without -ffast-math (NEON, SSE2, AVX).
bool all_finite(const float* x, std::size_t n) {
  int ok = 1;
  for (std::size_t i = 0; i < n; ++i) ok &= static_cast<int>(x[i] - x[i] == 0.0f);
  return ok != 0;
}

}  // namespace zt::run
