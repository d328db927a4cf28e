// Shared by the libFuzzer harnesses: a private temporary directory per process (the readers take
// paths, so each input is written to a file there first) and the check that fails the run when
// two ways of reading the same bytes disagree.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace zt::fuzz {

// $TMPDIR/zotrain-fuzz-XXXXXX, made on first use and removed at exit (a crash leaves it).
inline const std::string& temp_dir() {
  static const std::string dir = [] {
    const char* base = std::getenv("TMPDIR");
    std::string d = std::string(base && *base ? base : "/tmp") + "/zotrain-fuzz-XXXXXX";
    if (::mkdtemp(d.data()) == nullptr) {
      std::perror("zotrain fuzz: mkdtemp");
      std::abort();
    }
    static const std::string keep = d;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(keep, ec);
    });
    return d;
  }();
  return dir;
}

// Writes data[0..size) and then `zeros` zero bytes to temp_dir()/name; returns the path.
inline std::string write_input(const std::string& name, const std::uint8_t* data,
                               std::size_t size, std::size_t zeros = 0) {
  const std::string path = temp_dir() + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    std::perror(path.c_str());
    std::abort();
  }
  bool ok = size == 0 || std::fwrite(data, 1, size, f) == size;
  static const char kZeros[4096] = {};
  while (ok && zeros > 0) {
    const std::size_t n = zeros < sizeof kZeros ? zeros : sizeof kZeros;
    ok = std::fwrite(kZeros, 1, n, f) == n;
    zeros -= n;
  }
  if (std::fclose(f) != 0 || !ok) {
    std::perror(path.c_str());
    std::abort();
  }
  return path;
}

// A property of the readers that must hold for every input: a finding when it does not.
#define ZT_FUZZ_EXPECT(cond, what)                                                      \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "zotrain fuzz: %s:%d: %s (%s)\n", __FILE__, __LINE__, (what), \
                   #cond);                                                              \
      std::abort();                                                                     \
    }                                                                                   \
  } while (0)

}  // namespace zt::fuzz
