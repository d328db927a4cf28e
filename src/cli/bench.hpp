// `zotrain bench`: the on-board micro-benchmark. Per-kernel throughput of every kernel path this
// binary and CPU offer (kernels::isa_available over kAllIsas) on the LeNet-5 and PointNet
// shapes, per-phase times of real training steps (FP32 and int8 LeNet-5 on synthetic input) and
// the int8-vs-FP32 step-time ratio. --run-steps runs exactly N steps of one method and nothing
// else, marking the steps' boundaries for scripts/count-insns.sh, which counts one step's
// instructions under qemu. Timings under qemu mean nothing.
#pragma once

#include <string>

#include "zotrain/config/options.hpp"

namespace zt::cli {

struct BenchOptions {
  int threads = 1;           // OpenMP threads; 0 = all cores
  bool quick = false;        // one call per figure, small batches (the ctest smoke test)
  bool json = false;         // one JSON object on stdout instead of the tables
  std::string only;          // "" = everything, "kernels" or "steps"
  int run_steps = -1;        // ≥ 0: run this many steps of `method` / `precision` and exit
  std::string method = "cls1";      // full_bp | full_zo | cls1 | cls2
  std::string precision = "fp32";   // fp32 | int8
  int batch = 0;             // --run-steps batch; 0 = the paper's (FP32 32, int8 256)
  bool cache_direction = false;  // steps with zo.cache_direction
  config::Perturbation perturbation = config::Perturbation::kGaussian;  // FP32 steps' zo.perturbation
};

// Returns the exit code; bad options throw zt::Error.
int run_bench(const BenchOptions& options);

}  // namespace zt::cli
