// `zotrain bench`'s step figures: wall time of a training engine's step (include/zotrain/run/engine.hpp, as
// a run makes it) after one warm-up step, split by the trainers' own phase timers; the Data phase
// (the synthetic batch's copy) is not shown.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench_parts.hpp"
#include "zotrain/config/catalogue.hpp"
#include "zotrain/config/config.hpp"
#include "zotrain/config/methods.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/run/engine.hpp"
#include "zotrain/run/experiment.hpp"
#include "zotrain/telemetry/phases.hpp"

namespace zt::cli {
namespace {

using namespace zt::kernels;
using Clock = BenchClock;
using nlohmann::json;

// ---- training steps -------------------------------------------------------------------------

// The paper's four settings (zotrain's method registry, config/methods.hpp).
using Method = config::NamedSetting;

const Method& find_method(const std::string& key) {
  const Method* m = config::find_named_setting(key);
  if (m == nullptr) {
    throw Error("bench --method: unknown method '" + key + "' (expected " +
                config::named_setting_keys() + ")");
  }
  return *m;
}

// A fixed synthetic batch of LeNet-5 input (random pixels and labels; the trainers' cost does not
// depend on the data's meaning), served as the run's data is: normalised for FP32, raw for int8.
class SyntheticImages final : public run::BatchSource {
 public:
  SyntheticImages(std::size_t sample_floats, int batch)
      : floats_(sample_floats), n_(batch), pixels_(sample_floats * std::size_t(batch)),
        labels_(std::size_t(batch)) {
    std::mt19937 rng(7);
    for (auto& p : pixels_) p = std::uint8_t(rng() % 256);
    for (auto& l : labels_) l = std::uint8_t(rng() % 10);
  }
  int batches_per_epoch() const override { return 1; }
  void start_epoch(int /*epoch*/) override {}
  std::size_t sample_floats() const override { return floats_; }
  int fill(int /*index*/, float* x, std::uint8_t* labels) override {
    const config::DatasetInfo& mnist = config::dataset(config::Dataset::kMnist);
    for (std::size_t i = 0; i < pixels_.size(); ++i)
      x[i] = (float(pixels_[i]) / 255.0f - mnist.mean) / mnist.std;
    std::copy(labels_.begin(), labels_.end(), labels);
    return n_;
  }
  int fill_raw(int /*index*/, std::uint8_t* raw, std::uint8_t* labels) override {
    std::copy(pixels_.begin(), pixels_.end(), raw);
    std::copy(labels_.begin(), labels_.end(), labels);
    return n_;
  }

 private:
  std::size_t floats_;
  int n_;
  std::vector<std::uint8_t> pixels_, labels_;
};

// A training step of one method on LeNet-5, built and run by the same engine as a training run
// (include/zotrain/run/engine.hpp) from a config of the method, precision, batch and the bench's ZO options;
// the data set is the synthetic batch above.
class StepRunner {
 public:
  StepRunner(config::Precision precision, const Method& m, int batch, int threads, Isa isa,
             const BenchOptions& o) {
    const config::ArchInfo& lenet5 = config::architecture(config::Arch::kLeNet5);
    std::vector<std::string> set = {
        "model.arch=" + std::string(config::name(config::Arch::kLeNet5)),
        "data.dataset=" + std::string(config::name(config::Dataset::kMnist)),
        "model.precision=" + std::string(config::name(precision)),
        "method.name=" + std::string(config::name(m.method)),
        "method.partition=" + std::to_string(m.partition(lenet5.layers)),
        "train.batch_size=" + std::to_string(batch),
        "zo.cache_direction=" + std::string(o.cache_direction ? "true" : "false")};
    if (precision == config::Precision::kFp32) set.push_back("zo.perturbation=" + std::string(config::name(o.perturbation)));
    const config::ExperimentConfig cfg = config::parse_config("{}", "zotrain bench", set);
    engine_ = precision == config::Precision::kInt8 ? run::make_int8_engine(cfg, batch, threads, isa)
                                                    : run::make_fp32_engine(cfg, batch, threads, isa);
    data_ = std::make_unique<SyntheticImages>(engine_->input_floats(), batch);
    engine_->begin_epoch(0);
  }
  void step(std::uint64_t seed, telemetry::PhaseTimes& times) {
    engine_->step(*data_, 0, seed, step_number_++, times);
  }

