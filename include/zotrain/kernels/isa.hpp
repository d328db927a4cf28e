// Instruction-set paths a kernel can take. kReference is the plain-loop definition of correct,
// always built; kPortable is the optimised portable C++ (blocked, vectorisable at -O3);
// kNeon is added on ARM. Dispatch happens once (layer construction), tests force each path.
#pragma once

namespace zt::kernels {

enum class Isa { kReference, kPortable, kNeon };

const char* isa_name(Isa isa);
bool isa_available(Isa isa);
Isa best_isa();  // the fastest available path on this CPU

}  // namespace zt::kernels
