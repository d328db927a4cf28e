// Instruction-set paths a kernel can take. kReference is the plain-loop definition of correct,
// always built; kPortable is the optimised portable C++ (blocked, vectorisable at -O3);
// kNeon is hand-written NEON intrinsics (armv7 with NEON and every aarch64 CPU); kNeonDot adds
// the ARMv8.2 dot-product instructions (SDOT/UDOT, e.g. Cortex-A76 in a Pi 5) where a kernel has
// such a path, and otherwise means kNeon. Dispatch happens once (layer construction, through
// each kernel family's select_*(Isa)); tests force each path by passing it explicitly.
#pragma once

#include <optional>
#include <string_view>

namespace zt::kernels {

enum class Isa { kReference, kPortable, kNeon, kNeonDot };

inline constexpr Isa kAllIsas[] = {Isa::kReference, Isa::kPortable, Isa::kNeon, Isa::kNeonDot};

const char* isa_name(Isa isa);                         // "reference", "portable", "neon", "neon-dot"
std::optional<Isa> parse_isa(std::string_view name);  // inverse of isa_name
bool isa_available(Isa isa);  // built into this binary and supported by this CPU
// The path the trainers use: the fastest available one, unless the environment variable ZT_ISA
// names another (e.g. ZT_ISA=portable to compare against the NEON path on a board). An unknown
// or unavailable ZT_ISA is a zt::Error naming the variable and the paths this machine offers.
Isa best_isa();

}  // namespace zt::kernels
