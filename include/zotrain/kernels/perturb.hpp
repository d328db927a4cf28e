// Seeded perturbation — the hot spot of the ZO phases. The Gaussian first; the other sources
// (zo.perturbation) at the end.
//   z(seed, stream, i) ~ N(0, 1) is a pure function of its arguments (counter-based hash of
//   (seed, stream, i), then an exact-in-IEEE transform written in this project: no libm, no FMA
//   contraction), so every path, thread count and architecture produces the same bits.
//   perturb:  theta[i] += scale · z(seed, stream, offset + i),  i ∈ [0, n)
//   fill:     out[i]    =         z(seed, stream, offset + i)
//   perturb_fill: both in one pass, theta as perturb and z[i] as fill's out[i] (the first
//             perturbation of a cached direction; theta and z must not overlap)
//   update_perturb_fill: theta[i] += prev · z[i] (the direction z holds), then perturb_fill
//             into the same z: a cached direction's deferred update and the next direction's
//             first perturbation in one pass, the same bits as add_scaled_f32 then perturb_fill
// `stream` identifies the parameter tensor (e.g. 2·layer + {0 weight, 1 bias}).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "zotrain/kernels/isa.hpp"
#include "zotrain/kernels/xorshift.hpp"

namespace zt::kernels {

// One element, the definition (used by the reference paths and by tests).
float gaussian_ref(std::uint64_t seed, std::uint64_t stream, std::uint64_t index);

using PerturbGaussianF32Fn = void (*)(float* theta, std::size_t n, std::uint64_t seed,
                                      std::uint64_t stream, std::uint64_t offset, float scale);
using FillGaussianF32Fn = void (*)(float* out, std::size_t n, std::uint64_t seed,
                                   std::uint64_t stream, std::uint64_t offset);
using PerturbFillF32Fn = void (*)(float* theta, float* z, std::size_t n, std::uint64_t seed,
                                  std::uint64_t stream, std::uint64_t offset, float scale);
using UpdatePerturbFillF32Fn = void (*)(float* theta, float* z, std::size_t n,
                                        std::uint64_t seed, std::uint64_t stream,
                                        std::uint64_t offset, float prev, float scale);

void perturb_gaussian_f32_ref(float* theta, std::size_t n, std::uint64_t seed,
                              std::uint64_t stream, std::uint64_t offset, float scale);
void perturb_gaussian_f32_portable(float* theta, std::size_t n, std::uint64_t seed,
                                   std::uint64_t stream, std::uint64_t offset, float scale);
void fill_gaussian_f32_ref(float* out, std::size_t n, std::uint64_t seed, std::uint64_t stream,
                           std::uint64_t offset);
void fill_gaussian_f32_portable(float* out, std::size_t n, std::uint64_t seed,
                                std::uint64_t stream, std::uint64_t offset);
void perturb_fill_gaussian_f32_ref(float* theta, float* z, std::size_t n, std::uint64_t seed,
                                   std::uint64_t stream, std::uint64_t offset, float scale);
void perturb_fill_gaussian_f32_portable(float* theta, float* z, std::size_t n, std::uint64_t seed,
                                        std::uint64_t stream, std::uint64_t offset, float scale);
void update_perturb_fill_gaussian_f32_ref(float* theta, float* z, std::size_t n,
                                          std::uint64_t seed, std::uint64_t stream,
                                          std::uint64_t offset, float prev, float scale);
void update_perturb_fill_gaussian_f32_portable(float* theta, float* z, std::size_t n,
                                               std::uint64_t seed, std::uint64_t stream,
                                               std::uint64_t offset, float prev, float scale);
#if defined(ZT_HAVE_NEON)  // built for ARM targets only (CMakeLists.txt)
void perturb_gaussian_f32_neon(float* theta, std::size_t n, std::uint64_t seed,
                               std::uint64_t stream, std::uint64_t offset, float scale);
void fill_gaussian_f32_neon(float* out, std::size_t n, std::uint64_t seed, std::uint64_t stream,
                            std::uint64_t offset);
void perturb_fill_gaussian_f32_neon(float* theta, float* z, std::size_t n, std::uint64_t seed,
                                    std::uint64_t stream, std::uint64_t offset, float scale);
void update_perturb_fill_gaussian_f32_neon(float* theta, float* z, std::size_t n,
                                           std::uint64_t seed, std::uint64_t stream,
                                           std::uint64_t offset, float prev, float scale);
#endif

// kNeon and kNeonDot select the NEON functions where they are built, else the portable ones.

PerturbGaussianF32Fn select_perturb_gaussian_f32(Isa isa);
FillGaussianF32Fn select_fill_gaussian_f32(Isa isa);
PerturbFillF32Fn select_perturb_fill_gaussian_f32(Isa isa);
UpdatePerturbFillF32Fn select_update_perturb_fill_gaussian_f32(Isa isa);

// Perturbation sources (src/kernels/perturb/perturb_sources.cpp): z(seed, stream, i) of each is
// a pure function of its arguments, like the Gaussian, with mean 0 and variance 1.
//   kGaussian    N(0, 1) (the above)
//   kRademacher  ±1, equally likely
//   kUniform     √3·U(−1, 1)
//   kXorshift    Poor Man's Training's generator: ±1 from Marsaglia's xorshift32 with shifts
//                (13, 17, 5), −1 where the state's least significant bit is 1. One sequence per
//                perturbation: x_0 = xorshift_state(seed, stream), element i is the sign of x_{i+1}
//                (the paper's xor_rand() called once per element). Any slice starts by a jump.
//   kPezoPool    PeZO's pre-generated pool: N uniform numbers drawn once from a pool seed and
//                scaled so that ‖pool‖ = E‖g_N‖ (g_N ~ N(0, I_N)), or by the power of two nearest
//                that factor; the perturbation of (seed, stream) is the pool repeated from the
//                offset o = hash(seed, stream) mod N: z_i = pool[(o + i) mod N]. Only Perturber
//                (below) draws it; the z of every window is N-periodic in i, so a tensor's updates
//                stay in an N-dimensional subspace of it (docs/design.md §4).
//   kPezoOnTheFly PeZO's on-the-fly generator: n small RNGs of b bits (maximal-length LFSRs,
//                one polynomial, phases drawn from hash(seed, stream)) each give one number per
//                cycle; cycle c's chunk of n numbers takes position k from RNG (k + c) mod n (the
//                rotation), maps each state v ∈ [1, 2^b) to (2v − 2^b)/2^b and is scaled so
//                that its norm is E‖g_n‖ (or the nearest power of two of that factor). Element i
//                of a tensor is position i mod n of chunk i / n. Period n·(2^b − 1) per RNG
//                phase set; like the pool, only a Perturber draws it.
enum class PerturbSource : std::uint8_t {
  kGaussian,
  kRademacher,
  kUniform,
  kXorshift,
  kPezoPool,
  kPezoOnTheFly
};
PerturbSource perturb_source(std::string_view name);  // throws zt::Error naming the choices
const char* perturb_source_name(PerturbSource s);
float perturbation_ref(PerturbSource s, std::uint64_t seed, std::uint64_t stream,
                       std::uint64_t index);
void perturb_f32_ref(PerturbSource s, float* theta, std::size_t n, std::uint64_t seed,
                     std::uint64_t stream, std::uint64_t offset, float scale);
PerturbGaussianF32Fn select_perturb_f32(PerturbSource s, Isa isa);  // not kPezoPool
FillGaussianF32Fn select_fill_f32(PerturbSource s, Isa isa);
PerturbFillF32Fn select_perturb_fill_f32(PerturbSource s, Isa isa);  // nullptr: none for s
UpdatePerturbFillF32Fn select_update_perturb_fill_f32(PerturbSource s, Isa isa);  // nullptr: none

// The sign of a kXorshift state (its steps: kernels/xorshift.hpp).
constexpr float xorshift_sign(std::uint32_t x) { return (x & 1U) != 0 ? -1.0f : 1.0f; }

// PeZO options (both PeZO sources).
inline constexpr std::size_t kPezoPoolSize = 4095;  // 2^12 − 1, PeZO's default
inline constexpr int kPezoRngs = 31;                // 2^5 − 1, PeZO's best count
inline constexpr int kPezoRngBits = 8;              // enough for RoBERTa in PeZO's Fig. 4
inline constexpr int kPezoMaxRngs = 64;
struct PezoOptions {
  std::size_t size = kPezoPoolSize;  // pool: N
  bool pow2_scale = false;  // scale by the nearest power of two (PeZO's hardware variant)
  std::uint64_t seed = 0;   // the pool's own seed (drawn once per run)
  int rngs = kPezoRngs;     // on-the-fly: n, in [2, kPezoMaxRngs]
  int rng_bits = kPezoRngBits;  // on-the-fly: b, in [4, 16]
  // Offsets: false = seeded (the window or the RNG phases of a perturbation are picked by a hash
  // of its (seed, stream)); true = stream, PeZO read literally: one run-long stream that
  // perturbation t continues where t − 1 stopped. Then perturb / fill take t (0, 1, … over the
  // run, every query counted) as `seed`, ignore `stream`, and element i of perturbation t is
  // element t·elements + i of the stream: pool[(t·elements + i) mod N], or the on-the-fly
  // generators (phases from `seed` above) at element t·elements + i.
  bool stream_offsets = false;
  std::uint64_t elements = 0;  // stream: D, the elements of one perturbation (≥ 1)
};
// Distinct windows of a pool of N under stream offsets advancing by D: N / gcd(D, N).
std::uint64_t pezo_stream_windows(std::uint64_t pool_size, std::uint64_t elements);
// E‖g_d‖ for g_d ~ N(0, I_d) = √2 Γ((d+1)/2) / Γ(d/2): below 64 by the recurrence
// Γ((d+3)/2)/Γ((d+2)/2) = Γ((d+1)/2)/Γ(d/2) · (d+1)/d, above by its asymptotic series (exact IEEE
// operations only, so the same bits everywhere; relative error < 1e-12 for d ≥ 64).
double expected_gaussian_norm(std::size_t d);
// The state sequence of a maximal-length b-bit Galois LFSR from state 1: 2^b − 1 distinct values
// in [1, 2^b) (b in [4, 16]; throws zt::Error otherwise).
std::vector<std::uint16_t> lfsr_sequence(int bits);

// theta[i] += scale · z[i], the product rounded on its own as in every perturb kernel: with z
// from fill(), the same bits as perturb() with the same scale (a cached direction).
void add_scaled_f32(float* theta, const float* z, std::size_t n, float scale);

// A source bound to its state: what a trainer holds. perturb / fill as the functions above.
class Perturber {
 public:
  Perturber(PerturbSource s, Isa isa, const PezoOptions& pezo = {});
  void perturb(float* theta, std::size_t n, std::uint64_t seed, std::uint64_t stream,
               std::uint64_t offset, float scale) const;
  void fill(float* out, std::size_t n, std::uint64_t seed, std::uint64_t stream,
            std::uint64_t offset) const;
  // perturb and fill of the same elements (z[i] is element offset + i) in one pass where the
  // source has one, else fill then add_scaled_f32; the same bits either way.
  void perturb_fill(float* theta, float* z, std::size_t n, std::uint64_t seed,
                    std::uint64_t stream, std::uint64_t offset, float scale) const;
  // theta += prev · z, then perturb_fill into z, in one pass where the source has one, else
  // add_scaled_f32 then perturb_fill; the same bits either way.
  void update_perturb_fill(float* theta, float* z, std::size_t n, std::uint64_t seed,
                           std::uint64_t stream, std::uint64_t offset, float prev,
                           float scale) const;
  PerturbSource source() const { return source_; }
  const std::vector<float>& pool() const { return pool_; }  // empty unless kPezoPool
  // o, kPezoPool: hash(seed, stream) mod N, or (t·D) mod N for t = seed with stream offsets.
  std::size_t pool_offset(std::uint64_t seed, std::uint64_t stream) const;
  // kPezoOnTheFly: RNG m's phase in its LFSR sequence for (seed, stream), m < rngs.
  std::size_t rng_phase(std::uint64_t seed, std::uint64_t stream, int m) const;

