#include "zotrain/kernels/isa.hpp"

#include <cstdlib>
#include <string>

#include "zotrain/core/error.hpp"

#if defined(__linux__) && (defined(__aarch64__) || defined(__arm__))
#include <sys/auxv.h>
#endif

namespace zt::kernels {
namespace {

// What the CPU reports through the ELF auxiliary vector (Linux) or CPUID (x86); the kernels for
// a feature are only compiled in when ZT_HAVE_NEON / ZT_HAVE_NEON_DOT / ZT_HAVE_AVX512_VNNI are
// defined (CMakeLists.txt).
[[maybe_unused]] bool cpu_has_neon() {
#if defined(__aarch64__)
  return true;  // Advanced SIMD is mandatory in ARMv8-A
#elif defined(__arm__) && defined(__linux__)
  return (getauxval(AT_HWCAP) & (1UL << 12)) != 0;  // HWCAP_NEON
#else
  return false;
#endif
}

[[maybe_unused]] bool cpu_has_dotprod() {
#if defined(__aarch64__) && defined(__linux__)
  return (getauxval(AT_HWCAP) & (1UL << 20)) != 0;  // HWCAP_ASIMDDP
#else
  return false;
#endif
}

[[maybe_unused]] bool cpu_has_avx512_vnni() {
#if defined(__x86_64__) && defined(__GNUC__)
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vnni");
#else
  return false;
#endif
}

[[maybe_unused]] bool cpu_has_avx2() {
#if defined(__x86_64__) && defined(__GNUC__)
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kReference: return "reference";
    case Isa::kPortable: return "portable";
    case Isa::kNeon: return "neon";
    case Isa::kNeonDot: return "neon-dot";
    case Isa::kAvx512Vnni: return "avx512-vnni";
    case Isa::kAvx2: return "avx2";
  }
  return "unknown";
}

std::optional<Isa> parse_isa(std::string_view name) {
  for (Isa isa : kAllIsas)
    if (name == isa_name(isa)) return isa;
  return std::nullopt;
}

bool isa_available(Isa isa) {
  switch (isa) {
    case Isa::kReference:
    case Isa::kPortable: return true;
    case Isa::kNeon:
#if defined(ZT_HAVE_NEON)
      return cpu_has_neon();
#else
      return false;
#endif
    case Isa::kNeonDot:
#if defined(ZT_HAVE_NEON) && defined(ZT_HAVE_NEON_DOT)
      return cpu_has_neon() && cpu_has_dotprod();
#else
      return false;
#endif
    case Isa::kAvx512Vnni:
#if defined(ZT_HAVE_AVX512_VNNI)
      return cpu_has_avx512_vnni();
#else
      return false;
#endif
    case Isa::kAvx2:
#if defined(ZT_HAVE_AVX2)
      return cpu_has_avx2();
#else
      return false;
#endif
  }
  return false;
}

Isa best_isa() {
  if (const char* forced = std::getenv("ZT_ISA"); forced != nullptr && *forced != '\0') {
    std::string offered;
    for (Isa isa : kAllIsas)
      if (isa_available(isa)) offered += std::string(offered.empty() ? "" : ", ") + isa_name(isa);
    const std::optional<Isa> isa = parse_isa(forced);
    if (!isa) throw Error("ZT_ISA='" + std::string(forced) + "' is not a kernel path; this machine offers " + offered);
    if (!isa_available(*isa))
      throw Error("ZT_ISA='" + std::string(forced) + "' is not available here; this machine offers " + offered);
    return *isa;
  }
  if (isa_available(Isa::kNeonDot)) return Isa::kNeonDot;
  if (isa_available(Isa::kNeon)) return Isa::kNeon;
  if (isa_available(Isa::kAvx512Vnni)) return Isa::kAvx512Vnni;
  if (isa_available(Isa::kAvx2)) return Isa::kAvx2;
  return Isa::kPortable;
}

}  // namespace zt::kernels
