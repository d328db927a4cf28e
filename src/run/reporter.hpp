// What a run tells its user while it runs: log lines (spdlog, on stderr), the progress display
// (stderr) and the closing tables (stdout, unless quiet). The progress display is a live bar
// when stderr is a terminal — step n/total, epoch, loss, samples/s, elapsed and ETA — and a
// plain line every kLineSeconds otherwise (e.g. `2>run.log`), so a piped run shows life too.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "zotrain/run/engine.hpp"
#include "zotrain/telemetry/memory.hpp"
#include "zotrain/telemetry/phases.hpp"
#include "zotrain/run/experiment.hpp"

namespace zt::run {

class Reporter {
 public:
  static constexpr double kLineSeconds = 10.0;

  Reporter(ProgressMode mode, bool quiet) : mode_(mode), quiet_(quiet) {}

  // The run's extent for the display: steps in total and already done (resume).
  void start(std::int64_t total_steps, std::int64_t done_steps);
  // After each training step: position, and the epoch's running mean loss.
  void step(std::int64_t epoch, std::int64_t epochs, std::int64_t global_step, double loss,
            std::int64_t samples);
  void end_epoch();  // clears the live bar before the epoch's log line

  void plan(const std::string& name, const Engine& engine, const telemetry::PaperMemory& paper,
            std::size_t planned, std::uint64_t predicted_peak) const;
  void tables(const telemetry::PhaseTimes& t, double epochs_run,
              const telemetry::PaperMemory& paper, std::size_t planned, std::uint64_t rss) const;

 private:
  using Clock = std::chrono::steady_clock;
  ProgressMode mode_;
  bool quiet_;
  std::int64_t total_ = 0, first_step_ = 0, samples_ = 0;
  Clock::time_point t0_{}, last_{};
  bool drawn_ = false;
};

}  // namespace zt::run
