// One experiment, end to end: validate config and data, build the model and the plan, train
// with per-phase timing and progress, evaluate, checkpoint (atomically; resumable; SIGINT saves
// and exits), and write config.json, metrics.jsonl and summary.json into the output directory.
#pragma once

#include <string>

#include "zotrain/config/config.hpp"

namespace zt::train {

struct RunRequest {
  config::ExperimentConfig cfg;
  std::string output_dir;  // resolved by the caller (--output-dir, output.dir, runs/<name>)
  bool dry_run = false;
  bool resume = false;      // continue from output_dir/checkpoint.safetensors
  bool overwrite = false;   // allow a non-empty output_dir for a fresh run
  std::string init_from;    // checkpoint whose parameters initialise a fresh run
  bool progress_bar = false;
  bool quiet = false;       // no plan/summary tables on stdout
};

// Exit codes: 0 done, 130 interrupted (checkpoint saved). Bad input throws zt::Error
// before anything is written.
int run_experiment(const RunRequest& request);

// The output directory a config asks for when --output-dir is not given: output.dir, else
// runs/<name> — or runs/<name>-2, -3, ... when earlier runs already occupy it.
std::string default_output_dir(const config::ExperimentConfig& cfg);

}  // namespace zt::train