 private:
  std::unique_ptr<run::Engine> engine_;
  std::unique_ptr<SyntheticImages> data_;
  std::uint64_t step_number_ = 0;
};

std::unique_ptr<StepRunner> make_step(config::Precision precision, const Method& m, int batch, int threads,
                                      Isa isa, const BenchOptions& o) {
  return std::make_unique<StepRunner>(precision, m, batch, threads, isa, o);
}

config::Precision parse_precision(const std::string& text) {
  if (auto p = config::parse_choice<config::Precision>(text)) return *p;
  throw Error("bench --precision: unknown precision '" + text + "' (expected fp32 or int8)");
}

constexpr telemetry::Phase kStepPhases[] = {telemetry::Phase::kForward, telemetry::Phase::kLoss,
                                            telemetry::Phase::kBackward, telemetry::Phase::kZoPerturb,
                                            telemetry::Phase::kZoUpdate};

struct StepResult {
  double ms = 0;  // wall time per step
  int steps = 0;
  telemetry::PhaseTimes phases;  // per step, seconds
};

// One warm-up step, then steps until `target` seconds have passed (at least `min_steps`).
StepResult time_steps(StepRunner& r, double target, int min_steps) {
  telemetry::PhaseTimes warm;
  r.step(1, warm);
  StepResult res;
  telemetry::PhaseTimes sum;
  const auto t0 = Clock::now();
  double elapsed = 0;
  while (res.steps < min_steps || elapsed < target) {
    r.step(2 + std::uint64_t(res.steps), sum);
    ++res.steps;
    elapsed = seconds_since(t0);
  }
  res.ms = elapsed * 1e3 / res.steps;
  for (int p = 0; p < telemetry::kNumPhases; ++p) {
    const auto ph = static_cast<telemetry::Phase>(p);
    res.phases.add(ph, sum.get(ph) / res.steps);
  }
  return res;
}

json step_json(const StepResult& r) {
  json ph = json::object();
  for (telemetry::Phase p : kStepPhases)
    ph[telemetry::phase_key(p)] = {{"ms", r.phases.get(p) * 1e3}, {"share", r.phases.get(p) * 1e3 / r.ms}};
  return {{"ms_per_step", r.ms}, {"steps", r.steps}, {"phases", ph}};
}

}  // namespace

json bench_steps(const BenchOptions& o, int threads, bool print) {
  const int b32 = o.quick ? 4 : 32, b256 = o.quick ? 8 : 256;
  const double target = o.quick ? 0.0 : 1.0;
  const int min_steps = o.quick ? 1 : 3;
  struct Config {
    config::Precision precision;
    int batch;
    const char* name() const { return config::name(precision).data(); }
  };
  // FP32 at its paper batch and at int8's, int8 at its paper batch (NITI, the paper's int8).
  const Config configs[] = {{config::Precision::kFp32, b32}, {config::Precision::kFp32, b256},
                            {config::Precision::kInt8, b256}};
  // The trainers' path, and portable beside it when that is another one (the NEON or AVX-512 VNNI speed-up).
  const Isa best = best_isa();
  std::vector<Isa> paths = {best};
  if (best != Isa::kPortable && best != Isa::kReference) paths.push_back(Isa::kPortable);
  if (print) {
    std::printf("\n== training steps: LeNet-5, synthetic input, %d thread%s "
                "(ms per step after 1 warm-up, >= %.1f s; phase ms and share of the step) ==\n",
                threads, threads == 1 ? "" : "s", target);
    std::printf("%-9s %-5s %-15s %5s %9s %9s", "path", "prec", "method", "batch", "ms/step", "us/sample");
    for (telemetry::Phase p : kStepPhases) std::printf(" %16s", telemetry::phase_key(p));
    std::printf("\n");
  }
  json rows = json::array();
  // [path][config][method]
  std::vector<std::array<std::array<StepResult, 4>, 3>> res(paths.size());
  for (std::size_t pi = 0; pi < paths.size(); ++pi)
    for (int ci = 0; ci < 3; ++ci)
      for (int mi = 0; mi < 4; ++mi) {
        const Config& c = configs[ci];
        const Method& m = config::named_settings()[mi];
        auto runner = make_step(c.precision, m, c.batch, threads, paths[pi], o);
        const StepResult r = time_steps(*runner, target, min_steps);
        res[pi][std::size_t(ci)][std::size_t(mi)] = r;
        json j = step_json(r);
        j["path"] = isa_name(paths[pi]), j["precision"] = c.name(), j["method"] = m.key, j["batch"] = c.batch;
        rows.push_back(j);
        if (!print) continue;
        std::printf("%-9s %-5s %-15s %5d %9.3f %9.2f", isa_name(paths[pi]), c.name(), m.label, c.batch, r.ms,
                    r.ms * 1e3 / c.batch);
        for (telemetry::Phase p : kStepPhases) {
          const double pm = r.phases.get(p) * 1e3;
          std::printf("  %7.3f %5.1f %%", pm, 100.0 * pm / r.ms);
        }
        std::printf("\n");
      }
  // Epoch-time ratio = per-sample step time ratio (same data set, batch sizes as stated).
  const auto fwd_share = [](const StepResult& r) { return r.phases.get(telemetry::Phase::kForward) * 1e3 / r.ms; };
  const auto& ms = res[0];
  json ratios = json::array();
  if (print)
    std::printf("\n== int8 vs FP32 (%s): epoch-time ratio FP32 / int8 (paper, Pi Zero 2: int8 1.38-1.42x faster; "
                "forward share 84-85 %% FP32, 95-97 %% int8) ==\n%-15s %14s %14s %13s %13s\n",
                isa_name(best), "method", (std::string("FP32 B") + std::to_string(b32) + "/int8").c_str(),
                (std::string("FP32 B") + std::to_string(b256) + "/int8").c_str(), "fwd FP32", "fwd int8");
  for (std::size_t mi = 0; mi < 4; ++mi) {
    const double f32 = ms[0][mi].ms / b32, f256 = ms[1][mi].ms / b256, i8 = ms[2][mi].ms / b256;
    const double s32 = fwd_share(ms[0][mi]), s8 = fwd_share(ms[2][mi]);
    ratios.push_back({{"method", config::named_settings()[mi].key},
                      {"fp32_paper_batch_over_int8", f32 / i8},
                      {"fp32_same_batch_over_int8", f256 / i8},
                      {"forward_share_fp32", s32},
                      {"forward_share_int8", s8}});
    if (print)
      std::printf("%-15s %13.2fx %13.2fx %11.1f %% %11.1f %%\n", config::named_settings()[mi].label, f32 / i8, f256 / i8, 100 * s32,
                  100 * s8);
  }
  json out = {{"steps", rows}, {"int8_vs_fp32", ratios}};
  if (paths.size() > 1) {
    json speedups = json::array();
    if (print)
      std::printf("\n== kernel paths: step time portable / %s (> 1: %s is faster) ==\n%-15s", isa_name(best),
                  isa_name(best), "method");
    if (print)
      for (const Config& c : configs) std::printf(" %11s", (std::string(c.name()) + " B" + std::to_string(c.batch)).c_str());
    if (print) std::printf("\n");
    for (std::size_t mi = 0; mi < 4; ++mi) {
      if (print) std::printf("%-15s", config::named_settings()[mi].label);
      for (std::size_t ci = 0; ci < 3; ++ci) {
        const double x = res[1][ci][mi].ms / res[0][ci][mi].ms;
        speedups.push_back({{"method", config::named_settings()[mi].key}, {"precision", configs[ci].name()},
                            {"batch", configs[ci].batch}, {"portable_over_best", x}});
        if (print) std::printf(" %10.2fx", x);
      }
      if (print) std::printf("\n");
    }
    out["path_speedup"] = speedups;
  }
  return out;
}

// Called between the steps of --run-steps (before each step and after the last) and does
// nothing: scripts/count-insns.sh finds it by name in qemu's log of executed blocks and counts
// the instructions of each step between two calls.
extern "C" __attribute__((noinline)) void zt_bench_step_boundary(int step) { asm volatile("" : : "r"(step) : "memory"); }

void check_method(const std::string& key) { find_method(key); }

void run_steps(const BenchOptions& o) {
  const Method& m = find_method(o.method);
  const int threads = run::use_threads(o.threads);
  const config::Precision precision = parse_precision(o.precision);
  const config::ArchInfo& lenet5 = config::architecture(config::Arch::kLeNet5);
  const int batch = o.batch > 0 ? o.batch
                    : precision == config::Precision::kInt8 ? lenet5.int8_batch
                                                            : lenet5.fp32_batch;
  auto runner = make_step(precision, m, batch, threads, best_isa(), o);
  telemetry::PhaseTimes times;
  for (int i = 0; i < o.run_steps; ++i) {
    zt_bench_step_boundary(i);
    runner->step(1 + std::uint64_t(i), times);
  }
  zt_bench_step_boundary(o.run_steps);
  const std::string zo = precision == config::Precision::kFp32
                             ? ", zo.perturbation " + std::string(config::name(o.perturbation)) + (o.cache_direction ? ", cached" : "")
                             : "";
  std::printf("ran %d %s %s step%s, batch %d, kernel path %s%s\n", o.run_steps, o.precision.c_str(), m.key,
              o.run_steps == 1 ? "" : "s", batch, isa_name(best_isa()), zo.c_str());
}

}  // namespace zt::cli
