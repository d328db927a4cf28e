#include "zotrain/core/error.hpp"

#include <cstdio>
#include <cstdlib>

namespace zt {

void check_failed(const char* file, int line, const char* cond, const std::string& msg) {
  std::fprintf(stderr, "zotrain: internal check failed at %s:%d: %s%s%s\n", file, line, cond,
               msg.empty() ? "" : " — ", msg.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace zt
