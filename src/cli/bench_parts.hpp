// The two halves of `zotrain bench` (bench.cpp composes them): the kernels' throughput on the
// LeNet-5 and PointNet shapes (bench_kernels.cpp) and the training steps' phases, made by the
// training engines (bench_steps.cpp).
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <vector>

#include "bench.hpp"
#include "zotrain/kernels/isa.hpp"

namespace zt::cli {

using BenchClock = std::chrono::steady_clock;
double seconds_since(BenchClock::time_point t0);
std::vector<kernels::Isa> available_isas();  // every kernel path this binary and CPU offer

nlohmann::json bench_kernels(const BenchOptions& o, int threads, bool print);
nlohmann::json bench_steps(const BenchOptions& o, int threads, bool print);
// --run-steps: exactly o.run_steps steps of one method, their boundaries marked for
// scripts/count-insns.sh, and one line on stdout.
void run_steps(const BenchOptions& o);
// Throws zt::Error for a --method that is not one of the paper's four settings.
void check_method(const std::string& key);

}  // namespace zt::cli
