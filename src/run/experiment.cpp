// run_experiment composes a run from its parts: the engine (src/run/*_engine.cpp), the data
// (run_data.cpp), the run folder and resume state (run_folder.cpp, run_state.cpp, checkpoint.cpp),
// the loop (train_loop.cpp) and what the run reports (run_report.cpp, reporter.cpp).
#include "zotrain/run/experiment.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "reporter.hpp"
#include "data_parallel.hpp"
#include "run_report.hpp"
#include "run_state.hpp"
#include "train_loop.hpp"
#include "zotrain/run/engine.hpp"
#include "zotrain/run/run_folder.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/core/seeds.hpp"
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

int use_threads(int requested) {
#ifdef ZT_OPENMP
  const int n = requested > 0 ? requested : omp_get_num_procs();
  omp_set_num_threads(n);
  return n;
#else
  (void)requested;
  return 1;
#endif
}

int run_experiment(const RunRequest& req) {
  const std::string started = telemetry::utc_now();
  const config::ExperimentConfig& cfg = req.cfg;
  for (const std::string& w : cfg.warnings) spdlog::warn("{}", w);
  const int threads = use_threads(static_cast<int>(cfg.train.threads.value_or(0)));

  // ---- everything that can fail on bad input happens before the output directory exists ----
  const int batch = static_cast<int>(config::resolve_batch_size(cfg));
  // Building the engine validates the architecture and the partition against the model.
  Ranks& ranks = req.ranks != nullptr ? *req.ranks : single_rank();
  std::unique_ptr<Engine> engine =
      cfg.model.precision == config::Precision::kInt8
          ? make_int8_engine(cfg, batch, threads, kernels::best_isa(), &ranks)
          : make_fp32_engine(cfg, batch, threads, kernels::best_isa(), &ranks);
  const int C = engine->partition();
  const std::string root = config::resolve_path(cfg, cfg.data.root);
  RunData rd = load_run_data(cfg, root, batch, engine->input_floats(), seeds::data(cfg.seed));

  using Mode = RunFolder::Mode;
  const Mode mode = req.resume      ? Mode::kResume
                    : req.overwrite ? Mode::kOverwrite
                    : req.dry_run   ? Mode::kDryRun
                                    : Mode::kFresh;
  RunFolder folder(req.output_dir, "runs/" + cfg.name, mode, /*writer=*/ranks.rank() == 0);
  folder.check();
  // --resume of a run killed before its first checkpoint: started afresh from its config.json.
  const bool resume = req.resume && !folder.restarts();
  TensorFile resume_file;
  std::string optimizer_read;
  RunState st;
  if (resume) {
    resume_file = read_safetensors(folder.checkpoint_path());
    // The checkpoint's model and run state, before the optimizer file it names.
    check_checkpoint(resume_file, folder.checkpoint_path(), cfg, C);
    st = restore_run_state(resume_file, folder.checkpoint_path());
    check_run_state(st, folder.checkpoint_path(), cfg, rd.train->batches_per_epoch(), batch);
    optimizer_read = read_optimizer_state(resume_file, folder.checkpoint_path());
  }
  TensorFile init_file;
  // summary.json's run.init_from: where the parameters came from (a resumed run's checkpoint
  // carries it).
  json init_record = st.init_from;
  if (!req.init_from.empty()) {
    const std::string path = checkpoint_of(req.init_from);
    init_file = read_safetensors(path);
    check_format(init_file, path);
    // The digest the source run recorded (its summary.json's weights_digest), else computed.
    const auto d = init_file.metadata.find("weights_digest");
    init_record = {{"path", fs::absolute(path).lexically_normal().string()},
                   {"weights_digest", d != init_file.metadata.end() ? d->second
                                                                     : weights_digest(init_file)}};
    st.init_from = init_record;
  }
  // The checkpoint's tensors go into the engine before the output directory is touched, so one
  // that does not fit the model is refused with nothing written.
  const std::string source = resume ? folder.checkpoint_path() : req.init_from;
  try {
    if (resume) {
      engine->load(resume_file, source);
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
  // The ZO part as the config resolved it (zo.preset fills the zo.* keys not given).
  const std::string zo_part =
      C == 0 ? std::string()
             : fmt::format("; ZO: zo.preset {}, estimator {}, perturbation {}, q = {}",
                           config::name(effective.zo.preset), config::name(effective.zo.estimator),
                           config::name(effective.zo.perturbation), effective.zo.queries);
  spdlog::info("{}: {} {} {} on {} ({} train{} / {} test samples), C = {} of {} ({} ZO + {} BP "
               "params){}",
               cfg.name, config::name(effective.method.name), config::name(cfg.model.precision),
               config::name(cfg.model.arch), config::name(cfg.data.dataset), rd.train_count,
               rd.val ? fmt::format(" / {} validation", rd.val_count) : std::string(), rd.test_count, C,
               engine->num_parametric(), engine->params_zo(), engine->params_bp(), zo_part);
  if (!ranks.single())
    spdlog::info("data-parallel over {} ranks: each runs layers 1..{} of {} of the probes on its "
                 "share of every batch of {}, the rest on the whole batch",
                 ranks.size(), engine->sharded_layers(), engine->layers().size(), batch);
  plan["memory"]["fits_512mb_board"] = fits_board(predicted);
  if (req.dry_run) log_board_fit(predicted);
  Reporter rep(req.progress, req.quiet);

  // ---- from here on the output directory is ours (rank 0's: the others never write) ----
  ranks.barrier();  // every rank has read the checkpoint before rank 0 finishes its save
  folder.claim();
  if (req.dry_run) {
    rep.plan(cfg.name, *engine, paper, planned, predicted);
    folder.write_config(effective);
    plan["dry_run"] = true;
    plan["memory"]["peak_rss_bytes"] = telemetry::peak_rss_bytes();  // data loaded, nothing trained
    plan["run"] = provenance(req, threads, started);
    if (!init_record.is_null()) plan["run"]["init_from"] = init_record;
    folder.write_summary(plan);
    spdlog::info("dry run: wrote {}/config.json and summary.json", folder.dir());
    return 0;
  }
  if (folder.restarts()) {
    spdlog::info("no checkpoint yet: starting the run afresh from {}/config.json", folder.dir());
  } else if (resume) {
    if (folder.writes()) finish_interrupted_save(folder.checkpoint_path(), optimizer_read);
    // Keep the records of finished epochs (and the epoch-0 evaluation, unless the run resumes
    // before its first step, which writes it again) and of earlier steps.
    folder.truncate_records(
        "metrics.jsonl",
        [](const json& j, std::int64_t epoch) { return j.value("epoch", std::int64_t{0}) <= epoch; },
        st.global_step == 0 && effective.train.eval_at_start ? -1 : st.epoch);
    folder.truncate_records(
        "steps.jsonl",
        [](const json& j, std::int64_t step) { return j.value("step", std::int64_t{0}) <= step; },
        st.global_step);
    spdlog::info("resuming {} at epoch {}, step {} (global step {})", folder.dir(), st.epoch + 1,
                 st.step_in_epoch, st.global_step);
  } else if (!req.init_from.empty()) {
    spdlog::info("initialised parameters from {} (weights digest {})",
                 init_record["path"].get<std::string>(),
                 init_record["weights_digest"].get<std::string>());
    // config.json does not say where the parameters came from: a checkpoint of them, before
    // config.json, makes --resume of a run killed before its first own checkpoint start from
    // them too (never afresh from a random initialisation).
    if (folder.writes()) save_checkpoint(folder.checkpoint_path(), *engine, effective, st);
  }
  folder.write_config(effective);

  LoopResult r;
  int stop_signal = 0;
  {
    StopSignals signals;
    const ExchangeStats before = ranks.stats();
    const std::int64_t first_step = st.global_step;
    r = train_loop(effective, *engine, rd, folder, rep, st, ranks);
    if (!ranks.single())
      plan["parallel"] = parallel_json(ranks, engine->sharded_layers(), engine->layers(),
                                       ranks.stats() - before, st.global_step - first_step);
    stop_signal = StopSignals::signal();
  }

  // Never overwrite the last good checkpoint with non-finite weights (also when interrupted).
  if (r.diverged || !save_checkpoint_if_finite(effective, *engine, folder, st, r)) {
    if (folder.writes()) spdlog::error("{}", divergence_message(effective, r.divergence, folder));
    return kExitDiverged;
  }
  if (r.interrupted) {
    spdlog::warn("interrupted: checkpoint saved to {} (continue with --resume {})",
                 folder.checkpoint_path(), folder.dir());
    return 128 + stop_signal;
  }
  if (r.last_eval.test.accuracy < 0) {  // e.g. resuming a finished run: the final accuracy
    PhaseTimes eval_times;
    ScopedPhase t(eval_times, Phase::kEval);
    r.last_eval = evaluate_all(*engine, rd);
  }

  json summary = run_summary(std::move(plan), r, st, rd, *engine);
  const std::uint64_t rss = summary["memory"]["peak_rss_bytes"].get<std::uint64_t>();
  PhaseTimes all = st.total_times;
  all += st.acc.times;
  const double train_seconds = summary["train_seconds"].get<double>();
  const double epochs_done = summary["epochs"].get<double>();
  summary["run"] = provenance(req, threads, started);
  if (!init_record.is_null()) summary["run"]["init_from"] = init_record;
  folder.write_summary(summary);

  if (req.quiet || !folder.writes()) return 0;
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
