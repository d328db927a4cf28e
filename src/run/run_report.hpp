// What a run says about itself, as JSON and checks: its plan before it trains (model, method,
// parameters, memory: the paper's figure, the planned buffers, the predicted peak), where it came
// from (provenance), the memory limit check, and the summary.json it ends with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "run_state.hpp"
#include "train_loop.hpp"
#include "zotrain/config/config.hpp"
#include "zotrain/run/engine.hpp"
#include "zotrain/run/experiment.hpp"

namespace zt::run {

nlohmann::json or_null(double x);  // x, or null for −1 (not measured)

// What the run is, before it trains: model, method, partition, parameters, memory, batch.
nlohmann::json plan_json(const config::ExperimentConfig& cfg, const Engine& engine, int batch,
                         int threads, std::size_t dataset_bytes);
// Where the run came from: the tool, the command, the machine, the time, the seed.
nlohmann::json provenance(const RunRequest& req, int threads, const std::string& started);

// The run's peak resident set, predicted before its first step (docs/design.md §9).
std::uint64_t predict_peak_rss(const Engine& engine, const RunData& rd, int threads);
// The board zotrain targets (docs/design.md: a Raspberry Pi Zero 2 W, 512 MB): whether a
// predicted peak fits what it leaves a process, and one log line saying so.
bool fits_board(std::uint64_t predicted);
void log_board_fit(std::uint64_t predicted);
// train.memory_limit: a run predicted to need more is refused (zt::Error) before it writes
// anything, with what would make it fit.
void check_memory_limit(const config::ExperimentConfig& cfg, const Engine& engine,
                        std::uint64_t predicted, int batch);

// summary.json of a finished (or interrupted-and-finished) run: the plan, then the accuracies,
// time per phase, peak memory and the weights' digest.
nlohmann::json run_summary(nlohmann::json plan, const LoopResult& r, const RunState& st,
                           const RunData& rd, const Engine& engine);

}  // namespace zt::run
