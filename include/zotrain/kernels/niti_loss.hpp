// The integer ends of an int8 training step (integer arithmetic only).
//
// xent_error_s8 — NITI's integer cross-entropy error (SPEC 5.4) for int8 logits [n, classes]
//   with exponent e and labels [n]: P ≈ 2^11 · (softmax − onehot) per sample (base-2 exponent
//   via 47274/2^15 ≈ log2 e when e > −7, second-order Taylor when e ≤ −7), then
//   err = clamp(StoShift(P, 4), ±127) with exponent 0. The StoShift word of element i of the
//   batch is hash32(hash_key(seed, 0), i).
//
// zo_sign_s8 — the integer ZO gradient sign (SPEC 6, Eqs. 9–12): sign(ℓ+ − ℓ−) from the
//   + pass's logits (a, ea) and the − pass's (b, eb), estimated as
//   Σ_b floor(log2 Σ_j 2^α̃_j) − floor(log2 Σ_j 2^β̃_j). Returns −1, 0 or +1.
#pragma once

#include <cstdint>

namespace zt::kernels {

void xent_error_s8(int n, int classes, const std::int8_t* logits, int exponent,
                   const std::uint8_t* labels, std::uint64_t seed, std::int8_t* err);

int zo_sign_s8(int n, int classes, const std::int8_t* a, int ea, const std::int8_t* b, int eb,
               const std::uint8_t* labels);

}  // namespace zt::kernels
