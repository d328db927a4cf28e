// Sparse uniform int8 perturbation of ElasticZO-INT8 (docs/design.md §6), counter-based and integer
// only.
// Element j (global index within the perturbed parameter range) draws two 32-bit words,
// w1 = hash32(hash_key(seed, 1), j) and w2 = hash32(hash_key(seed, 2), j), always both:
//   m = (w1 ≥ zero_threshold)   (zero_threshold = p_zero · 2^32, so P(m = 1) = 1 − p_zero)
//   u = ((w2 · (2·r_max + 1)) >> 32) − r_max      uniform in [−r_max, r_max]
//   z = m · u
// perturb:   θ[i] = clamp(θ[i] + k·z(first + i), ±127)
// update:    θ[i] = clamp(clamp(θ[i] + z) − û, ±127),  û = PstoShift(g·z, s_l) with
//            s_l = bitlen(r_max) − b_zo when ≥ 1, else û = g·z        (the merged restore+update)
// k is the perturbation multiple (+1, −2); g ∈ {−1, 0, +1} (any |g| < 2^24 is exact); b_zo ≥ 1.
// Element-wise, so any split over threads gives the same result.
#pragma once

#include <cstddef>
#include <cstdint>

#include "zotrain/kernels/isa.hpp"

namespace zt::kernels {

struct PerturbS8Params {
  std::uint64_t seed = 0;
  std::uint64_t zero_threshold = 0;  // in [0, 2^32]
  int r_max = 1;                     // in [1, 127]
};

// z(j) for j = first .. first + n − 1 (the definition, for tests and the reference paths).
void perturbation_s8(const PerturbS8Params& p, std::uint32_t first, std::size_t n, std::int8_t* z);

using PerturbS8Fn = void (*)(std::int8_t* theta, std::size_t n, std::uint32_t first,
                             const PerturbS8Params& p, int k);
using ZoUpdateS8Fn = void (*)(std::int8_t* theta, std::size_t n, std::uint32_t first,
                              const PerturbS8Params& p, int g, int b_zo);

void perturb_s8_ref(std::int8_t* theta, std::size_t n, std::uint32_t first,
                    const PerturbS8Params& p, int k);
void zo_update_s8_ref(std::int8_t* theta, std::size_t n, std::uint32_t first,
                      const PerturbS8Params& p, int g, int b_zo);
void perturb_s8_portable(std::int8_t* theta, std::size_t n, std::uint32_t first,
                         const PerturbS8Params& p, int k);
void zo_update_s8_portable(std::int8_t* theta, std::size_t n, std::uint32_t first,
                           const PerturbS8Params& p, int g, int b_zo);

void perturb_s8_neon(std::int8_t* theta, std::size_t n, std::uint32_t first,  // ARM builds
                     const PerturbS8Params& p, int k);
void zo_update_s8_neon(std::int8_t* theta, std::size_t n, std::uint32_t first,  // ARM builds
                       const PerturbS8Params& p, int g, int b_zo);

// A cached direction (zo.cache_direction): z of one query drawn once into an int8 buffer, then
// read back by the probes and the update instead of regenerated — the same bits as perturb and
// zo_update with the same parameters:
//   fill_perturbation_s8: z[i] = z(first + i)                            (as perturbation_s8)
//   perturb_cached_s8:    θ[i] = clamp(θ[i] + k·z[i], ±127)
//   zo_update_cached_s8:  θ[i] = clamp(clamp(θ[i] + z[i]) − û, ±127),  û as zo_update's (from
//                         p.r_max and b_zo)
using FillPerturbationS8Fn = void (*)(const PerturbS8Params& p, std::uint32_t first, std::size_t n,
                                      std::int8_t* z);
using PerturbCachedS8Fn = void (*)(std::int8_t* theta, const std::int8_t* z, std::size_t n, int k);
using ZoUpdateCachedS8Fn = void (*)(std::int8_t* theta, const std::int8_t* z, std::size_t n,
                                    const PerturbS8Params& p, int g, int b_zo);
void fill_perturbation_s8_ref(const PerturbS8Params& p, std::uint32_t first, std::size_t n,
                              std::int8_t* z);
void fill_perturbation_s8_portable(const PerturbS8Params& p, std::uint32_t first, std::size_t n,
                                   std::int8_t* z);
void fill_perturbation_s8_neon(const PerturbS8Params& p, std::uint32_t first, std::size_t n,  // ARM
                               std::int8_t* z);
void perturb_cached_s8_ref(std::int8_t* theta, const std::int8_t* z, std::size_t n, int k);
void perturb_cached_s8_portable(std::int8_t* theta, const std::int8_t* z, std::size_t n, int k);
void perturb_cached_s8_neon(std::int8_t* theta, const std::int8_t* z, std::size_t n, int k);  // ARM
void zo_update_cached_s8_ref(std::int8_t* theta, const std::int8_t* z, std::size_t n,
                             const PerturbS8Params& p, int g, int b_zo);
void zo_update_cached_s8_portable(std::int8_t* theta, const std::int8_t* z, std::size_t n,
                                  const PerturbS8Params& p, int g, int b_zo);
void zo_update_cached_s8_neon(std::int8_t* theta, const std::int8_t* z, std::size_t n,  // ARM
                              const PerturbS8Params& p, int g, int b_zo);

// Poor Man's Training on int8 (docs/design.md §6.1): layer-wise ±1 weight perturbation
// (μ = 1) and its update (reference loops; a probe is one layer among the step's forward passes,
// so its cost is small beside them). ξ of element j, from `seed`, by source:
//   kRademacher  −1 where the top bit of hash32(hash_key(seed, kRademacherStream), j) is 1
//   kXorshift    PMT's generator (kernels/xorshift.hpp): x_0 = xorshift_state(seed,
//                kRademacherStream), ξ_j = −1 where the least significant bit of x_{j+1} is 1,
//                else +1 — the FP32 source zo.perturbation xorshift of the same (seed, stream)
// perturb_signs_s8: θ[i] = clamp(θ0[i] + ξ(first + i), ±127)   (θ0: the layer's saved weights)
// update_signs_s8:  θ[i] = clamp(θ[i] − StoShift(s_i, frac, w_i), ±127), where
//                   s_i = Σ_q coef[q] · ξ_q(first + i) saturated to int32 (ξ_q from seeds[q])
//                   and w_i = hash32(hash_key(rounding_seed, 0), first + i): the update
//                   −Σ_q c_q ξ_q with the c_q in fixed point (coef = c · 2^frac), stochastically
//                   rounded so that updates below one step still move θ in expectation.
// Element-wise, so any split over threads gives the same result.
enum class SignSource : std::uint8_t { kRademacher, kXorshift };
void signs_s8(SignSource src, std::uint64_t seed, std::uint32_t first, std::size_t n,
              std::int8_t* xi);
void perturb_signs_s8(SignSource src, const std::int8_t* theta0, std::int8_t* theta,
                      std::size_t n, std::uint32_t first, std::uint64_t seed);
void update_signs_s8(SignSource src, std::int8_t* theta, std::size_t n, std::uint32_t first,
                     const std::uint64_t* seeds, const std::int32_t* coef, int queries, int frac,
                     std::uint64_t rounding_seed);
// Node perturbation's update of a fully connected layer θ [M, K] from the node gradient
// G [n, M] (fixed point, frac fractional bits) and the layer's input x [n, K]:
//   θ[k·K + j] = clamp(θ − StoShift(s, frac, w), ±127), s = Σ_n G[n·M + k] · x[n·K + j]
//   saturated to int32, w = hash32(hash_key(rounding_seed, 0), first + k·K + j)
// row: the caller's scratch of K int64 (the sums of one output).
void update_nodes_s8(std::int8_t* theta, std::size_t M, std::size_t K, const std::int32_t* G,
                     const std::int8_t* x, std::size_t n, int frac, std::int64_t* row,
                     std::uint32_t first, std::uint64_t rounding_seed);

// kNeon and kNeonDot → _neon where built.
PerturbS8Fn select_perturb_s8(Isa isa);
ZoUpdateS8Fn select_zo_update_s8(Isa isa);
FillPerturbationS8Fn select_fill_perturbation_s8(Isa isa);
PerturbCachedS8Fn select_perturb_cached_s8(Isa isa);
ZoUpdateCachedS8Fn select_zo_update_cached_s8(Isa isa);

}  // namespace zt::kernels
