// The integer ends of an int8 training step (integer arithmetic only).
//
// xent_error_s8 — NITI's integer cross-entropy error (docs/design.md §5.4) for int8 logits
//   [n, classes] with exponent e and labels [n]: P ≈ 2^11 · (softmax − onehot) per sample
//   (base-2 exponent via 47274/2^15 ≈ log2 e when e > −7, second-order Taylor when e ≤ −7),
//   then err = clamp(StoShift(P, 4), ±127) with exponent 0. The StoShift word of element i of
//   the batch is hash32(hash_key(seed, 0), i). Exponent range: e > 24 is computed as 24 (exact:
//   for e ≥ 15 only the maximal logits keep T_j > 0); e < −24 as −24 (keeps T_j · 2^11 within
//   int64; there every |A_j · 2^e| < 2^−17 and P is the uniform split up to flooring).
//   classes ≤ 4096.
//
// zo_sign_s8 — the integer ZO gradient sign: sign(ℓ+ − ℓ−) from the + pass's logits (a, ea) and
//   the − pass's (b, eb), each sample's cross-entropy computed in fixed point in log2 units
//   (docs/design.md §6): x_j = floor(47274 · (α_j − α_t) · 2^(e+16) / 2^15) (16 fractional bits),
//   ℓ_b = p + log2 Σ_j 2^(x_j − p) with p = max_j x_j, the powers from a 257-entry table of
//   2^(−i/256) and the log2 from bit length plus a 257-entry table of log2(1 + i/256), both
//   interpolated linearly; terms below 2^−31 of the largest are dropped. sign(Σ_b ℓ+_b − ℓ−_b).
//   Returns −1, 0 or +1; swapping the passes negates it exactly. Exponents are clamped to
//   [−40, 24] (exact below; int64 headroom above). classes ≤ 4096.
//
// zo_sign_s8_eq12 — the paper's Eqs. 9–12 as written: Σ_b floor(log2 Σ_j 2^α̃_j) −
//   floor(log2 Σ_j 2^β̃_j) with integer exponents α̃ (flooring the exponents and each sample's
//   log2 turns close calls into coin flips; kept for the comparison with the paper).
//   α̂_j is computed as floor(47274 · (α_j − α_t) · 2^ea / 2^15),
//   which equals Eqs. 9–10's shifted product for s = min(ea, eb); α̃_j ≤ 10 by construction, so
//   A_b ≤ classes · 2^10. Exponents are clamped to [−40, 40] (exact below: for e ≤ −9 every α̂ is
//   already 0 or −1; above, int64 headroom). Antisymmetric like zo_sign_s8.
#pragma once

#include <cstdint>

namespace zt::kernels {

void xent_error_s8(int n, int classes, const std::int8_t* logits, int exponent,
                   const std::uint8_t* labels, std::uint64_t seed, std::int8_t* err);

int zo_sign_s8(int n, int classes, const std::int8_t* a, int ea, const std::int8_t* b, int eb,
               const std::uint8_t* labels);
int zo_sign_s8_eq12(int n, int classes, const std::int8_t* a, int ea, const std::int8_t* b,
                    int eb, const std::uint8_t* labels);

}  // namespace zt::kernels
