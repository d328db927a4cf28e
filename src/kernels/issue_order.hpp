// Keeping the statement order of a hot NEON kernel in the machine code, for in-order cores.
//
// The Cortex-A53 issues in program order and waits out each NEON result (llvm-mca's model: 6
// cycles), so a kernel for it can be written in the order it should issue: one operation over
// several independent vectors before the next, each result well ahead of its reader. Two GCC
// passes undo that:
// - TER (temporary expression replacement) expands a value used once right beside its reader,
//   so `t = x >> 15; ...; x ^= t` becomes a shift immediately followed by its xor;
// - the instruction schedulers, tuned for out-of-order cores, regroup what is left.
// ZT_AS_WRITTEN turns off both for one function, so that its statement order is its issue
// order; put it on the function the kernel's loop is inlined into. Other compilers get the
// code unannotated. docs/results/a53-model.md has the modelled cycles with and without.
#pragma once

//
// ZT_PER_ITERATION keeps a loop's invariants inside it (no loop-invariant motion, GIMPLE's or
// RTL's) for one function: for a loop over a kernel body that already fills the register file
// (the FP32 Gaussian block), hoisting its constants out of the loop spills the body's own
// vectors, and reloading them per iteration costs less.
#if defined(__GNUC__) && !defined(__clang__)
#define ZT_AS_WRITTEN __attribute__((optimize("no-tree-ter", "no-schedule-insns", "no-schedule-insns2")))
#define ZT_PER_ITERATION __attribute__((optimize("no-tree-loop-im", "no-move-loop-invariants")))
#else
#define ZT_AS_WRITTEN
#define ZT_PER_ITERATION
#endif
