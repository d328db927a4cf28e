// Instruction-set paths a kernel can take. kReference is the plain-loop definition of correct,
// always built; kPortable is the optimised portable C++ (blocked, vectorisable at -O3);
// kNeon is hand-written NEON intrinsics (armv7 with NEON and every aarch64 CPU); kNeonDot adds
// the ARMv8.2 dot-product instructions (SDOT/UDOT, e.g. Cortex-A76 in a Pi 5) where a kernel has
// such a path, and otherwise means kNeon. kAvx512Vnni is the x86-64 counterpart for the int8
// products (linear_s8, conv2d_s8: vpdpbusd, in gemm_s8_avx512_vnni.cpp, built by GCC for every
// x86-64 target and chosen only when the CPU reports AVX-512F and AVX-512 VNNI); kAvx2 is the
// same products for x86-64 CPUs without VNNI (vpmaddwd on widened operands, gemm_s8_avx2.cpp);
// every other family has no such path and runs its portable one. kPortable is the same code on every machine
// (for the int8 products, the plain-loop micro-kernel), so "portable" never means a hidden
// vector path. Dispatch happens once (layer construction, through each kernel family's
// select_*(Isa), docs/design.md §11); tests force each path by passing it explicitly and skip
// the ones isa_available denies.
#pragma once

#include <optional>
#include <string_view>

namespace zt::kernels {

enum class Isa { kReference, kPortable, kNeon, kNeonDot, kAvx512Vnni, kAvx2 };

inline constexpr Isa kAllIsas[] = {Isa::kReference, Isa::kPortable, Isa::kNeon, Isa::kNeonDot,
                                   Isa::kAvx512Vnni, Isa::kAvx2};

// "reference", "portable", "neon", "neon-dot", "avx512-vnni", "avx2"
const char* isa_name(Isa isa);
std::optional<Isa> parse_isa(std::string_view name);  // inverse of isa_name
bool isa_available(Isa isa);  // built into this binary and supported by this CPU
// The path the trainers use: the first available of neon-dot, neon, avx512-vnni, avx2, portable,
// unless the environment variable ZT_ISA names another (e.g. ZT_ISA=portable to compare against
// the NEON path on a board). An unknown or unavailable ZT_ISA is a zt::Error naming the
// variable and the paths this machine offers.
Isa best_isa();

}  // namespace zt::kernels
