// The zotrain binary: CLI11 parsing, config merge, run, exit codes
// (0 done, 1 internal failure, 2 bad input or an output that cannot be written, 3 diverged,
// 130 / 143 interrupted by SIGINT / SIGTERM with a checkpoint saved).
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <chrono>
#include <memory>
#include <thread>
#include <cstdio>
#include <limits>
#include <filesystem>
#include <string>
#include <vector>

#include "bench.hpp"
#include "zotrain/config/catalogue.hpp"
#include "zotrain/config/config.hpp"
#include "zotrain/config/methods.hpp"
#include "zotrain/data/synthetic_points.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/dist/mpi.hpp"
#include "zotrain/kernels/isa.hpp"
#include "zotrain/run/experiment.hpp"
#include "zotrain/run/evaluate.hpp"
#include "zotrain/train/zo_estimator.hpp"

namespace {

std::string methods_help() {
  std::string s =
      "Methods (method.name). C = method.partition counts parametric layers: theta_1..theta_C are\n"
      "trained by zeroth-order SPSA (two forward passes, seed-regenerated Gaussian perturbation),\n"
      "theta_C+1..theta_L by backprop (";
  for (const auto& a : zt::config::architectures())
    s += std::string(a.id == zt::config::Arch{} ? "" : ", ") + a.name + ": L = " + std::to_string(a.layers);
  s += "); named settings: zo-feat-cls1 = L-2, zo-feat-cls2 = L-1.\n";
  for (const auto& m : zt::config::methods()) s += std::string("  ") + m.name + "\n      " + m.summary + "\n";
  s += "C = 0 is Full BP and C = L Full ZO whatever method.name says (the run records the method\n"
       "its C makes), so method.partition alone sweeps the knob.\n";
  s += "With model.precision = int8 every method trains an 8-bit network with integer arithmetic\n"
       "(NITI): full_bp = integer backprop with b_bp-bit updates, full_zo = sparse uniform int8\n"
       "perturbation (int8.r_max, int8.p_zero) with a sign gradient and b_zo-bit updates,\n"
       "elastic_zo = ElasticZO-INT8. int8.sign = float compares dequantised losses (the paper's\n"
       "INT8), integer keeps the whole step integer-only (INT8*; integer_eq12: the paper's Eq. 12\n"
       "as written). Batch size defaults to 256.\n";
  s += "\nEstimators (zo.estimator) of the ZO part; zo.queries = q directions per step:\n";
  for (const auto& e : zt::config::estimators())
    s += std::string("  ") + e.name + "\n      " + e.summary + "\n      supports " +
         zt::config::supports_text(e) + "\n";
  s += "\nPresets (zo.preset) of the zo.* keys; keys given explicitly override them:\n";
  for (const auto& p : zt::config::presets()) {
    s += std::string("  ") + p.name + " (" + zt::config::supports_text(p) + ")\n      " + p.summary +
         "\n     ";
    for (const auto& [key, value] : p.values) s += " " + std::string(key) + "=" + std::string(value);
    s += "\n";
  }
  return s;
}

// An integer flag's check (a CLI11 transform), run on its text before CLI11 converts it: decimal digits (a leading
// '-' for signed types) that std::from_chars reads whole into T, from lo to hi, handed on in
// canonical form. Anything else is
// one error naming the flag and the range ("--threads: expected an integer from 1 to 1024, got
// 'abc'"), exit 2; --help shows the range after the type (INT:1..1024).
template <class T>
CLI::Validator int_in(T lo, T hi, std::string shown = "") {
  if (shown.empty()) shown = std::to_string(lo) + ".." + std::to_string(hi);
  const std::string range = std::to_string(lo) + " to " + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        T x{};
        const char* end = text.data() + text.size();
        const auto r = std::from_chars(text.data(), end, x);
        if (r.ec == std::errc() && r.ptr == end && x >= lo && x <= hi) {
          text = std::to_string(x);  // CLI11 converts with base 0: "010" would be 8
          return "";
        }
        return "expected an integer from " + range + ", got '" + text + "'";
      },
      shown);
}

