#include "data_parallel.hpp"

#include <fmt/format.h>

#include "zotrain/core/error.hpp"

namespace zt::run {

void check_data_parallel(const config::ExperimentConfig& cfg, const Ranks& ranks, int batch,
                         int rows_per_share) {
  if (ranks.single()) return;
  const int shares = batch / rows_per_share;
  if (ranks.size() > shares)
    throw Error(fmt::format(
        "mpirun -np {}: train.batch_size {} gives {} shares of {} sample{} to deal out over the "
        "ranks, so at most {} ranks can train it (a larger batch, or fewer processes)",
        ranks.size(), batch, shares, rows_per_share, rows_per_share == 1 ? "" : "s", shares));
  if (cfg.zo.batched && cfg.method.name != config::Method::kFullBp)
    throw Error("zo.batched: true runs the q probes as one pass over replicas of the batch, which "
                "is not spread over mpirun's ranks; give zo.batched=false (the same estimator, "
                "one query at a time)");
}

void carve_mpi_time(telemetry::PhaseTimes& times, std::int64_t ns) {
  if (ns == 0) return;
  const double s = static_cast<double>(ns) * 1e-9;
  times.add(telemetry::Phase::kForward, -s);
  times.add(telemetry::Phase::kMpi, s);
}

nlohmann::json parallel_json(const Ranks& ranks, int shard_until, const std::vector<LayerRow>& layers,
                             const ExchangeStats& stats, std::int64_t steps) {
  // The share of a forward pass's multiply-accumulates in the sharded layers: what N ranks divide.
  double sharded_macs = 0, macs = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    macs += static_cast<double>(layers[i].macs);
    if (static_cast<int>(i) < shard_until) sharded_macs += static_cast<double>(layers[i].macs);
  }
  nlohmann::json per_step = nlohmann::json::object(), calls = nlohmann::json::object();
  const double n = steps > 0 ? static_cast<double>(steps) : 1.0;
  double total = 0;
  for (int i = 0; i < kNumExchanges; ++i) {
    const auto k = static_cast<std::size_t>(i);
    const double b = static_cast<double>(stats.bytes[k]) / n;
    per_step[exchange_key(static_cast<Exchange>(i))] = b;
    calls[exchange_key(static_cast<Exchange>(i))] = static_cast<double>(stats.calls[k]) / n;
    total += b;
  }
  per_step["total"] = total;
  return {{"ranks", ranks.size()},
          {"rank_layers", {{"sharded", shard_until}, {"of", layers.size()}}},
          {"sharded_forward_macs_share", macs > 0 ? sharded_macs / macs : 0.0},
          {"bytes_received_per_step", per_step},
          {"collectives_per_step", calls},
          {"mpi_seconds", static_cast<double>(stats.ns) * 1e-9}};
}

}  // namespace zt::run
