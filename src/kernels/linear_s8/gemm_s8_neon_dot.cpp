// NEON int8 micro-kernels with the ARMv8.2 dot-product instruction (SDOT, e.g. Cortex-A76):
// vdotq_s32 adds the 4 int8 products of each int32 lane in one instruction, which is exactly the
// quad layout of the shared micro-kernel. Built with +dotprod and run only when the CPU reports
// ASIMDDP. The tile loops are gemm_s8_neon_impl.hpp.
#include "gemm_s8_neon_impl.hpp"
#include "gemm_s8_tables.hpp"

namespace zt::kernels::s8 {
namespace {

struct Sdot {
  static constexpr int kRegs4 = 1;
  static void step4(int32x4_t* acc, int8x16_t b, int8x16_t a) { acc[0] = vdotq_s32(acc[0], b, a); }
  static void step4x2(int32x4_t* acc, int8x16_t b, int8x16_t a, int8x16_t b2, int8x16_t a2) {
    acc[0] = vdotq_s32(vdotq_s32(acc[0], b, a), b2, a2);
  }
  static int32x4_t finish4(const int32x4_t* acc) { return acc[0]; }
  static constexpr bool kAsm2x1 = false;
  // MR·NV·4 accumulators + 4·NV B registers + a broadcast within 32 registers.
  static constexpr int max_mr(bool, int nv) { return nv == 1 ? 6 : (nv == 2 ? 2 : 1); }
};

}  // namespace

const MicroKernel micro_kernel_neon_dot = Tables<neon::Kernels<Sdot>>::kernel;

}  // namespace zt::kernels::s8