 private:
  // The generators' (seed, stream) and first element for a perturbation's element `offset`:
  // as given, or with stream offsets (run seed, 0) at t·D + offset for t = seed.
  struct OnTheFlyAt {
    std::uint64_t seed, stream, first;
  };
  OnTheFlyAt on_the_fly_at(std::uint64_t seed, std::uint64_t stream, std::uint64_t offset) const;
  // Writes elements [first, first + len) of (seed, stream) with theta += scale · z, or out = z.
  template <bool kFill>
  void on_the_fly(float* out, std::size_t len, std::uint64_t seed, std::uint64_t stream,
                  std::uint64_t first, float scale) const;
  PerturbSource source_;
  PerturbGaussianF32Fn perturb_ = nullptr;
  FillGaussianF32Fn fill_ = nullptr;
  PerturbFillF32Fn perturb_fill_ = nullptr;
  UpdatePerturbFillF32Fn update_perturb_fill_ = nullptr;
  std::vector<float> pool_;
  std::vector<std::uint16_t> lfsr_;  // kPezoOnTheFly: one period of the RNGs' polynomial
  int rngs_ = 0, bits_ = 0;
  bool pow2_ = false;
  bool stream_offsets_ = false;
  std::uint64_t elements_ = 0, run_seed_ = 0;  // stream offsets: D and the phases' seed
};

}  // namespace zt::kernels
