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

#if defined(__aarch64__)
// The quad loop of the 2-row × 16-lane tile (the one LeNet-5's convolutions run on) in assembly,
// scheduled for the A53's in-order pipe as llvm-mca models it (docs/results/a53-model.md): one
// 128-bit NEON instruction issues per cycle and its result is ready 6 cycles later; issue and
// write-back are in order, so a load or an integer instruction after a NEON one waits for it
// (a load about 1 cycle, an ADD about 2, a post-indexed load about 6: none are used here).
// A pair of quads is two halves (B vectors j = 0, 1, then 2, 3); each half is 8 SMULL, then 8
// SMLAL into the same 8 int16 temporaries v0–v7, then 8 SADALP into the accumulators, so every
// chain's next step is 8 instructions later. The next vectors' loads and the pointer updates
// sit between them, and the next pair's A words and first B vectors are loaded during the
// current pair (the last pair is a copy of the loop body without them, so nothing is read past
// the operands). Modelled at 67 cycles per pair with packed A and B at quad offsets, 65 with B at
// a stride (rows A: 70 and 68; the earlier loop, which also undid a +128 bias with 8 EORs per
// pair, 90 and 82). Registers: v8–v23 the accumulators, in the order of Kernels::micro's
// acc[m][0][2j + half] (row m, lanes 4j..4j+3); v24/v25 the A words of rows 0/1 for quad q and
// v26/v27 for quad q + 1 (packed A: two LD2R; rows A: four LD1R); v28/v29 B vectors j, j + 1 of
// quad q and v30/v31 of quad q + 1. The odd quad after the pairs (ZT_S8_SINGLE) takes 45 cycles
// on the model.
//
// Half of a pair: the 24 NEON instructions with the fill F<i> placed after instruction i.
// R0..R3 / S0..S3: the accumulators of rows 0 / 1 for vectors j (halves a, b) and j + 1.
#define ZT_S8_HALF(R0, R1, R2, R3, S0, S1, S2, S3, F1, F9, F11, F17, F18, F19, F20, F21)        \
  "smull v0.8h, v28.8b, v24.8b\n"                                                                  \
  "smull2 v1.8h, v28.16b, v24.16b\n" F1                                                            \
  "smull v2.8h, v28.8b, v25.8b\n"                                                                  \
  "smull2 v3.8h, v28.16b, v25.16b\n"                                                               \
  "smull v4.8h, v29.8b, v24.8b\n"                                                                  \
  "smull2 v5.8h, v29.16b, v24.16b\n"                                                               \
  "smull v6.8h, v29.8b, v25.8b\n"                                                                  \
  "smull2 v7.8h, v29.16b, v25.16b\n"                                                               \
  "smlal v0.8h, v30.8b, v26.8b\n"                                                                  \
  "smlal2 v1.8h, v30.16b, v26.16b\n" F9                                                            \
  "smlal v2.8h, v30.8b, v27.8b\n"                                                                  \
  "smlal2 v3.8h, v30.16b, v27.16b\n" F11                                                           \
  "smlal v4.8h, v31.8b, v26.8b\n"                                                                  \
  "smlal2 v5.8h, v31.16b, v26.16b\n"                                                               \
  "smlal v6.8h, v31.8b, v27.8b\n"                                                                  \
  "smlal2 v7.8h, v31.16b, v27.16b\n"                                                               \
  "sadalp v" R0 ".4s, v0.8h\n"                                                                     \
  "sadalp v" R1 ".4s, v1.8h\n" F17                                                                 \
  "sadalp v" S0 ".4s, v2.8h\n" F18                                                                 \
  "sadalp v" S1 ".4s, v3.8h\n" F19                                                                 \
  "sadalp v" R2 ".4s, v4.8h\n" F20                                                                 \
  "sadalp v" R3 ".4s, v5.8h\n" F21                                                                 \
  "sadalp v" S2 ".4s, v6.8h\n"                                                                     \
  "sadalp v" S3 ".4s, v7.8h\n"
#define ZT_S8_HALF0(F1, F9, F11, F17, F18, F19, F20, F21) \
  ZT_S8_HALF("8", "9", "10", "11", "16", "17", "18", "19", F1, F9, F11, F17, F18, F19, F20, F21)
#define ZT_S8_HALF1(F1, F9, F11, F17, F18, F19, F20, F21) \
  ZT_S8_HALF("12", "13", "14", "15", "20", "21", "22", "23", F1, F9, F11, F17, F18, F19, F20, F21)
