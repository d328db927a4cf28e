#include "zotrain/train/experiment.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "zotrain/core/error.hpp"
#include "zotrain/core/rng.hpp"
#include "zotrain/core/seeds.hpp"
#include "zotrain/nn/lenet5.hpp"
#include "zotrain/telemetry/memory.hpp"
#include "zotrain/telemetry/rss.hpp"
#include "zotrain/train/checkpoint.hpp"
#include "engine.hpp"

#ifdef ZT_OPENMP
#include <omp.h>
#endif

namespace zt::train {
namespace fs = std::filesystem;
using nlohmann::json;
using telemetry::Phase;
using telemetry::PhaseTimes;
using telemetry::ScopedPhase;

namespace {

constexpr const char* kCheckpointFormat = "zotrain-checkpoint-1";

std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint(int) { g_interrupted.store(true); }

int resolve_threads(std::int64_t requested) {
#ifdef ZT_OPENMP
  const int n = requested > 0 ? static_cast<int>(requested) : omp_get_num_procs();
  omp_set_num_threads(n);
  return n;
#else
  (void)requested;
  return 1;
#endif
}

json phases_json(const PhaseTimes& t) {
  json j = json::object();
  for (int i = 0; i < telemetry::kNumPhases; ++i) {
    const auto p = static_cast<Phase>(i);
    j[telemetry::phase_key(p)] = t.get(p);
  }
  return j;
}

PhaseTimes phases_from_json(const json& j) {
  PhaseTimes t;
  for (int i = 0; i < telemetry::kNumPhases; ++i) {
    const auto p = static_cast<Phase>(i);
    if (j.contains(telemetry::phase_key(p))) t.add(p, j.at(telemetry::phase_key(p)).get<double>());
  }
  return t;
}

json paper_json(const telemetry::PaperMemory& m) {
  json j = {{"params", m.params},   {"grads", m.grads},
            {"activations", m.activations}, {"errors", m.errors},
            {"optimizer_state", m.optimizer_state}, {"total", m.total}};
  if (m.int32_buffers) j["int32_buffers"] = m.int32_buffers;
  json parts = json::object();
  for (const auto& [name, bytes] : m.breakdown) parts[name] = bytes;
  j["breakdown"] = parts;
  return j;
}

std::string mib(std::size_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

// Per-epoch accumulators (saved in checkpoints so a resumed epoch reports the same figures).
struct EpochAcc {
  double loss_sum = 0, g_abs_sum = 0;
  std::int64_t correct = 0, samples = 0, steps = 0, clipped = 0;
  std::int64_t sign_steps = 0, sign_agree = 0;  // int8 ZO: integer vs float sign
  PhaseTimes times;
  json to_json() const {
    return {{"loss_sum", loss_sum}, {"g_abs_sum", g_abs_sum}, {"correct", correct},
            {"samples", samples},   {"steps", steps},         {"clipped", clipped},
            {"sign_steps", sign_steps}, {"sign_agree", sign_agree},
            {"phases", phases_json(times)}};
  }
  static EpochAcc from_json(const json& j) {
    EpochAcc a;
    a.loss_sum = j.at("loss_sum").get<double>();
    a.g_abs_sum = j.at("g_abs_sum").get<double>();
    a.correct = j.at("correct").get<std::int64_t>();
    a.samples = j.at("samples").get<std::int64_t>();
    a.steps = j.at("steps").get<std::int64_t>();
    a.clipped = j.at("clipped").get<std::int64_t>();
    a.sign_steps = j.value("sign_steps", std::int64_t{0});
    a.sign_agree = j.value("sign_agree", std::int64_t{0});
    a.times = phases_from_json(j.at("phases"));
    return a;
  }
};

struct Progress {
  std::int64_t epoch = 0;        // epoch in progress (0-based)
  std::int64_t step_in_epoch = 0;
  std::int64_t global_step = 0;
  double train_seconds = 0;      // training + eval wall time so far
  PhaseTimes total_times;
  EpochAcc acc;
};

// FNV-1a (64 bit) over the parameter tensors (name, dtype, bytes; optimizer state excluded), in
// name order: equal digests mean bit-identical weights (e.g. across machines and thread counts).
std::string weights_digest(const Engine& engine) {
  TensorFile f;
  engine.save(f);
  std::uint64_t h = 0xcbf29ce484222325ULL;
  auto eat = [&h](const std::uint8_t* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  };
  for (const auto& [name, t] : f.tensors) {
    if (name.starts_with("optimizer.")) continue;
    eat(reinterpret_cast<const std::uint8_t*>(name.data()), name.size());
    eat(reinterpret_cast<const std::uint8_t*>(t.dtype.data()), t.dtype.size());
    eat(t.bytes.data(), t.bytes.size());
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

void save_checkpoint(const std::string& path, const Engine& engine,
                     const config::ExperimentConfig& cfg, const Progress& pr) {
  TensorFile f;
  engine.save(f);
  f.metadata["format"] = kCheckpointFormat;
  f.metadata["arch"] = config::name(cfg.model.arch);
  f.metadata["precision"] = config::name(cfg.model.precision);
  f.metadata["method"] = config::name(cfg.method.name);
  f.metadata["partition"] = std::to_string(engine.partition());
  f.metadata["epoch"] = std::to_string(pr.epoch);
  f.metadata["step_in_epoch"] = std::to_string(pr.step_in_epoch);
  f.metadata["global_step"] = std::to_string(pr.global_step);
  f.metadata["train_seconds"] = json(pr.train_seconds).dump();
  f.metadata["total_phases"] = phases_json(pr.total_times).dump();
  f.metadata["epoch_acc"] = pr.acc.to_json().dump();
  f.metadata["config"] = config::to_json_text(cfg);
  write_safetensors(path, f);
}

// Keeps the first `epochs` lines of metrics.jsonl (a resumed run rewrites what follows).
void truncate_metrics(const std::string& path, std::int64_t epochs) {
  std::ifstream in(path);
  if (!in) return;
  std::string line, kept;
  for (std::int64_t i = 0; i < epochs && std::getline(in, line); ++i) kept += line + "\n";
  in.close();
  write_file_atomic(path, kept);
}

void append_line(const std::string& path, const std::string& line) {
  std::ofstream out(path, std::ios::app);
  out << line << '\n';
  out.flush();
  if (!out) throw Error(path + ": cannot append metrics");
}

class ProgressBar {
 public:
  explicit ProgressBar(bool enabled) : enabled_(enabled) {}
  void update(std::int64_t epoch, std::int64_t epochs, std::int64_t step, std::int64_t steps,
              double loss, double epoch_elapsed) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (step < steps && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const double frac = steps > 0 ? static_cast<double>(step) / static_cast<double>(steps) : 1.0;
    const int width = 30, filled = static_cast<int>(frac * width);
    const double eta = frac > 0 ? epoch_elapsed * (1 - frac) / frac : 0.0;
    std::printf("\r  epoch %lld/%lld [%.*s%*s] %3.0f%%  loss %.4f  ETA %4.0fs ",
                static_cast<long long>(epoch + 1), static_cast<long long>(epochs), filled,
                "##############################", width - filled, "", 100 * frac, loss, eta);
    std::fflush(stdout);
  }
  void finish() {
    if (!enabled_) return;
    std::printf("\r%100s\r", "");
    std::fflush(stdout);
  }

 private:
  bool enabled_;
  std::chrono::steady_clock::time_point last_{};
};

void print_tables(const PhaseTimes& t, double epochs_run, const telemetry::PaperMemory& paper,
                  std::size_t planned, std::uint64_t rss) {
  const double total = t.total();
  if (total > 0) {
    std::printf("\n  %-14s %10s %7s %12s\n", "phase", "seconds", "share", "per epoch");
    for (int i = 0; i < telemetry::kNumPhases; ++i) {
      const auto p = static_cast<Phase>(i);
      std::printf("  %-14s %10.3f %6.1f%% %12.3f\n", telemetry::phase_label(p), t.get(p),
                  100.0 * t.get(p) / total, epochs_run > 0 ? t.get(p) / epochs_run : 0.0);
    }
    std::printf("  %-14s %10.3f\n", "total", total);
  }
  std::printf("\n  %-32s %14s %12s\n", "memory", "bytes", "");
  for (const auto& [name, bytes] : paper.breakdown)
    std::printf("  paper: %-25s %14zu %12s\n", name.c_str(), bytes, mib(bytes).c_str());
  std::printf("  %-32s %14zu %12s\n", "paper: total (Eqs. 2-5)", paper.total, mib(paper.total).c_str());
  std::printf("  %-32s %14zu %12s\n", "planned (this tool's buffers)", planned, mib(planned).c_str());
  if (rss)
    std::printf("  %-32s %14llu %12s\n", "peak RSS (whole process)",
                static_cast<unsigned long long>(rss), mib(rss).c_str());
}

void print_plan(const std::string& name, const Engine& engine,
                const telemetry::PaperMemory& paper, std::size_t planned) {
  std::printf("plan for '%s':\n", name.c_str());
  for (const LayerRow& r : engine.layers())
    std::printf("  %-6s %-17s out %-12s params %7zu  %s\n", r.name.c_str(), r.kind.c_str(),
                r.shape.c_str(), r.params, r.params == 0 ? "" : (r.zo ? "ZO" : "BP"));
  std::printf("  planned buffers:\n");
  for (const auto& [buf, bytes] : engine.planned_buffers())
    std::printf("    %-28s %12zu bytes\n", buf.c_str(), bytes);
  print_tables(PhaseTimes{}, 0, paper, planned, 0);
}

}  // namespace

std::string default_output_dir(const config::ExperimentConfig& cfg) {
  if (!cfg.output.dir.empty()) return cfg.output.dir;
  // runs/<name>, or the first of runs/<name>-2, -3, ... that holds no earlier run.
  const std::string base = "runs/" + cfg.name;
  std::string dir = base;
  for (int k = 2; fs::exists(dir) && !fs::is_empty(dir); ++k) dir = base + "-" + std::to_string(k);
  return dir;
}

int run_experiment(const RunRequest& req) {
  const config::ExperimentConfig& cfg = req.cfg;
  const int threads = resolve_threads(cfg.train.threads);

  // ---- everything that can fail on bad input happens before the output directory exists ----
  const int batch = static_cast<int>(config::resolve_batch_size(cfg));
  // Building the engine validates the architecture and the partition against the model.
  std::unique_ptr<Engine> engine = cfg.model.precision == config::Precision::kInt8
                                       ? make_int8_engine(cfg, batch, threads)
                                       : make_fp32_engine(cfg, batch, threads);
  const int L = engine->num_parametric();
  const int C = engine->partition();
  const std::string root = config::resolve_path(cfg, cfg.data.root);
  const std::uint64_t data_seed = seeds::data(cfg.seed);
  RunData rd = load_run_data(cfg, root, batch, engine->input_floats(), data_seed);

  const auto paper = engine->paper_memory();
  const std::size_t planned = engine->planned_bytes();
  const std::size_t dataset_bytes = rd.bytes;

  const std::string out = req.output_dir;
  const std::string ckpt_path = out + "/checkpoint.safetensors";
  TensorFile resume_file;
  if (req.resume) {
    if (!fs::exists(ckpt_path)) throw Error(ckpt_path + ": no checkpoint to resume from");
    resume_file = read_safetensors(ckpt_path);
    if (checkpoint_meta(resume_file, "format", ckpt_path) != kCheckpointFormat)
      throw Error(ckpt_path + ": unknown checkpoint format");
    if (checkpoint_meta(resume_file, "arch", ckpt_path) != config::name(cfg.model.arch) ||
        checkpoint_meta(resume_file, "precision", ckpt_path) != config::name(cfg.model.precision) ||
        checkpoint_meta(resume_file, "partition", ckpt_path) != std::to_string(C))
      throw Error(ckpt_path + ": checkpoint was written for a different model or partition");
  }
  TensorFile init_file;
  if (!req.init_from.empty()) init_file = read_safetensors(req.init_from);

  json plan = {{"model", config::name(cfg.model.arch)},
               {"precision", config::name(cfg.model.precision)},
               {"method", config::name(cfg.method.name)},
               {"partition", C},
               {"layers", L},
               {"params", {{"total", engine->params_total()},
                           {"zo", engine->params_zo()},
                           {"bp", engine->params_bp()}}},
               {"memory", {{"paper", paper_json(paper)},
                           {"planned_bytes", planned},
                           {"dataset_bytes", dataset_bytes}}},
               {"batch_size", batch},
               {"threads", threads},
               {"forward_macs_per_sample", engine->forward_macs_per_sample()}};
  plan.update(engine->hyperparameters());
  json buffers = json::array();
  for (const auto& [name, bytes] : engine->planned_buffers())
    buffers.push_back({{"name", name}, {"bytes", bytes}});
  plan["memory"]["planned_buffers"] = buffers;

  spdlog::info("{}: {} {} on {} ({} train / {} test samples), C = {} of {} ({} ZO + {} BP params)",
               cfg.name, config::name(cfg.method.name), config::name(cfg.model.arch),
               config::name(cfg.data.dataset), rd.train_count,
               rd.test_count, C, L, engine->params_zo(), engine->params_bp());

  if (req.dry_run) {
    if (!req.quiet) print_plan(cfg.name, *engine, paper, planned);
    fs::create_directories(out);
    plan["dry_run"] = true;
    plan["memory"]["peak_rss_bytes"] = telemetry::peak_rss_bytes();  // baseline: data loaded, nothing trained
    write_file_atomic(out + "/summary.json", plan.dump(2) + "\n");
    spdlog::info("dry run: wrote {}/summary.json", out);
    return 0;
  }

  if (!req.resume && fs::exists(out) && !fs::is_empty(out) && !req.overwrite)
    throw Error("output directory '" + out + "' already holds files; use --resume " + out +
                " to continue it, --overwrite to replace it, or another --output-dir");

  // ---- from here on the output directory is ours ----
  fs::create_directories(out);
  const std::string metrics_path = out + "/metrics.jsonl";
  Progress pr;
  if (req.resume) {
    engine->load(resume_file, ckpt_path);
    pr.epoch = std::stoll(checkpoint_meta(resume_file, "epoch", ckpt_path));
    pr.step_in_epoch = std::stoll(checkpoint_meta(resume_file, "step_in_epoch", ckpt_path));
    pr.global_step = std::stoll(checkpoint_meta(resume_file, "global_step", ckpt_path));
    pr.train_seconds = json::parse(checkpoint_meta(resume_file, "train_seconds", ckpt_path)).get<double>();
    pr.total_times = phases_from_json(json::parse(checkpoint_meta(resume_file, "total_phases", ckpt_path)));
    pr.acc = EpochAcc::from_json(json::parse(checkpoint_meta(resume_file, "epoch_acc", ckpt_path)));
    truncate_metrics(metrics_path, pr.epoch);
    spdlog::info("resuming {} at epoch {}, step {} (global step {})", out, pr.epoch + 1,
                 pr.step_in_epoch, pr.global_step);
  } else {
    if (!req.init_from.empty()) {
      engine->init_from(init_file, req.init_from);
      spdlog::info("initialised parameters from {}", req.init_from);
    }
    std::error_code ec;
    fs::remove(metrics_path, ec);
    fs::remove(out + "/summary.json", ec);
    fs::remove(ckpt_path, ec);
  }
  // The effective config, with the data directory made absolute so `--resume DIR` finds it.
  config::ExperimentConfig effective = cfg;
  effective.data.root = fs::absolute(root).lexically_normal().string();
  engine->write_effective(effective);
  write_file_atomic(out + "/config.json", config::to_json_text(effective));

  g_interrupted.store(false);
  auto previous_handler = std::signal(SIGINT, on_sigint);

  BatchSource& batcher = *rd.train;
  ProgressBar bar(req.progress_bar);
  const std::int64_t epochs = cfg.train.epochs;
  const std::int64_t max_steps = cfg.train.max_steps;
  bool interrupted = false, stopped_early = false;
  EvalResult last_eval{-1, -1};

  for (; pr.epoch < epochs; ++pr.epoch) {
    const json hyper = engine->begin_epoch(pr.epoch);
    batcher.start_epoch(static_cast<int>(pr.epoch));
    const std::int64_t steps = batcher.batches_per_epoch();
    const auto epoch_start = std::chrono::steady_clock::now();
    for (; pr.step_in_epoch < steps; ++pr.step_in_epoch) {
      if (g_interrupted.load()) {
        interrupted = true;
        break;
      }
      if (max_steps > 0 && pr.global_step >= max_steps) {
        stopped_early = true;
        break;
      }
      const std::uint64_t step_seed = seeds::step(cfg.seed, pr.global_step);
      const EngineStep st =
          engine->step(batcher, static_cast<int>(pr.step_in_epoch), step_seed, pr.acc.times);
      pr.acc.loss_sum += st.loss * st.n;
      pr.acc.correct += st.correct;
      pr.acc.samples += st.n;
      if (st.sign_agree >= 0) {
        ++pr.acc.sign_steps;
        pr.acc.sign_agree += st.sign_agree;
      }
      pr.acc.g_abs_sum += std::abs(st.g);
      pr.acc.clipped += st.clipped ? 1 : 0;
      ++pr.acc.steps;
      ++pr.global_step;
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_start).count();
      bar.update(pr.epoch, epochs, pr.step_in_epoch + 1, steps,
                 pr.acc.loss_sum / static_cast<double>(pr.acc.samples), elapsed);
    }
    bar.finish();
    if (interrupted || (stopped_early && pr.step_in_epoch == 0)) break;

    // End of the epoch (or a max_steps stop inside it): evaluate and report.
    const bool last = pr.epoch + 1 == epochs || stopped_early;
    EvalResult ev{-1, -1};
    if (last || (cfg.train.eval_every > 0 && (pr.epoch + 1) % cfg.train.eval_every == 0)) {
      ScopedPhase t(pr.acc.times, Phase::kEval);
      ev = engine->evaluate(*rd.test);
      last_eval = ev;
    }
    const double epoch_seconds = pr.acc.times.total();
    const double train_loss = pr.acc.samples ? pr.acc.loss_sum / static_cast<double>(pr.acc.samples) : 0.0;
    json rec = {{"epoch", pr.epoch + 1},
                {"steps", pr.acc.steps},
                {"train_loss", train_loss},
                {"train_accuracy", pr.acc.samples ? 100.0 * static_cast<double>(pr.acc.correct) / static_cast<double>(pr.acc.samples) : 0.0},
                {"test_loss", ev.loss >= 0 ? json(ev.loss) : json(nullptr)},
                {"test_accuracy", ev.accuracy >= 0 ? json(ev.accuracy) : json(nullptr)},
                {"g_abs_mean", pr.acc.steps ? pr.acc.g_abs_sum / static_cast<double>(pr.acc.steps) : 0.0},
                {"clip_fraction", pr.acc.steps ? static_cast<double>(pr.acc.clipped) / static_cast<double>(pr.acc.steps) : 0.0},
                {"epoch_seconds", epoch_seconds},
                {"phases", phases_json(pr.acc.times)}};
    rec.update(hyper);
    if (pr.acc.sign_steps > 0)
      rec["sign_agreement"] = static_cast<double>(pr.acc.sign_agree) / static_cast<double>(pr.acc.sign_steps);
    append_line(metrics_path, rec.dump());
    const std::string agree =
        pr.acc.sign_steps > 0 ? fmt::format(", sign agreement {:.1f}%", 100.0 * static_cast<double>(pr.acc.sign_agree) / static_cast<double>(pr.acc.sign_steps))
                              : std::string();
    if (ev.accuracy >= 0)
      spdlog::info("epoch {}/{}: train loss {:.4f}, test loss {:.4f}, test accuracy {:.2f}%{}, {:.2f}s",
                   pr.epoch + 1, epochs, train_loss, ev.loss, ev.accuracy, agree, epoch_seconds);
    else
      spdlog::info("epoch {}/{}: train loss {:.4f}{}, {:.2f}s", pr.epoch + 1, epochs, train_loss,
                   agree, epoch_seconds);
    if (stopped_early) break;  // train.max_steps inside an epoch: checkpoint the exact position
    pr.total_times += pr.acc.times;
    pr.train_seconds += epoch_seconds;
    pr.acc = EpochAcc{};
    pr.step_in_epoch = 0;
    if (cfg.output.checkpoint_every > 0 && (pr.epoch + 1) % cfg.output.checkpoint_every == 0 &&
        pr.epoch + 1 < epochs) {
      Progress next = pr;
      ++next.epoch;
      save_checkpoint(ckpt_path, *engine, cfg, next);
    }
  }
  std::signal(SIGINT, previous_handler);

  if (interrupted) {
    save_checkpoint(ckpt_path, *engine, cfg, pr);
    spdlog::warn("interrupted: checkpoint saved to {} (continue with --resume {})", ckpt_path, out);
    return 130;
  }
  save_checkpoint(ckpt_path, *engine, cfg, pr);
  if (last_eval.accuracy < 0) {  // e.g. resuming a finished run: report the final accuracy
    PhaseTimes eval_times;
    ScopedPhase t(eval_times, Phase::kEval);
    last_eval = engine->evaluate(*rd.test);
  }

  const std::uint64_t rss = telemetry::peak_rss_bytes();
  // Totals include a partial epoch left by train.max_steps.
  PhaseTimes all = pr.total_times;
  all += pr.acc.times;
  const double train_seconds = pr.train_seconds + pr.acc.times.total();
  const double epochs_done =
      static_cast<double>(pr.epoch) +
      (pr.step_in_epoch > 0 ? static_cast<double>(pr.step_in_epoch) / batcher.batches_per_epoch() : 0.0);
  json summary = plan;
  summary["test_accuracy"] = last_eval.accuracy >= 0 ? json(last_eval.accuracy) : json(nullptr);
  summary["test_loss"] = last_eval.loss >= 0 ? json(last_eval.loss) : json(nullptr);
  summary["train_seconds"] = train_seconds;
  summary["epochs"] = epochs_done;
  summary["steps"] = pr.global_step;
  summary["step_seconds_mean"] =
      pr.global_step > 0 ? (all.total() - all.get(Phase::kEval)) / static_cast<double>(pr.global_step) : 0.0;
  json ph = json::object();
  const double tot = all.total();
  for (int i = 0; i < telemetry::kNumPhases; ++i) {
    const auto p = static_cast<Phase>(i);
    ph[telemetry::phase_key(p)] = {{"seconds", all.get(p)},
                                   {"share", tot > 0 ? all.get(p) / tot : 0.0},
                                   {"per_epoch", epochs_done > 0 ? all.get(p) / epochs_done : 0.0}};
  }
  summary["phases"] = ph;
  summary["memory"]["peak_rss_bytes"] = rss;
  summary["weights_digest"] = weights_digest(*engine);
  write_file_atomic(out + "/summary.json", summary.dump(2) + "\n");

  if (req.quiet) return 0;
  std::printf("\n%s: test accuracy %.2f%% after %.2f epochs (%lld steps), %.2f s\n",
              cfg.name.c_str(), last_eval.accuracy, epochs_done,
              static_cast<long long>(pr.global_step), train_seconds);
  print_tables(all, epochs_done, paper, planned, rss);
  std::printf("\n  outputs in %s/\n", out.c_str());
  return 0;
}

}  // namespace zt::train
