// Wall-time accounting in the fixed phases of the paper's Fig. 7 (docs/design.md §8).
#pragma once

#include <array>
#include <chrono>

namespace zt::telemetry {

// kMpi: time inside the collectives of a data-parallel run (docs/design.md §15), carved out of
// the phase it happened in; 0 for one process.
enum class Phase { kForward, kZoPerturb, kZoUpdate, kBackward, kLoss, kData, kEval, kMpi, kCount };
inline constexpr int kNumPhases = static_cast<int>(Phase::kCount);

// Key used in JSON ("forward", "zo_perturb", ...) and the display label ("ZO Perturb").
const char* phase_key(Phase p);
const char* phase_label(Phase p);

class PhaseTimes {
 public:
  void add(Phase p, double seconds) { s_[static_cast<int>(p)] += seconds; }
  double get(Phase p) const { return s_[static_cast<int>(p)]; }
  double total() const;
  void reset() { s_.fill(0.0); }
  PhaseTimes& operator+=(const PhaseTimes& o);

 private:
  std::array<double, kNumPhases> s_{};
};

// Adds the time between construction and destruction (or stop()) to one phase.
class ScopedPhase {
 public:
  ScopedPhase(PhaseTimes& t, Phase p) : t_(&t), p_(p), start_(std::chrono::steady_clock::now()) {}
  ~ScopedPhase() { stop(); }
  void stop() {
    if (!t_) return;
    t_->add(p_, std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
    t_ = nullptr;
  }
  ScopedPhase(const ScopedPhase&) = delete;
  ScopedPhase& operator=(const ScopedPhase&) = delete;

 private:
  PhaseTimes* t_;
  Phase p_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace zt::telemetry