// One pair. NEXT_OFF: the next pair's B offsets are read (quad offsets); ADV_B: p0 and p1 move to
// the next pair; ADV_A, LOAD_A: the A pointers move on and the next A words are loaded; LOAD_B:
// the next pair's vectors 0 and 1 are loaded; END: the loop's count and branch.
#define ZT_S8_PAIR(NEXT_OFF, ADV_B, ADV_A, LOAD_A, LOAD_B0, LOAD_B1, END)                         \
  ZT_S8_HALF0(NEXT_OFF, "ldr q28, [%[p0], #32]\n", "ldr q29, [%[p0], #48]\n",                     \
              "ldr q30, [%[p1], #32]\n", "", "ldr q31, [%[p1], #48]\n", ADV_B, "")                \
  ZT_S8_HALF1("", LOAD_B0, "", "", ADV_A, LOAD_B1, "", LOAD_A END)
#define ZT_S8_LOAD_B0 "ldr q28, [%[p0]]\n ldr q29, [%[p0], #16]\n"
#define ZT_S8_LOAD_B1 "ldr q30, [%[p1]]\n ldr q31, [%[p1], #16]\n"
// The two A layouts, each stepping by two quads: packed (rows 0 and 1 of a quad in consecutive
// words, a0 at quad q and a2 at quad q + 1: one LD2R each) and rows (a0, a1 at quad q, a2, a3
// at quad q + 1: one LD1R each).
#define ZT_S8_ADV_A_PACKED "add %[a0], %[a0], %[astep2]\n add %[a2], %[a2], %[astep2]\n"
#define ZT_S8_LOAD_A_PACKED "ld2r {v24.4s, v25.4s}, [%[a0]]\n ld2r {v26.4s, v27.4s}, [%[a2]]\n"
#define ZT_S8_SINGLE_A_PACKED "ld2r {v24.4s, v25.4s}, [%[a0]]\n"
#define ZT_S8_ADV_A_ROWS                                                                           \
  "add %[a0], %[a0], %[astep2]\n add %[a1], %[a1], %[astep2]\n"                                    \
  "add %[a2], %[a2], %[astep2]\n add %[a3], %[a3], %[astep2]\n"
#define ZT_S8_LOAD_A_ROWS                                                                          \
  "ld1r {v24.4s}, [%[a0]]\n ld1r {v25.4s}, [%[a1]]\n ld1r {v26.4s}, [%[a2]]\n ld1r {v27.4s}, [%[a3]]\n"
#define ZT_S8_SINGLE_A_ROWS "ld1r {v24.4s}, [%[a0]]\n ld1r {v25.4s}, [%[a1]]\n"
// The two B layouts: quad offsets (p0 = b + off[q], p1 = b + off[q + 1]) and a stride.
#define ZT_S8_FIRST_B_OFF                                                                          \
  "ldpsw %[o0], %[o1], [%[off]]\n add %[off], %[off], #8\n"                                        \
  "add %[p0], %[b], %[o0]\n add %[p1], %[b], %[o1]\n"
#define ZT_S8_NEXT_OFF "ldpsw %[o0], %[o1], [%[off]]\n"
#define ZT_S8_ADV_B_OFF "add %[off], %[off], #8\n add %[p0], %[b], %[o0]\n add %[p1], %[b], %[o1]\n"
#define ZT_S8_ADV_B_STEP "add %[p0], %[p0], %[bstep2]\n add %[p1], %[p1], %[bstep2]\n"
#define ZT_S8_SINGLE_B_OFF "ldrsw %[p0], [%[off]]\n add %[p0], %[b], %[p0]\n"

// One quad (the odd one after the pairs): rows 0/1 only, temporaries v0–v6 and v26.
#define ZT_S8_SINGLE(TOP) \
  TOP \
  "ldr q28, [%[p0]]\n" \
  "ldr q29, [%[p0], #16]\n" \
  "ldr q30, [%[p0], #32]\n" \
  "ldr q31, [%[p0], #48]\n" \
  "smull v0.8h, v28.8b, v24.8b\n" \
  "smull2 v1.8h, v28.16b, v24.16b\n" \
  "smull v2.8h, v28.8b, v25.8b\n" \
  "smull2 v3.8h, v28.16b, v25.16b\n" \
  "smull v4.8h, v29.8b, v24.8b\n" \
  "smull2 v5.8h, v29.16b, v24.16b\n" \
  "smull v6.8h, v29.8b, v25.8b\n" \
  "smull2 v26.8h, v29.16b, v25.16b\n" \
  "sadalp v8.4s, v0.8h\n" \
  "sadalp v9.4s, v1.8h\n" \
  "sadalp v16.4s, v2.8h\n" \
  "sadalp v17.4s, v3.8h\n" \
  "smull v0.8h, v30.8b, v24.8b\n" \
  "smull2 v1.8h, v30.16b, v24.16b\n" \
  "smull v2.8h, v30.8b, v25.8b\n" \
  "smull2 v3.8h, v30.16b, v25.16b\n" \
  "sadalp v10.4s, v4.8h\n" \
  "sadalp v11.4s, v5.8h\n" \
  "sadalp v18.4s, v6.8h\n" \
  "sadalp v19.4s, v26.8h\n" \
  "smull v4.8h, v31.8b, v24.8b\n" \
  "smull2 v5.8h, v31.16b, v24.16b\n" \
  "smull v6.8h, v31.8b, v25.8b\n" \
  "smull2 v26.8h, v31.16b, v25.16b\n" \
  "sadalp v12.4s, v0.8h\n" \
  "sadalp v13.4s, v1.8h\n" \
  "sadalp v20.4s, v2.8h\n" \
  "sadalp v21.4s, v3.8h\n" \
  "sadalp v14.4s, v4.8h\n" \
  "sadalp v15.4s, v5.8h\n" \
  "sadalp v22.4s, v6.8h\n" \
  "sadalp v23.4s, v26.8h\n"

