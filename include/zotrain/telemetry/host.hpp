// The machine a run ran on, for its provenance: host name, CPU model, cores, OS.
#pragma once

#include <string>

namespace zt::telemetry {

struct HostInfo {
  std::string name;    // gethostname
  std::string cpu;     // /proc/cpuinfo "model name" (x86), else the board "Model" line, else the
                       // ARM "CPU implementer/part" codes, else uname's machine
  int cores = 0;       // online processors
  std::string os;      // uname: system, release, machine
};

HostInfo host_info();

// Now as ISO 8601 UTC with seconds ("2026-11-25T13:50:00Z").
std::string utc_now();

}  // namespace zt::telemetry
