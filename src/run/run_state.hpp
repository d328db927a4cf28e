// The state of a run that a checkpoint carries besides the weights: where the run is (epoch,
// step, global step), its wall time and phase times so far, and the open epoch's accumulators —
// so a resumed run continues exactly (same batches, same seeds, same reported figures).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "zotrain/run/engine.hpp"
#include "zotrain/config/config.hpp"
#include "zotrain/telemetry/phases.hpp"
#include "zotrain/run/checkpoint.hpp"

namespace zt::run {

nlohmann::json phases_json(const telemetry::PhaseTimes& t);
telemetry::PhaseTimes phases_from_json(const nlohmann::json& j);

// Per-epoch accumulators (saved in checkpoints so a resumed epoch reports the same figures).
struct EpochAcc {
  double loss_sum = 0, g_abs_sum = 0;
  std::int64_t correct = 0, samples = 0, steps = 0, clipped = 0;
  std::int64_t sign_steps = 0, sign_agree = 0;  // int8 ZO: integer vs float sign
  std::int64_t sign_agree_eq12 = 0;             // Eq. 12 as written vs float sign
  telemetry::PhaseTimes times;
  nlohmann::json to_json() const;
  static EpochAcc from_json(const nlohmann::json& j);
};

struct RunState {
  std::int64_t epoch = 0;  // epoch in progress (0-based)
  std::int64_t step_in_epoch = 0;
  std::int64_t global_step = 0;
  double train_seconds = 0;  // training + eval wall time of finished epochs
  telemetry::PhaseTimes total_times;
  EpochAcc acc;
  // --init-from: where the run's first parameters came from ({path, weights_digest}), kept by
  // every checkpoint so summary.json's run.init_from survives --resume; null when none.
  nlohmann::json init_from;
};

// A checkpoint is two files: `path` (checkpoint.safetensors) holds the weights and buffers under
// the model's own names (a state dict PyTorch can load) with the run state, the config and the
// weights' digest as metadata; the optimizer state (Adam m, v: tensors named optimizer.*), when
// there is any, goes to optimizer.safetensors beside it, with the step and the weights digest of
// its checkpoint (what ties the two: another run's optimizer file of the same step has another
// digest). The optimizer state is written first, as optimizer.safetensors.next, then the
// checkpoint, which names the optimizer file: the checkpoint is the commit point. Then .next
// replaces optimizer.safetensors; until it does, read_checkpoint takes whichever of the two
// belongs to the checkpoint, so a kill or a full disk at any moment leaves a checkpoint that
// resumes. docs/design.md §13 describes the format.
void save_checkpoint(const std::string& path, const Engine& engine,
                     const config::ExperimentConfig& cfg, const RunState& state);
// The checkpoint a user names: a run directory (its checkpoint.safetensors) or a file. Throws
// zt::Error when there is none.
std::string checkpoint_of(const std::string& dir_or_file);
// Reads a checkpoint with its optimizer file (if it names one) as one TensorFile.
TensorFile read_checkpoint(const std::string& path);
// Adds the optimizer state of checkpoint `f`, read from `path`, to it (when it names a file);
// returns the file it was read from (empty: none). Refuses an optimizer file of another step or
// other weights (another run's, a later save's) and non-finite values, naming both files.
std::string read_optimizer_state(TensorFile& f, const std::string& path);
// Before a resumed run saves again: when its optimizer state was read from
// optimizer.safetensors.next (a save cut short after its commit), renames that into place, so the
// next save's new .next does not replace the only copy of the checkpoint's optimizer state.
void finish_interrupted_save(const std::string& path, const std::string& optimizer_read);
// Refuses a checkpoint in another zotrain checkpoint format than this one's, naming both and the
// zotrain version that wrote it; a file without a format (e.g. from PyTorch) passes.
void check_format(const TensorFile& f, const std::string& path);
// Checks a checkpoint fits this config and partition C (throws zt::Error naming the file).
void check_checkpoint(const TensorFile& f, const std::string& path,
                      const config::ExperimentConfig& cfg, int partition);
// The run state of a checkpoint, checked against itself: counts that are counts, the open
// epoch's accumulators agreeing with step_in_epoch and with each other, finite times (throws
// zt::Error naming the file and the keys).
RunState restore_run_state(const TensorFile& f, const std::string& path);
// The run state checked against the run that continues it: global_step = epoch ×
// steps_per_epoch + step_in_epoch with step_in_epoch ≤ steps_per_epoch, epoch ≤ train.epochs,
// the open epoch's samples = its steps × `batch` (throws zt::Error naming the file and the keys).
void check_run_state(const RunState& st, const std::string& path,
                     const config::ExperimentConfig& cfg, std::int64_t steps_per_epoch,
                     std::int64_t batch);

// FNV-1a (64 bit) over the parameter tensors (name, dtype, bytes; optimizer state excluded), in
// name order: equal digests mean bit-identical weights (e.g. across machines and thread counts).
std::string weights_digest(const Engine& engine);
// The same over the tensors of a checkpoint file (what its metadata "weights_digest" holds).
std::string weights_digest(const TensorFile& f);

}  // namespace zt::run
