// What a run adds around the trainers' sharded probes when it is spread over several ranks
// (mpirun; docs/design.md §15): the checks of a config against the rank count, the collectives'
// time as a phase of its own, and what summary.json reports of them.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "zotrain/config/config.hpp"
#include "zotrain/core/ranks.hpp"
#include "zotrain/run/engine.hpp"
#include "zotrain/telemetry/phases.hpp"

namespace zt::run {

// Throws zt::Error when `ranks` cannot share this run's batches: more ranks than shares of a
// batch (`rows_per_share` samples each; every rank needs one) or a setting without a
// data-parallel form (zo.batched). One rank: nothing to check.
void check_data_parallel(const config::ExperimentConfig& cfg, const Ranks& ranks, int batch,
                         int rows_per_share);

// The collectives of a step happen inside its forward passes: their time `ns` moves from
// Forward to MPI. (The per-step agreement between steps is timed as MPI where it happens.)
void carve_mpi_time(telemetry::PhaseTimes& times, std::int64_t ns);

// summary.json's "parallel": ranks, the layers sharded (of `layers`, with the share of a forward
// pass's multiply-accumulates they hold), and per step the bytes this rank received and the
// collectives it took part in, by kind (ExchangeStats of `steps` steps).
nlohmann::json parallel_json(const Ranks& ranks, int shard_until, const std::vector<LayerRow>& layers,
                             const ExchangeStats& stats, std::int64_t steps);

}  // namespace zt::run
