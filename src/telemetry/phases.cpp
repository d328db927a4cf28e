#include "zotrain/telemetry/phases.hpp"

namespace zt::telemetry {

const char* phase_key(Phase p) {
  switch (p) {
    case Phase::kForward: return "forward";
    case Phase::kZoPerturb: return "zo_perturb";
    case Phase::kZoUpdate: return "zo_update";
    case Phase::kBackward: return "backward";
    case Phase::kLoss: return "loss";
    case Phase::kData: return "data";
    case Phase::kEval: return "eval";
    case Phase::kMpi: return "mpi";
    case Phase::kCount: break;
  }
  return "?";
}

const char* phase_label(Phase p) {
  switch (p) {
    case Phase::kForward: return "Forward";
    case Phase::kZoPerturb: return "ZO Perturb";
    case Phase::kZoUpdate: return "ZO Update";
    case Phase::kBackward: return "Backward";
    case Phase::kLoss: return "Loss/Estimate";
    case Phase::kData: return "Data";
    case Phase::kEval: return "Eval";
    case Phase::kMpi: return "MPI";
    case Phase::kCount: break;
  }
  return "?";
}

double PhaseTimes::total() const {
  double t = 0;
  for (double v : s_) t += v;
  return t;
}

PhaseTimes& PhaseTimes::operator+=(const PhaseTimes& o) {
  for (int i = 0; i < kNumPhases; ++i) s_[i] += o.s_[i];
  return *this;
}

}  // namespace zt::telemetry
