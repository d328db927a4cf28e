// NEON int8 micro-kernels for armv7 and ARMv8.0 (Cortex-A53): widening multiplies vmull_s8 give
// 8 int16 products (2 lanes × 4 terms), vpadalq_s16 adds them pairwise into int32. A lane's
// 4-term sum is kept as two int32 halves until the end (pair_sums). The tile loops are
// gemm_s8_neon_impl.hpp.
//
// Two quads at a time (step4x2), vmlal_s8 adds the second quad's products into the first's
// int16 lanes before the one vpadalq_s16: 3 instructions per 16 multiply-accumulates instead of
// 4 (the A53 issues about one of them per cycle, docs/results/a53-model.md). Two products fit
// one int16 when one factor avoids −128: |a·b| ≤ 128·127, 2·16 256 = 32 512 < 2^15, but
// 2·(−128)² = 32 768 does not. So this kernel needs the B operand in [−127, 127], which the
// int8 kernels' callers guarantee for every operand (the NITI range, quant.hpp); A may be −128.
#include "gemm_s8_neon_impl.hpp"
#include "gemm_s8_tables.hpp"

namespace zt::kernels::s8 {
namespace {

struct Mull {
  static constexpr int kRegs4 = 2;  // [lane 0 half a, half b, lane 1 a, b], then lanes 2, 3
  static void step4(int32x4_t* acc, int8x16_t b, int8x16_t a) {
    acc[0] = vpadalq_s16(acc[0], vmull_s8(vget_low_s8(b), vget_low_s8(a)));
#if defined(__aarch64__)
    acc[1] = vpadalq_s16(acc[1], vmull_high_s8(b, a));
#else
    acc[1] = vpadalq_s16(acc[1], vmull_s8(vget_high_s8(b), vget_high_s8(a)));
#endif
  }
  static void step4x2(int32x4_t* acc, int8x16_t b, int8x16_t a, int8x16_t b2, int8x16_t a2) {
    acc[0] = vpadalq_s16(acc[0], vmlal_s8(vmull_s8(vget_low_s8(b), vget_low_s8(a)), vget_low_s8(b2), vget_low_s8(a2)));
#if defined(__aarch64__)
    acc[1] = vpadalq_s16(acc[1], vmlal_high_s8(vmull_high_s8(b, a), b2, a2));
#else
    acc[1] = vpadalq_s16(acc[1], vmlal_s8(vmull_s8(vget_high_s8(b), vget_high_s8(a)), vget_high_s8(b2), vget_high_s8(a2)));
#endif
  }
  static int32x4_t finish4(const int32x4_t* acc) { return neon::pair_sums(acc[0], acc[1]); }
  // MR·NV·8 accumulators + 4·NV B registers + a broadcast: 32 registers on aarch64, 16 on armv7.
  // (GCC 12 already keeps a few accumulators of the 2×1 tile on the stack; 3×1 spills more.)
  static constexpr int max_mr(bool, int nv) {
#if defined(__aarch64__)
    return nv == 1 ? 2 : (nv == 2 ? 1 : 0);
#else
    return nv == 1 ? 1 : 0;
#endif
  }
};

}  // namespace

const MicroKernel micro_kernel_neon = Tables<neon::Kernels<Mull>>::kernel;

}  // namespace zt::kernels::s8
