#include "zotrain/telemetry/host.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <ctime>
#include <fstream>

namespace zt::telemetry {
namespace {

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// First value of `key` in /proc/cpuinfo ("key<tabs>: value"), empty when absent.
std::string cpuinfo(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (colon != std::string::npos && trim(line.substr(0, colon)) == key)
      return trim(line.substr(colon + 1));
  }
  return "";
}

}  // namespace

HostInfo host_info() {
  HostInfo h;
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) == 0) h.name = name;
  struct utsname u {};
  if (::uname(&u) == 0)
    h.os = std::string(u.sysname) + " " + u.release + " " + u.machine;
  h.cpu = cpuinfo("model name");
  if (h.cpu.empty()) h.cpu = cpuinfo("Model");  // Raspberry Pi kernels: the board
  if (h.cpu.empty() && !cpuinfo("CPU part").empty())
    h.cpu = "ARM implementer " + cpuinfo("CPU implementer") + " part " + cpuinfo("CPU part");
  if (h.cpu.empty()) h.cpu = u.machine;
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  h.cores = n > 0 ? static_cast<int>(n) : 1;
  return h;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace zt::telemetry
