// The training loop of a run (src/run/experiment.cpp composes it): epochs of engine steps from
// a run state on, with evaluation, metrics.jsonl and steps.jsonl records, progress, checkpoints at
// epoch ends, and stops on a signal, on train.max_steps or on a non-finite loss.
#pragma once

#include <cstdint>
#include <string>

#include "reporter.hpp"
#include "run_state.hpp"
#include "zotrain/config/config.hpp"
#include "zotrain/run/engine.hpp"
#include "zotrain/run/run_folder.hpp"

namespace zt::run {

// An evaluation on the test set and, with data.validation, the validation split; −1 = none.
struct Evals {
  EvalResult test{-1, -1}, val{-1, -1};
};
Evals evaluate_all(Engine& engine, RunData& rd);

struct LoopResult {
  bool interrupted = false;
  bool diverged = false;  // a non-finite loss or ZO gradient: stopped after that step
  EngineStep bad_step;
  Evals last_eval;
};

// SIGINT (Ctrl-C) and SIGTERM (a job scheduler, GNU parallel, `kill`) while one is alive: the
// loop stops at the next step, and the run saves a checkpoint and exits with 128 + the signal's
// number. The previous handlers come back at destruction.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  static int signal();  // the signal that came, 0 = none

 private:
  void (*previous_int_)(int);
  void (*previous_term_)(int);
};

LoopResult train_loop(const config::ExperimentConfig& cfg, Engine& engine, RunData& rd,
                      const RunFolder& folder, Reporter& rep, RunState& st);

// Exit code of a run stopped by a non-finite loss or gradient (README, zotrain --help).
constexpr int kExitDiverged = 3;
// What a diverged run prints: where, what, the likely causes with their current values, and the
// checkpoint that is left as it was.
std::string divergence_message(const config::ExperimentConfig& cfg, const EngineStep& s,
                               const RunState& st, const RunFolder& folder);

}  // namespace zt::run
