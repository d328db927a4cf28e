#include "zotrain/kernels/isa.hpp"

namespace zt::kernels {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kReference: return "reference";
    case Isa::kPortable: return "portable";
    case Isa::kNeon: return "neon";
  }
  return "unknown";
}

bool isa_available(Isa isa) {
  switch (isa) {
    case Isa::kReference:
    case Isa::kPortable: return true;
    case Isa::kNeon: return false;  // NEON kernels are not built yet
  }
  return false;
}

Isa best_isa() { return Isa::kPortable; }

}  // namespace zt::kernels
