// `zotrain bench` (bench.hpp): the machine and its kernel paths, then the kernels' figures
// (bench_kernels.cpp) and the training steps' (bench_steps.cpp), as tables or one JSON object.
#include "bench.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_parts.hpp"
#include "zotrain/config/options.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/kernels/isa.hpp"
#include "zotrain/run/experiment.hpp"

namespace zt::cli {
namespace {

using namespace zt::kernels;
using nlohmann::json;

std::string cpu_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line, part;
  while (std::getline(f, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon), value = line.substr(colon + 1);
    key.erase(key.find_last_not_of(" \t") + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    if (key == "model name" && !value.empty()) return value;
    if (key == "CPU part" && part.empty()) part = value;
  }
  if (part == "0xd03") return "ARM Cortex-A53";
  if (part == "0xd08") return "ARM Cortex-A72";
  if (part == "0xd0b") return "ARM Cortex-A76";
  return part.empty() ? "unknown CPU" : "ARM CPU part " + part;
}

}  // namespace

double seconds_since(BenchClock::time_point t0) {
  return std::chrono::duration<double>(BenchClock::now() - t0).count();
}

std::vector<Isa> available_isas() {
  std::vector<Isa> v;
  for (Isa isa : kAllIsas)
    if (isa_available(isa)) v.push_back(isa);
  return v;
}

int run_bench(const BenchOptions& o) {
  if (!o.only.empty() && o.only != "kernels" && o.only != "steps")
    throw Error("bench --only: expected kernels or steps, got '" + o.only + "'");
  if (o.run_steps >= 0) {  // instruction counting: exactly N steps of one method, nothing else
    run_steps(o);
    return 0;
  }
  check_method(o.method);
  const int threads = run::use_threads(o.threads);
  const bool print = !o.json;
  std::string paths;
  for (Isa i : available_isas()) paths += std::string(paths.empty() ? "" : " ") + isa_name(i);
  if (print)
    std::printf("zotrain %s bench%s: %s; kernel paths: %s; trainers use %s%s; %d thread%s\n", ZT_VERSION,
                o.quick ? " --quick (figures are not meaningful)" : "", cpu_name().c_str(), paths.c_str(),
                isa_name(best_isa()), std::getenv("ZT_ISA") ? " (ZT_ISA)" : "", threads, threads == 1 ? "" : "s");
  json out = {{"version", ZT_VERSION}, {"cpu", cpu_name()}, {"threads", threads}, {"quick", o.quick}, {"cache_direction", o.cache_direction},
              {"perturbation", config::name(o.perturbation)},
              {"paths", json::array()}, {"best_path", isa_name(best_isa())}};
  for (Isa i : available_isas()) out["paths"].push_back(isa_name(i));
  if (o.only.empty() || o.only == "kernels") out["kernels"] = bench_kernels(o, threads, print);
  if (o.only.empty() || o.only == "steps") out.update(bench_steps(o, threads, print));
  if (!print) std::printf("%s\n", out.dump(1).c_str());
  return 0;
}

}  // namespace zt::cli
