// The training loop of a run (src/run/experiment.cpp composes it): epochs of engine steps from
// a run state on, with evaluation, metrics.jsonl and steps.jsonl records, progress, checkpoints at
// epoch ends (output.checkpoint_every) and by wall time (output.checkpoint_minutes, mid-epoch),
// and stops on a signal, on train.max_steps or on divergence (a non-finite loss, ZO gradient or
// tensor of the state).
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

// Where and how a run diverged: the step (1-based: global, its epoch and its index in the epoch,
// 0 = the epoch's last) whose loss, ZO gradient or update was not finite.
struct Divergence {
  std::int64_t step = 0, epoch = 0, step_in_epoch = 0;
  EngineStep stats;  // its loss and g; stats.nonfinite: the tensor
  int partition = 0, layers = 0;  // C and L
};

struct LoopResult {
  bool interrupted = false;
  bool diverged = false;  // stopped after that step, nothing from it written
  Divergence divergence;
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

// `ranks`: a data-parallel run's (docs/design.md §15); every rank runs this loop in lockstep and
// they agree at each step whether to stop (a signal reached any of them) and whether a
// checkpoint is due (by rank 0's clock); only the folder's writer writes.
LoopResult train_loop(const config::ExperimentConfig& cfg, Engine& engine, RunData& rd,
                      const RunFolder& folder, Reporter& rep, RunState& st,
                      Ranks& ranks = single_rank());

// Whether the state after `st`'s last step (a pending deferred ZO update applied) holds a
// non-finite tensor (Engine::check_finite); if so, records that step in r.divergence.
bool state_diverged(Engine& engine, const RunState& st, LoopResult& r);
// Writes the checkpoint of `st` (the state after its last step; only the folder's writer writes)
// unless the state holds a non-finite tensor (state_diverged); then writes nothing and returns
// false.
bool save_checkpoint_if_finite(const config::ExperimentConfig& cfg, Engine& engine,
                               const RunFolder& folder, const RunState& st, LoopResult& r);

// Exit code of a run stopped by divergence (README, zotrain --help).
constexpr int kExitDiverged = 3;
// What a diverged run prints: where, what (the loss, the gradient, or the tensor and its part),
// the likely causes with their current values, and the checkpoint that is left as it was.
std::string divergence_message(const config::ExperimentConfig& cfg, const Divergence& d,
                               const RunFolder& folder);

}  // namespace zt::run
