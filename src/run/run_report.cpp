#include "run_report.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "zotrain/core/build_info.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/kernels/isa.hpp"
#include "zotrain/run/checkpoint.hpp"
#include "zotrain/telemetry/host.hpp"
#include "zotrain/telemetry/memory.hpp"
#include "zotrain/telemetry/rss.hpp"

namespace zt::run {
using nlohmann::json;
using telemetry::Phase;
using telemetry::PhaseTimes;

json or_null(double x) { return x >= 0 ? json(x) : json(nullptr); }

namespace {
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

}  // namespace

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

// 512 MiB of RAM less the GPU's default 64 MiB and about 48 MiB that the kernel and a minimal
// (Lite) system keep: an estimate, not a measurement.
constexpr std::uint64_t kBoardBudget = std::uint64_t{400} << 20;

bool fits_board(std::uint64_t predicted) { return predicted <= kBoardBudget; }

void log_board_fit(std::uint64_t predicted) {
  const auto mib = [](std::uint64_t b) { return (b + (1 << 19)) >> 20; };
  if (fits_board(predicted)) {
    spdlog::info("predicted peak {} MiB: fits a 512 MB Raspberry Pi Zero 2 W (leaves {} MiB of "
                 "the about {} MiB it has for a process)",
                 mib(predicted), mib(kBoardBudget - predicted), mib(kBoardBudget));
  } else {
    spdlog::info("predicted peak {} MiB: does not fit a 512 MB Raspberry Pi Zero 2 W ({} MiB over "
                 "the about {} MiB it has for a process; train.batch_size, method.partition or "
                 "train.memory_plan change it)",
                 mib(predicted), mib(predicted - kBoardBudget), mib(kBoardBudget));
  }
}

// Building the engine allocates and touches every planned buffer, and opening the data reads what
// it keeps, so most of the peak is resident already; training adds the checkpoint's copy of the
// parameters and optimizer state (made at every save) and the batches the data sources fill later
// (prefetch buffers, read scratch: counted in dataset_bytes), plus the worker threads' stacks and
// allocator arenas. The set-up's own high-water mark (e.g. HDF5's checks at open) stays if it is
// higher.
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

json run_summary(json plan, const LoopResult& r, const RunState& st, const RunData& rd,
                 const Engine& engine) {
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
  json summary = std::move(plan);
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
  summary["weights_digest"] = weights_digest(engine);
  return summary;
}

}  // namespace zt::run
