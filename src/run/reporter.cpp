#include "reporter.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>

namespace zt::run {
namespace {

using telemetry::Phase;

std::string mib(std::size_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

std::string clock_text(double seconds) {  // m:ss, or h:mm:ss
  const long s = seconds > 0 ? static_cast<long>(seconds + 0.5) : 0;
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

}  // namespace

void Reporter::start(std::int64_t total_steps, std::int64_t done_steps) {
  total_ = total_steps;
  first_step_ = done_steps;
  samples_ = 0;
  t0_ = last_ = Clock::now();
}

void Reporter::step(std::int64_t epoch, std::int64_t epochs, std::int64_t global_step,
                    double loss, std::int64_t samples) {
  samples_ += samples;
  if (mode_ == ProgressMode::kOff) return;
  const auto now = Clock::now();
  const bool done = global_step >= total_;
  const double since_last = std::chrono::duration<double>(now - last_).count();
  if (mode_ == ProgressMode::kBar ? (!done && since_last < 0.1) : since_last < kLineSeconds)
    return;
  last_ = now;
  const double elapsed = std::chrono::duration<double>(now - t0_).count();
  const std::int64_t run = global_step - first_step_;
  const double rate = elapsed > 0 ? static_cast<double>(samples_) / elapsed : 0.0;
  const double eta =
      run > 0 ? elapsed * static_cast<double>(total_ - global_step) / static_cast<double>(run) : 0.0;
  const double frac = total_ > 0 ? static_cast<double>(global_step) / static_cast<double>(total_) : 1.0;
  if (mode_ == ProgressMode::kLines) {
    spdlog::info("epoch {}/{} step {}/{} ({:.0f}%): loss {:.4f}, {:.0f} samples/s, elapsed {}, ETA {}",
                 epoch + 1, epochs, global_step, total_, 100 * frac, loss, rate,
                 clock_text(elapsed), clock_text(eta));
    return;
  }
  const int width = 24, filled = static_cast<int>(frac * width);
  std::fprintf(stderr,
               "\r  epoch %lld/%lld  step %lld/%lld [%.*s%*s] %3.0f%%  loss %.4f  %.0f samples/s"
               "  %s<%s ",
               static_cast<long long>(epoch + 1), static_cast<long long>(epochs),
               static_cast<long long>(global_step), static_cast<long long>(total_), filled,
               "########################", width - filled, "", 100 * frac, loss, rate,
               clock_text(elapsed).c_str(), clock_text(eta).c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void Reporter::end_epoch() {
  if (!drawn_) return;
  std::fprintf(stderr, "\r%120s\r", "");
  std::fflush(stderr);
  drawn_ = false;
}

void Reporter::tables(const telemetry::PhaseTimes& t, double epochs_run,
                      const telemetry::PaperMemory& paper, std::size_t planned,
                      std::uint64_t rss) const {
  if (quiet_) return;
  const double total = t.total();
  if (total > 0) {
    std::printf("\n  %-14s %10s %7s %12s\n", "phase", "seconds", "share", "per epoch");
    for (int i = 0; i < telemetry::kNumPhases; ++i) {
      const auto p = static_cast<Phase>(i);
      if (p == Phase::kMpi && t.get(p) == 0) continue;  // one process
      std::printf("  %-14s %10.3f %6.1f%% %12.3f\n", telemetry::phase_label(p), t.get(p),
                  100.0 * t.get(p) / total, epochs_run > 0 ? t.get(p) / epochs_run : 0.0);
    }
    std::printf("  %-14s %10.3f\n", "total", total);
  }
  std::printf("\n  %-32s %14s %12s\n", "memory", "bytes", "");
  for (const auto& [name, bytes] : paper.breakdown)
    std::printf("  paper: %-25s %14zu %12s\n", name.c_str(), bytes, mib(bytes).c_str());
  std::printf("  %-32s %14zu %12s\n", "paper: total (Eqs. 2-5)", paper.total, mib(paper.total).c_str());
  std::printf("  %-32s %14zu %12s\n", "planned (this tool's buffers)", planned, mib(planned).c_str());
  if (rss)
    std::printf("  %-32s %14llu %12s\n", "peak RSS (whole process)",
                static_cast<unsigned long long>(rss), mib(rss).c_str());
}

void Reporter::plan(const std::string& name, const Engine& engine,
                    const telemetry::PaperMemory& paper, std::size_t planned,
                    std::uint64_t predicted_peak) const {
  if (quiet_) return;
  std::printf("plan for '%s':\n", name.c_str());
  for (const LayerRow& r : engine.layers())
    std::printf("  %-6s %-17s out %-12s params %7zu  %s\n", r.name.c_str(), r.kind.c_str(),
                r.shape.c_str(), r.params, r.params == 0 ? "" : (r.zo ? "ZO" : "BP"));
  std::printf("  planned buffers:\n");
  for (const auto& [buf, bytes] : engine.planned_buffers())
    std::printf("    %-28s %12zu bytes\n", buf.c_str(), bytes);
  tables(telemetry::PhaseTimes{}, 0, paper, planned, 0);
  std::printf("  %-32s %14llu %12s\n", "predicted peak RSS (process)",
              static_cast<unsigned long long>(predicted_peak), mib(predicted_peak).c_str());
}

}  // namespace zt::run
