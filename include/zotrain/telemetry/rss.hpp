// Resident set size of this process, from the OS (Linux /proc/self/status). 0 if unavailable.
#pragma once

#include <cstdint>

namespace zt::telemetry {

std::uint64_t peak_rss_bytes();     // VmHWM
std::uint64_t current_rss_bytes();  // VmRSS

}  // namespace zt::telemetry
