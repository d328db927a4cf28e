// One experiment, end to end: validate config and data, build the model and the plan, train
// with per-phase timing and progress, evaluate, checkpoint (atomically; resumable; SIGINT saves
// and exits), and write config.json, metrics.jsonl and summary.json into the output directory.
#pragma once

#include <string>

#include "zotrain/config/config.hpp"
#include "zotrain/core/ranks.hpp"

namespace zt::run {

// Progress display (src/run/reporter.hpp): a live bar (stderr is a terminal), plain periodic lines
// (stderr is a file or pipe), or none.
enum class ProgressMode { kOff, kBar, kLines };

struct RunRequest {
  config::ExperimentConfig cfg;
  // --output-dir or output.dir; empty: the first free of runs/<name>, runs/<name>-2, ...
  // (run/run_folder.hpp), claimed atomically when the run starts.
  std::string output_dir;
  bool dry_run = false;
  bool resume = false;      // continue from output_dir/checkpoint.safetensors (none yet: start
                            // the run afresh from output_dir/config.json)
  bool overwrite = false;   // allow a non-empty output_dir for a fresh run
  std::string init_from;    // checkpoint whose parameters initialise a fresh run
  ProgressMode progress = ProgressMode::kOff;
  std::string command_line;  // as typed (recorded in summary.json)
  bool quiet = false;       // no plan/summary tables on stdout (tests; the CLI's -q quiets
                            // only stderr: results stay on stdout)
  // A data-parallel run's ranks (mpirun; docs/design.md §15): one model trained by all of them,
  // rank 0 writing the run directory. Null: one process.
  Ranks* ranks = nullptr;
};

// OpenMP's thread count for what follows: `requested`, or every core when 0 (train.threads
// auto); returns it (1 without OpenMP).
int use_threads(int requested);

// Exit codes: 0 done, 130 interrupted (checkpoint saved). Bad input throws zt::Error
// before anything is written.
int run_experiment(const RunRequest& request);

}  // namespace zt::run