// The command line as a shell would re-run it: words with characters a shell treats specially
// are single-quoted.
std::string command_line(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) {
    const std::string w = argv[i];
    const bool plain = !w.empty() && w.find_first_not_of(
                                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                         "0123456789-_./=:,+@%") == std::string::npos;
    std::string q = "'";
    for (char c : w) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += (i ? " " : "") + (plain ? w : q + "'");
  }
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"zotrain " ZT_VERSION
               " - train small neural networks on ARM boards with ElasticZO (zeroth-order + "
               "backprop), Full ZO or Full BP.",
               "zotrain"};
  app.footer("\n" + methods_help() + "\nConfig keys (set in the JSON file or with --set KEY=VALUE). A config file is at most 1 MiB\n"
             "of JSON with each key once; a value outside its key's range below, or a number that\n"
             "reads as 0 or infinity (1e-400, 1e999), is refused (exit 2):\n" +
             zt::config::keys_help() +
             "\nOutputs: config.json (the resolved config), metrics.jsonl (one JSON object per epoch),\n"
             "steps.jsonl (train.log_every), summary.json (results and the run's provenance),\n"
             "checkpoint.safetensors (weights), optimizer.safetensors (Adam state). Logs and progress\n"
             "go to stderr, results to stdout.\n"
             "Exit codes: 0 ok, 1 internal error, 2 bad input (a config, flag, data file or\n"
             "checkpoint; a run directory another zotrain is writing; or train.memory_limit\n"
             "exceeded) or an output file that cannot be written\n"
             "(a full disk, a read-only file system: the last checkpoint is kept),\n"
             "3 training diverged (a non-finite loss, gradient or weight; the last checkpoint is kept),\n"
             "130 / 143 interrupted by Ctrl-C / SIGTERM (checkpoint saved).\n"
             "Several processes or boards: mpirun -np N [--hostfile FILE] zotrain --config FILE trains\n"
             "one model data-parallel, bit-identical to one process (README, \"Training on several boards\").\n"
             "Example: zotrain --config configs/quickstart.json --set method.partition=3 --set optimizer.lr=0.002");
  std::string config_path, output_dir, resume_dir, init_from;
  std::vector<std::string> overrides;
  int threads = -1;  // -1: train.threads decides
  bool dry_run = false, overwrite = false, quiet = false, no_progress = false;
  app.add_option("-c,--config", config_path, "Experiment config (JSON)");
  app.add_option("-s,--set", overrides, "Override a config key: KEY=VALUE (dotted path; repeatable)")
      ->type_name("KEY=VALUE");
  app.add_option("-o,--output-dir", output_dir,
                 "Output directory (default: output.dir, else runs/<name>)");
  app.add_option("-t,--threads", threads, "Threads (overrides train.threads, whose auto = all cores)")
      ->transform(int_in(1, zt::config::kMaxThreads));
  app.add_flag("--dry-run", dry_run,
               "Build the model and the memory plan, validate the data, write summary.json; no training");
  app.add_option("--resume", resume_dir,
                 "Continue the run in DIR from its checkpoint, or start it from DIR/config.json when it has "
                 "none yet (--set still applies; one process per DIR: a second is refused)");
  app.add_option("--init-from", init_from,
                 "Initialise parameters from a checkpoint (a run directory or a .safetensors "
                 "file), then train afresh");
  app.add_flag("--overwrite", overwrite, "Allow a fresh run to replace a non-empty output directory");
  app.add_flag("--no-progress", no_progress, "No live progress bar (one line per epoch only)");
  app.add_flag("-q,--quiet", quiet, "Only warnings and errors on stderr");
  std::string synthetic_dir;
  zt::data::SyntheticOptions synth;
  app.add_option("--make-synthetic-modelnet", synthetic_dir,
                 "Write the deterministic synthetic point-cloud set (ModelNet40 HDF5 layout: "
                 "ply_data_train0.h5, ply_data_test0.h5, shape_names.txt) into DIR and exit")
      ->type_name("DIR");
  constexpr int kMaxInt = std::numeric_limits<int>::max();
  app.add_option("--synthetic-classes", synth.classes, "Synthetic set: shape classes")
      ->capture_default_str()
      ->transform(int_in(10, zt::data::synthetic_shape_count()));
  app.add_option("--synthetic-train", synth.train_per_class, "Synthetic set: training samples per class")
      ->capture_default_str()
      ->transform(int_in(1, kMaxInt));
  app.add_option("--synthetic-test", synth.test_per_class, "Synthetic set: test samples per class")
      ->capture_default_str()
      ->transform(int_in(1, kMaxInt));
  app.add_option("--synthetic-seed", synth.seed, "Synthetic set: seed")
      ->capture_default_str()
      ->transform(int_in<std::uint64_t>(0, std::numeric_limits<std::uint64_t>::max(), "0..2^64-1"));
  zt::cli::BenchOptions bench_opt;
  CLI::App* bench = app.add_subcommand(
      "bench",
      "Micro-benchmark for the board: throughput of every kernel path (reference, portable, neon,\n"
      "neon-dot where available) on the LeNet-5 and PointNet shapes, per-phase step times of FP32\n"
      "and int8 training steps (LeNet-5, synthetic input, no data files) and the int8/FP32 ratio.");
  bench->add_option("-t,--threads", bench_opt.threads, "Threads (0 = all cores)")
      ->capture_default_str()
      ->transform(int_in(0, zt::config::kMaxThreads));
  bench->add_flag("--quick", bench_opt.quick, "One call per figure and tiny batches (smoke test; figures meaningless)");
  bench->add_flag("--json", bench_opt.json, "Print one JSON object instead of the tables");
  bench->add_option("--only", bench_opt.only, "Only one part: kernels or steps")
      ->check(CLI::IsMember({"kernels", "steps"}));
  bench->add_option("--run-steps", bench_opt.run_steps,
                    "Run exactly N training steps of --method/--precision and nothing else "
                    "(scripts/count-insns.sh)")
      ->type_name("N")
      ->transform(int_in(0, kMaxInt));
  std::vector<std::string> setting_keys;
  for (const auto& n : zt::config::named_settings()) setting_keys.emplace_back(n.key);
  bench->add_option("--method", bench_opt.method,
                    "--run-steps: " + zt::config::named_setting_keys())
      ->capture_default_str()
      ->check(CLI::IsMember(setting_keys));
  const auto precision_texts = zt::config::choices<zt::Precision>();
  const std::vector<std::string> precisions(precision_texts.begin(), precision_texts.end());
  bench->add_option("--precision", bench_opt.precision,
                    "--run-steps: " + CLI::detail::join(precisions, " or "))
      ->capture_default_str()
      ->check(CLI::IsMember(precisions));
  bench->add_option("--batch", bench_opt.batch, "--run-steps: batch size (default: FP32 32, int8 256)")
      ->transform(int_in(1, zt::config::kMaxBatchSize));
  bench->add_flag("--cache-direction", bench_opt.cache_direction,
                  "steps with zo.cache_direction (z drawn once per step into a buffer)");
  // The FP32 sources that need no PeZO options (config::PerturbationInfo::per_element).
  std::vector<std::string> bench_sources;
  for (const auto& p : zt::config::perturbations())
    if (p.precisions.fp32 && p.per_element) bench_sources.emplace_back(p.name);
  std::string bench_perturbation(zt::config::name(bench_opt.perturbation));
  bench->add_option("--perturbation", bench_perturbation,
                    "FP32 steps' zo.perturbation: " + CLI::detail::join(bench_sources, ", "))
      ->capture_default_str()
      ->check(CLI::IsMember(bench_sources));
  bench->footer(
      "The kernel path the trainers use is the fastest available one; ZT_ISA=reference|portable|neon|\n"
      "neon-dot forces another (e.g. ZT_ISA=portable zotrain bench --only steps). Timings under qemu\n"
      "mean nothing; scripts/count-insns.sh counts instructions there instead.");
  zt::run::EvalRequest eval_req;
  CLI::App* eval = app.add_subcommand(
      "eval",
      "Evaluate a checkpoint on the test split of its data set (--validation: the data.validation\n"
      "split held out of its training set; another data set via --set\n"
      "data.root=... / data.dataset=...): prints its loss and accuracy; trains and writes nothing.");
  eval->add_option("target", eval_req.target,
                   "Run directory (its checkpoint.safetensors and config.json) or checkpoint file")
      ->required();
  eval->add_option("-c,--config", eval_req.config_path,
                   "Config to build the model from (default: the run's config.json, else the one "
                   "stored in the checkpoint)");
  eval->add_option("-s,--set", eval_req.overrides, "Override a config key: KEY=VALUE (repeatable)")
      ->type_name("KEY=VALUE");
  eval->add_flag("--json", eval_req.json, "Print one JSON object instead of a line");
  eval->add_option("-t,--threads", eval_req.threads, "Threads (0 = all cores)")
      ->capture_default_str()
      ->transform(int_in(0, zt::config::kMaxThreads));
  eval->add_flag("--validation", eval_req.validation,
                 "Evaluate on the validation split (the last data.validation training samples, "
                 "which must be set: in the run's config or by --set) instead of the test split");
  app.set_version_flag("-V,--version", std::string("zotrain ") + ZT_VERSION + " (kernels: " +
                                            zt::kernels::isa_name(zt::kernels::best_isa()) + ")");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  // Logs, warnings, errors and progress go to stderr; stdout carries only results (tables,
  // bench figures, --json output).
  spdlog::set_default_logger(spdlog::stderr_color_mt("zotrain"));
  if (quiet) spdlog::set_level(spdlog::level::warn);
  spdlog::set_pattern("[%H:%M:%S] %^%l%$ %v");

  // Under mpirun, this process is one rank of a data-parallel run (docs/design.md §15): rank 0
  // logs and writes, the others stay silent unless they fail; an error of any rank ends every
  // rank (MPI_Abort), so none is left waiting in a collective.
  std::unique_ptr<zt::Ranks> ranks;
  const auto fail = [&](int code, const std::string& message, bool internal) {
    if (ranks && ranks->rank() > 0) {
      spdlog::set_level(spdlog::level::info);
      // Rank 0 reports an error every rank meets (a bad config) and ends the job first.
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    const std::string who = ranks ? "rank " + std::to_string(ranks->rank()) + ": " : "";
    if (internal) spdlog::critical("{}internal error: {}", who, message);
    else spdlog::error("{}{}", who, message);
    if (ranks) zt::dist::abort_job(code);
    return code;
  };
  try {
    ranks = zt::dist::join(&argc, &argv);
    if (ranks && ranks->rank() > 0) spdlog::set_level(spdlog::level::off);
    if (ranks && (bench->parsed() || eval->parsed() || !synthetic_dir.empty()))
      throw zt::Error("mpirun: only training runs are spread over processes; start zotrain " +
                      std::string(bench->parsed() ? "bench" : eval->parsed() ? "eval" : "--make-synthetic-modelnet") +
                      " without mpirun");
  } catch (const zt::Error& e) {
    return fail(2, e.what(), false);
  }

  try {
    if (bench->parsed()) {
      bench_opt.perturbation = zt::config::perturbation(bench_perturbation).id;
      return zt::cli::run_bench(bench_opt);
    }
    if (eval->parsed()) return zt::run::run_eval(eval_req);
    if (!synthetic_dir.empty()) {
      zt::data::write_synthetic_modelnet(synthetic_dir, synth);
      spdlog::info("wrote {} classes x ({} train + {} test) point clouds of {} points to {}",
                   synth.classes, synth.train_per_class, synth.test_per_class, synth.points,
                   synthetic_dir);
      return 0;
    }
    if (config_path.empty() && resume_dir.empty())
      throw zt::Error("no experiment given: use --config FILE (or --resume DIR); see --help");
    if (!config_path.empty() && !resume_dir.empty())
      throw zt::Error("--config and --resume are exclusive: --resume reads DIR/config.json");
    if (!resume_dir.empty() && !init_from.empty())
      throw zt::Error("--init-from cannot be combined with --resume");
    zt::run::RunRequest req;
    if (threads > 0) overrides.push_back("train.threads=" + std::to_string(threads));
    if (!resume_dir.empty()) {
      req.cfg = zt::config::load_config(resume_dir + "/config.json", overrides);
      req.resume = true;
      req.output_dir = resume_dir;
    } else {
      req.cfg = zt::config::load_config(config_path, overrides);
      req.output_dir = output_dir.empty() ? req.cfg.output.dir : output_dir;
    }
    req.command_line = command_line(argc, argv);
    req.dry_run = dry_run;
    req.overwrite = overwrite;
    req.init_from = init_from;
    using zt::run::ProgressMode;
    req.progress = no_progress || quiet || (ranks && ranks->rank() > 0) ? ProgressMode::kOff
                   : ::isatty(STDERR_FILENO)                               ? ProgressMode::kBar
                                                                           : ProgressMode::kLines;
    req.ranks = ranks.get();
    return zt::run::run_experiment(req);
  } catch (const zt::Error& e) {
    return fail(2, e.what(), false);
  } catch (const std::exception& e) {
    return fail(1, e.what(), true);
  }
}
