#include "zotrain/run/experiment.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "zotrain/run/engine.hpp"
#include "reporter.hpp"
#include "zotrain/run/run_folder.hpp"
#include "run_state.hpp"
#include "zotrain/core/build_info.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/core/seeds.hpp"
#include "zotrain/kernels/isa.hpp"
#include "zotrain/telemetry/host.hpp"
#include "zotrain/telemetry/memory.hpp"
#include "zotrain/telemetry/rss.hpp"
#include "zotrain/run/checkpoint.hpp"

#ifdef ZT_OPENMP
#include <omp.h>
#endif

namespace zt::run {
namespace fs = std::filesystem;
using nlohmann::json;
using telemetry::Phase;
using telemetry::PhaseTimes;
using telemetry::ScopedPhase;

namespace {

// SIGINT (Ctrl-C) and SIGTERM (a job scheduler, GNU parallel, `kill`) both stop the run at the
// next step with a checkpoint saved; the exit code is 128 + the signal's number.
std::atomic<int> g_interrupted{0};
extern "C" void on_stop_signal(int sig) { g_interrupted.store(sig); }

int resolve_threads(std::optional<std::int64_t> requested) {
#ifdef ZT_OPENMP
  const int n = requested ? static_cast<int>(*requested) : omp_get_num_procs();
  omp_set_num_threads(n);
  return n;
#else
  (void)requested;
  return 1;
#endif
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

// What the run is, before it trains: model, method, partition, parameters, memory, batch.
json plan_json(const config::ExperimentConfig& cfg, const Engine& engine, int batch, int threads,
               std::size_t dataset_bytes) {
  const auto paper = engine.paper_memory();
  json plan = {{"model", config::name(cfg.model.arch)},
               {"precision", config::name(cfg.model.precision)},
               {"method", config::name(cfg.method.name)},
               {"partition", engine.partition()},
               {"layers", engine.num_parametric()},
               {"params", {{"total", engine.params_total()},
                           {"zo", engine.params_zo()},
                           {"bp", engine.params_bp()}}},
               {"memory", {{"paper", paper_json(paper)},
                           {"planned_bytes", engine.planned_bytes()},
                           {"dataset_bytes", dataset_bytes}}},
               {"batch_size", batch},
               {"threads", threads},
               {"forward_macs_per_sample", engine.forward_macs_per_sample()}};
  plan.update(engine.hyperparameters());
  json buffers = json::array();
  for (const auto& [name, bytes] : engine.planned_buffers())
    buffers.push_back({{"name", name}, {"bytes", bytes}});
  plan["memory"]["planned_buffers"] = buffers;
  return plan;
}

// Where the run came from: the tool, the command, the machine, the time, the seed.
json provenance(const RunRequest& req, int threads, const std::string& started) {
  const telemetry::HostInfo h = telemetry::host_info();
  return {{"name", req.cfg.name},
          {"seed", req.cfg.seed},
          {"zotrain_version", version()},
          {"source_revision", source_revision()},
          {"command_line", req.command_line},
          {"started_utc", started},
          {"finished_utc", telemetry::utc_now()},
          {"resumed", req.resume},
          {"host", h.name},
          {"cpu", h.cpu},
          {"cores", h.cores},
          {"os", h.os},
          {"threads", threads},
          {"kernel_path", kernels::isa_name(kernels::best_isa())}};
}

// An evaluation on the test set and, with data.validation, the validation split; −1 = none.
struct Evals {
  EvalResult test{-1, -1}, val{-1, -1};
};
Evals evaluate_all(Engine& engine, RunData& rd) {
  Evals e;
  e.test = engine.evaluate(*rd.test);
  if (rd.val) e.val = engine.evaluate(*rd.val);
  return e;
}
json or_null(double x) { return x >= 0 ? json(x) : json(nullptr); }

// The epoch record of metrics.jsonl (and its log line).
json epoch_record(const RunState& st, const Evals& evals, const json& hyper) {
  const EvalResult& ev = evals.test;
  const EpochAcc& a = st.acc;
  auto ratio = [](double x, std::int64_t n) { return n ? x / static_cast<double>(n) : 0.0; };
  json rec = {{"epoch", st.epoch + 1},
              {"steps", a.steps},
              {"train_loss", ratio(a.loss_sum, a.samples)},
              {"train_accuracy", 100.0 * ratio(static_cast<double>(a.correct), a.samples)},
              {"test_loss", or_null(ev.loss)},
              {"test_accuracy", or_null(ev.accuracy)},
              {"g_abs_mean", ratio(a.g_abs_sum, a.steps)},
              {"clip_fraction", ratio(static_cast<double>(a.clipped), a.steps)},
              {"epoch_seconds", a.times.total()},
              {"phases", phases_json(a.times)}};
  if (evals.val.accuracy >= 0) {
    rec["val_loss"] = evals.val.loss;
    rec["val_accuracy"] = evals.val.accuracy;
  }
  rec.update(hyper);
  if (a.sign_steps > 0) {
    rec["sign_agreement"] = ratio(static_cast<double>(a.sign_agree), a.sign_steps);
    rec["sign_agreement_eq12"] = ratio(static_cast<double>(a.sign_agree_eq12), a.sign_steps);
  }
  return rec;
}

void log_epoch(const json& rec, std::int64_t epochs) {
  const std::string agree =
      rec.contains("sign_agreement")
          ? fmt::format(", sign agreement {:.1f}% (Eq. 12 {:.1f}%)",
                        100.0 * rec["sign_agreement"].get<double>(),
                        100.0 * rec["sign_agreement_eq12"].get<double>())
          : std::string();
  const auto epoch = rec["epoch"].get<std::int64_t>();
  const double loss = rec["train_loss"].get<double>(), secs = rec["epoch_seconds"].get<double>();
  const std::string val =
      rec.contains("val_accuracy")
          ? fmt::format(", val loss {:.4f}, val accuracy {:.2f}%", rec["val_loss"].get<double>(),
                        rec["val_accuracy"].get<double>())
          : std::string();
  if (!rec["test_accuracy"].is_null())
    spdlog::info("epoch {}/{}: train loss {:.4f}{}, test loss {:.4f}, test accuracy {:.2f}%{}, {:.2f}s",
                 epoch, epochs, loss, val, rec["test_loss"].get<double>(),
                 rec["test_accuracy"].get<double>(), agree, secs);
  else
    spdlog::info("epoch {}/{}: train loss {:.4f}{}, {:.2f}s", epoch, epochs, loss, agree, secs);
}

// steps.jsonl: one record every train.log_every steps.
class StepLog {
 public:
  StepLog(const RunFolder& folder, std::optional<std::int64_t> every)
      : folder_(folder), every_(every.value_or(0)), t0_(Clock::now()) {}
  void after(const RunState& st, std::int64_t per_epoch, const EngineStep& s, const json& hyper) {
    samples_ += s.n;
    if (every_ <= 0 || st.global_step % every_ != 0) return;
    const auto now = Clock::now();
    const double secs = std::chrono::duration<double>(now - t0_).count();
    json rec = {{"step", st.global_step},
                {"epoch", static_cast<double>(st.epoch) +
                              static_cast<double>(st.step_in_epoch + 1) / static_cast<double>(per_epoch)},
                {"loss", s.loss},
                {"g", s.g},
                {"clipped", s.clipped},
                {"samples_per_second", secs > 0 ? static_cast<double>(samples_) / secs : 0.0}};
    rec.update(hyper);
    folder_.append_record("steps.jsonl", rec);
    t0_ = now;
    samples_ = 0;
  }

 private:
  using Clock = std::chrono::steady_clock;
  const RunFolder& folder_;
  std::int64_t every_, samples_ = 0;
  Clock::time_point t0_;
};

struct LoopResult {
  bool interrupted = false;
  bool diverged = false;  // a non-finite loss or ZO gradient: stopped after that step
  EngineStep bad_step;
  Evals last_eval;
};

// The training loop: epochs of steps from `st` on, with evaluation, metrics and checkpoints.
LoopResult train_loop(const config::ExperimentConfig& cfg, Engine& engine, RunData& rd,
                      const RunFolder& folder, Reporter& rep, RunState& st) {
  BatchSource& batcher = *rd.train;
  const std::int64_t epochs = cfg.train.epochs, max_steps = cfg.train.max_steps.value_or(0);
  const std::int64_t per_epoch = batcher.batches_per_epoch();
  const std::int64_t planned = max_steps > 0 ? std::min(max_steps, epochs * per_epoch)
                                             : epochs * per_epoch;
  rep.start(planned, st.global_step);
  LoopResult r;
  if (cfg.train.eval_at_start && st.global_step == 0) {  // the epoch-0 record
    RunState start = st;
    start.epoch = -1;
    {
      ScopedPhase t(start.acc.times, Phase::kEval);
      r.last_eval = evaluate_all(engine, rd);
    }
    json rec = epoch_record(start, r.last_eval, json::object());
    rec["train_loss"] = rec["train_accuracy"] = nullptr;  // nothing trained yet
    folder.append_record("metrics.jsonl", rec);
    spdlog::info("before training: test loss {:.4f}, test accuracy {:.2f}%",
                 r.last_eval.test.loss, r.last_eval.test.accuracy);
  }
  StepLog steps(folder, cfg.train.log_every);
  bool stopped_early = false;
  for (; st.epoch < epochs; ++st.epoch) {
    const json hyper = engine.begin_epoch(st.epoch);
    batcher.start_epoch(static_cast<int>(st.epoch));
    for (; st.step_in_epoch < per_epoch; ++st.step_in_epoch) {
      if (g_interrupted.load() != 0) {
        r.interrupted = true;
        break;
      }
      if (max_steps > 0 && st.global_step >= max_steps) {
        stopped_early = true;
        break;
      }
      const std::uint64_t step_seed = seeds::step(cfg.seed, st.global_step);
      const EngineStep s =
          engine.step(batcher, static_cast<int>(st.step_in_epoch), step_seed,
                      static_cast<std::uint64_t>(st.global_step), st.acc.times);
      if (!std::isfinite(s.loss) || !std::isfinite(s.g)) {  // the weights are garbage from here
        r.diverged = true;
        r.bad_step = s;
        break;
      }
      EpochAcc& a = st.acc;
      a.loss_sum += s.loss * s.n;
      a.correct += s.correct;
      a.samples += s.n;
      if (s.sign_agree >= 0) {
        ++a.sign_steps;
        a.sign_agree += s.sign_agree;
        a.sign_agree_eq12 += s.sign_agree_eq12;
      }
      a.g_abs_sum += std::abs(s.g);
      a.clipped += s.clipped ? 1 : 0;
      ++a.steps;
      ++st.global_step;
      steps.after(st, per_epoch, s, hyper);
      rep.step(st.epoch, epochs, st.global_step, a.loss_sum / static_cast<double>(a.samples), s.n);
    }
    rep.end_epoch();
    if (r.interrupted || r.diverged || (stopped_early && st.step_in_epoch == 0)) break;

    // End of the epoch (or a max_steps stop inside it): evaluate and report.
    const bool last = st.epoch + 1 == epochs || stopped_early;
    Evals ev;
    if (last || (cfg.train.eval_every > 0 && (st.epoch + 1) % cfg.train.eval_every == 0)) {
      ScopedPhase t(st.acc.times, Phase::kEval);
      ev = evaluate_all(engine, rd);
      r.last_eval = ev;
    }
    const json rec = epoch_record(st, ev, hyper);
    folder.append_record("metrics.jsonl", rec);
    log_epoch(rec, epochs);
    if (stopped_early) break;  // train.max_steps inside an epoch: checkpoint the exact position
    st.total_times += st.acc.times;
    st.train_seconds += st.acc.times.total();
    st.acc = EpochAcc{};
    st.step_in_epoch = 0;
    if (cfg.output.checkpoint_every > 0 && (st.epoch + 1) % cfg.output.checkpoint_every == 0 &&
        st.epoch + 1 < epochs) {
      RunState next = st;
      ++next.epoch;
      save_checkpoint(folder.checkpoint_path(), engine, cfg, next);
    }
  }
  return r;
}

// The run's peak resident set, predicted before its first step (docs/design.md §9). Building
// the engine allocates and touches every planned buffer, and opening the data reads what it
// keeps, so most of the peak is resident already; training adds the checkpoint's copy of the
// parameters and optimizer state (made at every save) and the batches the data sources fill
// later (prefetch buffers, read scratch: counted in dataset_bytes), plus the worker threads'
// stacks and allocator arenas. The set-up's own high-water mark (e.g. HDF5's checks at open)
// stays if it is higher.
std::uint64_t predict_peak_rss(const Engine& engine, const RunData& rd, int threads) {
  const std::uint64_t now = telemetry::current_rss_bytes();
  std::uint64_t checkpoint = 0;
  {
    TensorFile f;
    engine.save(f);
    for (const auto& [name, t] : f.tensors) checkpoint += t.bytes.size();
  }
  constexpr std::uint64_t kPerThread = 256 << 10;  // a worker's touched stack and arena
  const std::uint64_t later = checkpoint + rd.bytes + kPerThread * static_cast<std::uint64_t>(threads + 1);
  return std::max<std::uint64_t>(telemetry::peak_rss_bytes(), now + later);
}

// train.memory_limit: a run predicted to need more is refused before it writes anything, with
// what would make it fit.
void check_memory_limit(const config::ExperimentConfig& cfg, const Engine& engine,
                        std::uint64_t predicted, int batch) {
  if (!cfg.train.memory_limit || predicted <= static_cast<std::uint64_t>(*cfg.train.memory_limit))
    return;
  std::pair<std::string, std::size_t> largest{"", 0};
  for (const auto& b : engine.planned_buffers())
    if (b.second > largest.second) largest = b;
  const auto mib = [](std::uint64_t b) { return fmt::format("{:.1f} MiB", b / 1048576.0); };
  std::string msg = fmt::format(
      "train.memory_limit: this run is predicted to peak at {} resident ({} bytes), over the "
      "limit of {} ({} bytes). Its planned buffers take {} (largest: '{}', {}). To fit: lower "
      "train.batch_size (now {}; activation buffers scale with it)",
      mib(predicted), predicted, mib(*cfg.train.memory_limit), *cfg.train.memory_limit,
      mib(engine.planned_bytes()), largest.first, mib(largest.second), batch);
  if (engine.partition() < engine.num_parametric())
    msg += fmt::format(", or train more layers by ZO (method.partition, now {} of {}: ZO "
                       "layers keep no activations for backprop)",
                       engine.partition(), engine.num_parametric());
  if (cfg.train.memory_plan != config::MemoryPlan::kLean) msg += ", or set train.memory_plan lean";
  msg += ", or raise train.memory_limit. zotrain --dry-run prints the plan.";
  throw Error(msg);
}

// Exit code of a run stopped by a non-finite loss or gradient (README, zotrain --help).
constexpr int kExitDiverged = 3;

// What a diverged run prints: where, what, the likely causes with their current values, and the
// checkpoint that is left as it was.
std::string divergence_message(const config::ExperimentConfig& cfg, const EngineStep& s,
                               const RunState& st, const RunFolder& folder) {
  std::string msg = fmt::format(
      "training diverged at step {} (epoch {}, step {} of the epoch): the {} is {}; stopped "
      "before writing anything from it. Likely cause: ",
      st.global_step + 1, st.epoch + 1, st.step_in_epoch + 1,
      std::isfinite(s.loss) ? "ZO gradient estimate" : "batch loss",
      std::isfinite(s.loss) ? s.g : s.loss);
  const bool zo = cfg.method.name != config::Method::kFullBp;
  const bool bp = cfg.method.name != config::Method::kFullZo;
  const auto value = [](const std::optional<double>& v) {
    return v ? fmt::format("{}", *v) : std::string("auto");
  };
  std::vector<std::string> causes;
  if (zo) {
    causes.push_back(fmt::format("optimizer.lr = {} too large for the ZO part", value(cfg.optimizer.lr)));
    causes.push_back(fmt::format("zo.eps = {} (a perturbation too large or too small for the "
                                 "weights) or zo.grad_clip = {}",
                                 cfg.zo.eps, cfg.zo.grad_clip));
  }
  if (bp)
    causes.push_back(fmt::format("optimizer.{} = {} too large for the backprop part",
                                 zo ? "bp_lr" : "lr", value(zo ? cfg.optimizer.bp_lr : cfg.optimizer.lr)));
  for (std::size_t i = 0; i < causes.size(); ++i) msg += (i ? "; " : "") + causes[i];
  msg += ". ";
  msg += fs::exists(folder.checkpoint_path())
             ? fmt::format("The last good checkpoint, {}, is kept: lower the learning rate in {}/config.json "
                           "and continue with --resume {}.",
                           folder.checkpoint_path(), folder.dir(), folder.dir())
             : std::string("No checkpoint had been written yet (output.checkpoint_every).");
  return msg;
}

}  // namespace

int run_experiment(const RunRequest& req) {
  const std::string started = telemetry::utc_now();
  const config::ExperimentConfig& cfg = req.cfg;
  for (const std::string& w : cfg.warnings) spdlog::warn("{}", w);
  const int threads = resolve_threads(cfg.train.threads);

  // ---- everything that can fail on bad input happens before the output directory exists ----
  const int batch = static_cast<int>(config::resolve_batch_size(cfg));
  // Building the engine validates the architecture and the partition against the model.
  std::unique_ptr<Engine> engine = cfg.model.precision == config::Precision::kInt8
                                       ? make_int8_engine(cfg, batch, threads)
                                       : make_fp32_engine(cfg, batch, threads);
  const int C = engine->partition();
  const std::string root = config::resolve_path(cfg, cfg.data.root);
  RunData rd = load_run_data(cfg, root, batch, engine->input_floats(), seeds::data(cfg.seed));

  using Mode = RunFolder::Mode;
  const Mode mode = req.resume      ? Mode::kResume
                    : req.overwrite ? Mode::kOverwrite
                    : req.dry_run   ? Mode::kDryRun
                                    : Mode::kFresh;
  RunFolder folder(req.output_dir, "runs/" + cfg.name, mode);
  folder.check();
  TensorFile resume_file;
  std::string optimizer_read;
  if (req.resume) {
    resume_file = read_safetensors(folder.checkpoint_path());
    check_checkpoint(resume_file, folder.checkpoint_path(), cfg, C);  // before its optimizer file
    optimizer_read = read_optimizer_state(resume_file, folder.checkpoint_path());
  }
  TensorFile init_file;
  if (!req.init_from.empty()) {
    init_file = read_safetensors(checkpoint_of(req.init_from));
    check_format(init_file, checkpoint_of(req.init_from));
  }
  // The checkpoint's tensors go into the engine before the output directory is touched, so one
  // that does not fit the model is refused with nothing written.
  RunState st;
  const std::string source = req.resume ? folder.checkpoint_path() : req.init_from;
  try {
    if (req.resume) {
      engine->load(resume_file, source);
      st = restore_run_state(resume_file, source);
    } else if (!req.init_from.empty()) {
      engine->init_from(init_file, source);
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {  // a number or JSON in the metadata that does not parse
    throw Error(source + ": malformed checkpoint metadata (" + e.what() + ")");
  }

  // The effective config, in one canonical form: the method the partition makes (C = 0 is
  // Full BP, C = L Full ZO), C as a number, every "default" resolved by the engine, and the data
  // directory absolute so `--resume DIR` finds it.
  config::ExperimentConfig effective = cfg;
  effective.method.name = config::effective_method(C, engine->num_parametric());
  effective.method.partition = {config::Partition::Rule::kLayers, C};
  effective.data.root = fs::absolute(root).lexically_normal().string();
  engine->write_effective(effective);

  const auto paper = engine->paper_memory();
  const std::size_t planned = engine->planned_bytes();
  const std::uint64_t predicted = predict_peak_rss(*engine, rd, threads);
  check_memory_limit(cfg, *engine, predicted, batch);
  json plan = plan_json(effective, *engine, batch, threads, rd.bytes);
  plan["memory"]["predicted_peak_bytes"] = predicted;
  spdlog::info("{}: {} {} on {} ({} train{} / {} test samples), C = {} of {} ({} ZO + {} BP params)",
               cfg.name, config::name(effective.method.name), config::name(cfg.model.arch),
               config::name(cfg.data.dataset), rd.train_count,
               rd.val ? fmt::format(" / {} validation", rd.val_count) : std::string(), rd.test_count, C,
               engine->num_parametric(), engine->params_zo(), engine->params_bp());
  Reporter rep(req.progress, req.quiet);

  // ---- from here on the output directory is ours ----
  folder.claim();
  if (req.dry_run) {
    rep.plan(cfg.name, *engine, paper, planned, predicted);
    folder.write_config(effective);
    plan["dry_run"] = true;
    plan["memory"]["peak_rss_bytes"] = telemetry::peak_rss_bytes();  // data loaded, nothing trained
    plan["run"] = provenance(req, threads, started);
    folder.write_summary(plan);
    spdlog::info("dry run: wrote {}/config.json and summary.json", folder.dir());
    return 0;
  }
  if (req.resume) {
    finish_interrupted_save(folder.checkpoint_path(), optimizer_read);
    // Keep the records of finished epochs (and the epoch-0 evaluation) and of earlier steps.
    folder.truncate_records(
        "metrics.jsonl",
        [](const json& j, std::int64_t epoch) { return j.value("epoch", std::int64_t{0}) <= epoch; },
        st.epoch);
    folder.truncate_records(
        "steps.jsonl",
        [](const json& j, std::int64_t step) { return j.value("step", std::int64_t{0}) <= step; },
        st.global_step);
    spdlog::info("resuming {} at epoch {}, step {} (global step {})", folder.dir(), st.epoch + 1,
                 st.step_in_epoch, st.global_step);
  } else if (!req.init_from.empty()) {
    spdlog::info("initialised parameters from {}", req.init_from);
  }
  folder.write_config(effective);

  g_interrupted.store(0);
  auto previous_int = std::signal(SIGINT, on_stop_signal);
  auto previous_term = std::signal(SIGTERM, on_stop_signal);
  LoopResult r = train_loop(effective, *engine, rd, folder, rep, st);
  std::signal(SIGINT, previous_int);
  std::signal(SIGTERM, previous_term);

  if (r.diverged) {  // never overwrite the last good checkpoint with these weights
    spdlog::error("{}", divergence_message(effective, r.bad_step, st, folder));
    return kExitDiverged;
  }
  save_checkpoint(folder.checkpoint_path(), *engine, effective, st);
  if (r.interrupted) {
    spdlog::warn("interrupted: checkpoint saved to {} (continue with --resume {})",
                 folder.checkpoint_path(), folder.dir());
    return 128 + g_interrupted.load();
  }
  if (r.last_eval.test.accuracy < 0) {  // e.g. resuming a finished run: the final accuracy
    PhaseTimes eval_times;
    ScopedPhase t(eval_times, Phase::kEval);
    r.last_eval = evaluate_all(*engine, rd);
  }

  const std::uint64_t rss = telemetry::peak_rss_bytes();
  // Totals include a partial epoch left by train.max_steps.
  PhaseTimes all = st.total_times;
  all += st.acc.times;
  const double train_seconds = st.train_seconds + st.acc.times.total();
  const double epochs_done =
      static_cast<double>(st.epoch) +
      (st.step_in_epoch > 0
           ? static_cast<double>(st.step_in_epoch) / rd.train->batches_per_epoch()
           : 0.0);
  json summary = plan;
  summary["test_accuracy"] = or_null(r.last_eval.test.accuracy);
  summary["test_loss"] = or_null(r.last_eval.test.loss);
  if (rd.val) {
    summary["val_accuracy"] = or_null(r.last_eval.val.accuracy);
    summary["val_loss"] = or_null(r.last_eval.val.loss);
  }
  summary["train_seconds"] = train_seconds;
  summary["epochs"] = epochs_done;
  summary["steps"] = st.global_step;
  summary["step_seconds_mean"] =
      st.global_step > 0 ? (all.total() - all.get(Phase::kEval)) / static_cast<double>(st.global_step)
                         : 0.0;
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
  summary["run"] = provenance(req, threads, started);
  folder.write_summary(summary);

  if (req.quiet) return 0;
  const std::string val = rd.val ? fmt::format(" (validation {:.2f}%)", r.last_eval.val.accuracy)
                                 : std::string();
  std::printf("\n%s: test accuracy %.2f%%%s after %.2f epochs (%lld steps), %.2f s\n",
              cfg.name.c_str(), r.last_eval.test.accuracy, val.c_str(), epochs_done,
              static_cast<long long>(st.global_step), train_seconds);
  rep.tables(all, epochs_done, paper, planned, rss);
  std::printf("\n  outputs in %s/\n", folder.dir().c_str());
  return 0;
}

}  // namespace zt::run
