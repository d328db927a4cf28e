// Errors and checks.
//   zt::Error      — bad input (config, files, flags). Thrown with context (which key, which
//                    file, what was expected), caught once in main, exit code 2.
//   ZT_CHECK(c)    — programming error: always on, prints file:line and the condition, aborts.
//   ZT_DCHECK(c)   — same, debug builds only (hot loops).
#pragma once

#include <stdexcept>
#include <string>

namespace zt {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

[[noreturn]] void check_failed(const char* file, int line, const char* cond, const std::string& msg);

}  // namespace zt

#define ZT_CHECK(cond)                                                      \
  do {                                                                      \
    if (!(cond)) ::zt::check_failed(__FILE__, __LINE__, #cond, std::string()); \
  } while (0)

#define ZT_CHECK_MSG(cond, msg)                                             \
  do {                                                                      \
    if (!(cond)) ::zt::check_failed(__FILE__, __LINE__, #cond, (msg));      \
  } while (0)

#ifdef NDEBUG
#define ZT_DCHECK(cond) \
  do {                  \
  } while (0)
#else
#define ZT_DCHECK(cond) ZT_CHECK(cond)
#endif