// The sums over quads q < nq (nq ≥ 1: pairs, then the odd one) of rows a0, a1 (quad q of a row
// at row + q·a_step) and B (quad q at b + b_off[q], or b + q·b_step when b_off is null), stored
// at acc: the 16 accumulators (kFinish false), or the 8 finished lane sums, row m's lanes
// 4j..4j+3 at acc[4m + j] (kFinish true: pair_sums done by ADDP).
template <bool kFinish>
void quads_2x1(int32x4_t* acc, const std::int8_t* a0, const std::int8_t* a1, ptrdiff_t a_step,
               const std::uint8_t* b, const std::int32_t* b_off, ptrdiff_t b_step, int nq) {
  const std::int8_t *a2 = a0 + a_step, *a3 = a1 + a_step;
  const ptrdiff_t astep2 = 2 * a_step, bstep2 = 2 * b_step;
  const std::uint8_t *p0 = b, *p1 = b + b_step;  // B at a stride; quad offsets set them in the asm
  std::int64_t o0, o1;
  int np = nq / 2;
  const int odd = nq % 2;
  const bool packed = a1 == a0 + 4;  // Kernels::micro's packed A (word (m, q) at a + q·a_step + 4m)
#define ZT_S8_PAIRS_START                                                                          \
  "movi v8.4s, #0\n movi v9.4s, #0\n movi v10.4s, #0\n movi v11.4s, #0\n"                         \
  "movi v12.4s, #0\n movi v13.4s, #0\n movi v14.4s, #0\n movi v15.4s, #0\n"                       \
  "movi v16.4s, #0\n movi v17.4s, #0\n movi v18.4s, #0\n movi v19.4s, #0\n"                       \
  "movi v20.4s, #0\n movi v21.4s, #0\n movi v22.4s, #0\n movi v23.4s, #0\n"                       \
  "cbz %w[n], 3f\n"
#define ZT_S8_PAIRS_STORE                                                                          \
  "st1 {v8.4s, v9.4s, v10.4s, v11.4s}, [%[acc]], #64\n"                                            \
  "st1 {v12.4s, v13.4s, v14.4s, v15.4s}, [%[acc]], #64\n"                                          \
  "st1 {v16.4s, v17.4s, v18.4s, v19.4s}, [%[acc]], #64\n"                                          \
  "st1 {v20.4s, v21.4s, v22.4s, v23.4s}, [%[acc]], #64\n"
#define ZT_S8_PAIRS_FINISH                                                                         \
  "addp v0.4s, v8.4s, v9.4s\n addp v1.4s, v10.4s, v11.4s\n"                                        \
  "addp v2.4s, v12.4s, v13.4s\n addp v3.4s, v14.4s, v15.4s\n"                                      \
  "addp v4.4s, v16.4s, v17.4s\n addp v5.4s, v18.4s, v19.4s\n"                                      \
  "addp v6.4s, v20.4s, v21.4s\n addp v7.4s, v22.4s, v23.4s\n"                                      \
  "st1 {v0.4s, v1.4s, v2.4s, v3.4s}, [%[acc]], #64\n"                                              \
  "st1 {v4.4s, v5.4s, v6.4s, v7.4s}, [%[acc]], #64\n"
// FIRST_B: p0, p1 of the first pair; ADV_B_LAST: what the odd quad needs of B after the last
// pair; SINGLE_B: its B pointer.
// Every register the asm writes is early-clobber: p0 starts equal to b, and GCC would otherwise
// give the two one register.
#define ZT_S8_QUADS(FIRST_B, NEXT_OFF, ADV_B, ADV_B_LAST, SINGLE_B, ADV_A, LOAD_A, SINGLE_A, END)  \
  asm volatile(ZT_S8_PAIRS_START FIRST_B LOAD_A ZT_S8_LOAD_B0 ZT_S8_LOAD_B1                        \
               "subs %w[n], %w[n], #1\n b.eq 2f\n"                                                 \
               "1:\n" ZT_S8_PAIR(NEXT_OFF, ADV_B, ADV_A, LOAD_A, ZT_S8_LOAD_B0, ZT_S8_LOAD_B1,     \
                                 "subs %w[n], %w[n], #1\n") "b.ne 1b\n"                            \
               "2:\n" ZT_S8_PAIR("", ADV_B_LAST, ADV_A, "", "", "", "")                            \
               "3:\n tbz %w[odd], #0, 4f\n" ZT_S8_SINGLE(SINGLE_B SINGLE_A) "4:\n" END            \
               : [a0] "+&r"(a0), [a1] "+&r"(a1), [a2] "+&r"(a2), [a3] "+&r"(a3), [off] "+&r"(b_off), \
                 [n] "+&r"(np), [acc] "+&r"(acc), [p0] "+&r"(p0), [p1] "+&r"(p1), [o0] "=&r"(o0),    \
                 [o1] "=&r"(o1)                                                                    \
               : [b] "r"(b), [astep2] "r"(astep2), [bstep2] "r"(bstep2), [odd] "r"(odd)            \
               : "cc", "memory", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10",  \
                 "v11", "v12", "v13", "v14", "v15", "v16", "v17", "v18", "v19", "v20", "v21",      \
                 "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31")
#define ZT_S8_QUADS_A(B_ARGS, END)                                                                 \
  if (packed)                                                                                      \
    ZT_S8_QUADS(B_ARGS, ZT_S8_ADV_A_PACKED, ZT_S8_LOAD_A_PACKED, ZT_S8_SINGLE_A_PACKED, END);      \
  else                                                                                             \
    ZT_S8_QUADS(B_ARGS, ZT_S8_ADV_A_ROWS, ZT_S8_LOAD_A_ROWS, ZT_S8_SINGLE_A_ROWS, END)
#define ZT_S8_B_OFF ZT_S8_FIRST_B_OFF, ZT_S8_NEXT_OFF, ZT_S8_ADV_B_OFF, "", ZT_S8_SINGLE_B_OFF
#define ZT_S8_B_STEP "", "", ZT_S8_ADV_B_STEP, "add %[p0], %[p0], %[bstep2]\n", ""
  if (b_off != nullptr) {
    if constexpr (kFinish)
      ZT_S8_QUADS_A(ZT_S8_B_OFF, ZT_S8_PAIRS_FINISH);
    else
      ZT_S8_QUADS_A(ZT_S8_B_OFF, ZT_S8_PAIRS_STORE);
  } else {
    if constexpr (kFinish)
      ZT_S8_QUADS_A(ZT_S8_B_STEP, ZT_S8_PAIRS_FINISH);
    else
      ZT_S8_QUADS_A(ZT_S8_B_STEP, ZT_S8_PAIRS_STORE);
  }
}
#undef ZT_S8_PAIRS_START
#undef ZT_S8_PAIRS_STORE
#undef ZT_S8_PAIRS_FINISH
#undef ZT_S8_QUADS
#undef ZT_S8_QUADS_A
#undef ZT_S8_B_OFF
#undef ZT_S8_B_STEP
#undef ZT_S8_HALF
#undef ZT_S8_HALF0
#undef ZT_S8_HALF1
#undef ZT_S8_PAIR
#undef ZT_S8_LOAD_B0
#undef ZT_S8_LOAD_B1
#undef ZT_S8_ADV_A_PACKED
#undef ZT_S8_LOAD_A_PACKED
#undef ZT_S8_SINGLE_A_PACKED
#undef ZT_S8_ADV_A_ROWS
#undef ZT_S8_LOAD_A_ROWS
#undef ZT_S8_SINGLE_A_ROWS
#undef ZT_S8_FIRST_B_OFF
#undef ZT_S8_NEXT_OFF
#undef ZT_S8_ADV_B_OFF
#undef ZT_S8_ADV_B_STEP
#undef ZT_S8_SINGLE_B_OFF
#undef ZT_S8_SINGLE
#endif

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
  // The 2 × 1 tile's quads in assembly (aarch64; see quads_2x1).
#if defined(__aarch64__)
  static constexpr bool kAsm2x1 = true;
  template <bool kFinish>
  static void quads_2x1(int32x4_t* acc, const std::int8_t* a0, const std::int8_t* a1, ptrdiff_t a_step,
                        const std::uint8_t* b, const std::int32_t* b_off, ptrdiff_t b_step, int nq) {
    s8::quads_2x1<kFinish>(acc, a0, a1, a_step, b, b_off, b_step, nq);
  }
#else
  static constexpr bool kAsm2x1 = false;
#endif
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
