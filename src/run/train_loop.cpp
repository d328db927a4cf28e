#include "train_loop.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "run_report.hpp"
#include "zotrain/core/seeds.hpp"
#include "zotrain/run/checkpoint.hpp"

namespace zt::run {
namespace fs = std::filesystem;
using nlohmann::json;
using telemetry::Phase;
using telemetry::ScopedPhase;

namespace {
std::atomic<int> g_signal{0};
extern "C" void on_stop_signal(int sig) { g_signal.store(sig); }
}  // namespace

StopSignals::StopSignals() {
  g_signal.store(0);
  previous_int_ = std::signal(SIGINT, on_stop_signal);
  previous_term_ = std::signal(SIGTERM, on_stop_signal);
}
StopSignals::~StopSignals() {
  std::signal(SIGINT, previous_int_);
  std::signal(SIGTERM, previous_term_);
}
int StopSignals::signal() { return g_signal.load(); }

Evals evaluate_all(Engine& engine, RunData& rd) {
  Evals e;
  e.test = engine.evaluate(*rd.test);
  if (rd.val) e.val = engine.evaluate(*rd.val);
  return e;
}

namespace {


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


// What every rank does next, agreed in one collective (one rank: read off locally): stop (a stop
// signal reached some rank), or write a checkpoint by time (rank 0's clock), or neither.
struct Control {
  bool stop = false, checkpoint = false;
};
// Its time is MPI time of the open epoch.
Control agree(Ranks& ranks, bool due, telemetry::PhaseTimes& times) {
  const std::uint32_t mine =
      (StopSignals::signal() != 0 ? 2u : 0u) | (ranks.rank() == 0 && due ? 1u : 0u);
  if (ranks.single()) return {mine >= 2, mine == 1};
  ScopedPhase t(times, Phase::kMpi);
  const std::uint32_t all = ranks.max(mine, Exchange::kControl);
  return {all >= 2, all == 1};
}

}  // namespace

// The training loop: epochs of steps from `st` on, with evaluation, metrics and checkpoints.
LoopResult train_loop(const config::ExperimentConfig& cfg, Engine& engine, RunData& rd,
                      const RunFolder& folder, Reporter& rep, RunState& st, Ranks& ranks) {
  BatchSource& batcher = *rd.train;
  const std::int64_t epochs = cfg.train.epochs, max_steps = cfg.train.max_steps.value_or(0);
  const std::int64_t per_epoch = batcher.batches_per_epoch();
  const std::int64_t planned = max_steps > 0 ? std::min(max_steps, epochs * per_epoch)
                                             : epochs * per_epoch;
  rep.start(planned, st.global_step);
  LoopResult r;
  r.divergence.partition = engine.partition();
  r.divergence.layers = engine.num_parametric();
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
  // output.checkpoint_minutes: a checkpoint once that much wall time has passed since the last
  // one (or the start), mid-epoch at the step it falls on; a power cut loses at most that.
  using Clock = std::chrono::steady_clock;
  const double every_seconds = cfg.output.checkpoint_minutes * 60.0;
  Clock::time_point last_checkpoint = Clock::now();
  const auto time_due = [&] {
    return every_seconds > 0 &&
           std::chrono::duration<double>(Clock::now() - last_checkpoint).count() >= every_seconds;
  };
  bool stopped_early = false;
  for (; st.epoch < epochs; ++st.epoch) {
    const json hyper = engine.begin_epoch(st.epoch);
    batcher.start_epoch(static_cast<int>(st.epoch));
    for (; st.step_in_epoch < per_epoch; ++st.step_in_epoch) {
      // By time, mid-epoch, the state after the previous step (the epoch's last step is
      // checkpointed below, after its record).
      const Control next = agree(ranks, st.step_in_epoch > 0 && time_due(), st.acc.times);
      if (next.stop) {
        r.interrupted = true;
        break;
      }
      if (next.checkpoint) {
        if (!save_checkpoint_if_finite(cfg, engine, folder, st, r)) break;
        last_checkpoint = Clock::now();
      }
      if (max_steps > 0 && st.global_step >= max_steps) {
        stopped_early = true;
        break;
      }
      const std::uint64_t step_seed = seeds::step(cfg.seed, st.global_step);
      const EngineStep s =
          engine.step(batcher, static_cast<int>(st.step_in_epoch), step_seed,
                      static_cast<std::uint64_t>(st.global_step), st.acc.times);
      // A non-finite loss, gradient or tensor after the update: the weights are garbage from here.
      if (!std::isfinite(s.loss) || !std::isfinite(s.g) || s.nonfinite) {
        r.diverged = true;
        r.divergence.step = st.global_step + 1;
        r.divergence.epoch = st.epoch + 1;
        r.divergence.step_in_epoch = st.step_in_epoch + 1;
        r.divergence.stats = s;
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
    // zo.cache_direction: the last step's update, still pending, checked before anything of the
    // epoch is evaluated or written.
    if (state_diverged(engine, st, r)) break;

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
    const bool every = cfg.output.checkpoint_every > 0 &&
                       (st.epoch + 1) % cfg.output.checkpoint_every == 0;
    if (st.epoch + 1 < epochs && (every || agree(ranks, time_due(), st.acc.times).checkpoint)) {
      RunState next = st;
      ++next.epoch;
      if (!save_checkpoint_if_finite(cfg, engine, folder, next, r)) break;
      last_checkpoint = Clock::now();
    }
  }
  return r;
}

bool state_diverged(Engine& engine, const RunState& st, LoopResult& r) {
  const NonFinite bad = engine.check_finite();
  if (!bad) return false;
  // The state's last step made it (with zo.cache_direction: its update, applied just now).
  r.diverged = true;
  r.divergence.step = st.global_step;
  r.divergence.epoch = st.step_in_epoch > 0 ? st.epoch + 1 : st.epoch;
  r.divergence.step_in_epoch = st.step_in_epoch;
  r.divergence.stats = EngineStep{};
  r.divergence.stats.nonfinite = bad;
  r.divergence.partition = engine.partition();
  r.divergence.layers = engine.num_parametric();
  return true;
}

bool save_checkpoint_if_finite(const config::ExperimentConfig& cfg, Engine& engine,
                               const RunFolder& folder, const RunState& st, LoopResult& r) {
  if (state_diverged(engine, st, r)) return false;
  if (folder.writes()) save_checkpoint(folder.checkpoint_path(), engine, cfg, st);
  return true;
}

std::string divergence_message(const config::ExperimentConfig& cfg, const Divergence& d,
                               const RunFolder& folder) {
  const EngineStep& s = d.stats;
  const std::string where =
      d.step == 0 ? std::string("before the first step")
      : d.step_in_epoch > 0
          ? fmt::format("at step {} (epoch {}, step {} of the epoch)", d.step, d.epoch, d.step_in_epoch)
          : fmt::format("at step {} (epoch {}, its last step)", d.step, d.epoch);
  const int C = d.partition, L = d.layers;
  std::string what;
  if (s.nonfinite)
    what = fmt::format("tensor '{}' of the {} holds Inf or NaN after the update", s.nonfinite.tensor,
                       s.nonfinite.zo ? fmt::format("ZO layers 1..{}", C)
                                      : fmt::format("backprop layers {}..{}", C + 1, L));
  else
    what = fmt::format("the {} is {}", std::isfinite(s.loss) ? "ZO gradient estimate" : "batch loss",
                       std::isfinite(s.loss) ? s.g : s.loss);
  std::string msg = fmt::format(
      "training diverged {}: {}; stopped before writing anything from it. Likely cause: ", where, what);
  // The parts the evidence points at: a tensor's own part, else every part the method has.
  const bool zo = s.nonfinite ? s.nonfinite.zo : cfg.method.name != config::Method::kFullBp;
  const bool bp = s.nonfinite ? !s.nonfinite.zo : cfg.method.name != config::Method::kFullZo;
  const bool has_zo = cfg.method.name != config::Method::kFullBp;
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
                                 has_zo ? "bp_lr" : "lr",
                                 value(has_zo ? cfg.optimizer.bp_lr : cfg.optimizer.lr)));
  // A backprop tensor overflowing behind a ZO part may be the ZO weights' doing: they feed it.
  if (bp && !zo && has_zo)
    causes.push_back(fmt::format("optimizer.lr = {} of the ZO part, whose outputs feed it",
                                 value(cfg.optimizer.lr)));
  for (std::size_t i = 0; i < causes.size(); ++i) msg += (i ? "; " : "") + causes[i];
  msg += ". ";
  msg += fs::exists(folder.checkpoint_path())
             ? fmt::format("The last good checkpoint, {}, is kept: lower the learning rate in {}/config.json "
                           "and continue with --resume {}.",
                           folder.checkpoint_path(), folder.dir(), folder.dir())
             : fmt::format("No checkpoint had been written yet (output.checkpoint_every, "
                           "output.checkpoint_minutes): lower the learning rate in {}/config.json "
                           "and start the run again with --resume {}.",
                           folder.dir(), folder.dir());
  return msg;
}

}  // namespace zt::run
