// Internal to the perturb kernel family: the one definition of the Gaussian generator, shared by
// the reference path (perturb_ref.cpp) and the portable fast path (perturb.cpp) so that both run
// the same IEEE operations in the same order (bit-identical by construction). Only +, −, ×, sqrt,
// exact int→float conversions and integer ops are used; every including .cpp must be listed in
// zt_bit_exact_sources() (cmake/BitExact.cmake: no FMA contraction), which this header checks.
//
// Layout of the counter space. Elements are grouped in blocks of 32; block b holds 16 pairs
// p = 16·b + j (j ∈ [0, 16)). Pair p yields two normals by Box–Muller: element 32·b + j gets
// r·cos φ and element 32·b + 16 + j gets r·sin φ. So a block is one 16-lane SIMD computation with
// contiguous stores and no shuffles.
//
// Per pair: two keyed 32-bit hashes of the low 32 bits of p (keys derived by mix64 from seed,
// stream and the high 32 bits of p) give a (radius) and b (angle). 24 bits of each are used:
//   u1 = 1 − (a >> 8)·2^-24 ∈ [2^-24, 1]       r = sqrt(−2 ln u1) ∈ [0, 5.7683]
//   φ  = 2π·(b >> 8)·2^-24 ∈ [0, 2π)
// ln (atanh series), sin and cos (Cephes polynomials) after exact range reduction.
#pragma once

#if !defined(ZT_BIT_EXACT)
#error "perturb_internal.hpp: list this file in zt_bit_exact_sources() (cmake/BitExact.cmake)"
#endif

#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__SSE2__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

#include "zotrain/core/rng.hpp"

// Wide generic vectors passed by value only between inline functions: no ABI is involved.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace zt::kernels::perturb_detail {

inline constexpr int kPairsPerBlock = 16;
inline constexpr int kBlock = 2 * kPairsPerBlock;  // elements per block

// Per-(seed, stream, high half of the pair index) hash keys.
struct Keys {
  std::uint32_t a0, a1, b0, b1;
};

inline Keys derive_keys(std::uint64_t seed, std::uint64_t stream, std::uint32_t pair_hi) {
  std::uint64_t s = mix64(seed ^ 0x6a09e667f3bcc909ULL);
  s = mix64(s ^ (stream * 0x9e3779b97f4a7c15ULL + 0xbb67ae8584caa73bULL));
  s = mix64(s ^ (static_cast<std::uint64_t>(pair_hi) * 0xd1b54a32d192ed03ULL + 0x3c6ef372fe94f82bULL));
  const std::uint64_t t = mix64(s + 0x9e3779b97f4a7c15ULL);
  return Keys{static_cast<std::uint32_t>(s), static_cast<std::uint32_t>(s >> 32),
              static_cast<std::uint32_t>(t), static_cast<std::uint32_t>(t >> 32)};
}

// The transform is written once, as templates over a lane type L: L = Scalar (one float, used by
// the reference) or L = Vec<W> (W lanes of GCC vector extensions, used by the fast path; GCC
// lowers each operation to as many native vectors as needed, which also interleaves W/16 blocks
// statement by statement and hides the latency of the long dependency chains). Every operation
// is elementwise and IEEE-exact, so each lane of Vec<W> equals the Scalar result bit for bit.
struct Scalar {
  using F = float;
  using U = std::uint32_t;
  using I = std::int32_t;
  static F to_f(I x) { return static_cast<float>(x); }
};

template <int W>
struct Vec {
  typedef float F __attribute__((vector_size(4 * W)));
  typedef std::uint32_t U __attribute__((vector_size(4 * W)));
  typedef std::int32_t I __attribute__((vector_size(4 * W)));
  template <class X>  // a template so that the check waits for the instantiation
  static F to_f(X x) {
    return __builtin_convertvector(x, F);
  }
};

// Keyed 32-bit hash: the multiply–xorshift rounds of triple32 (C. Wellons, hash-prospector; a
// near-ideal avalanche 32-bit permutation) with a key mixed in before the first two multiplies, so
// that different keys give unrelated orderings of the counter space (not shifted copies).
// pair_hash_rest is the hash from its third step on; pair_hash_block_base gives the first two
// steps (x ^= k0, x ^= x >> 17) for all the counters c0 + j of a block at once (c0 a multiple of
// 16, j < 16, so c0 + j = c0 ^ j and the lanes differ in bits 0-3 only: x >> 17 is the same in
// every lane): pair_hash(c0 + j, k0, k1) == pair_hash_rest(pair_hash_block_base(c0, k0) ^ j, k1).
template <class L>
inline typename L::U pair_hash_rest(typename L::U x, std::uint32_t k1) {
  x *= 0xed5ad4bbU;
  x ^= x >> 11;
  x ^= k1;
  x *= 0xac4c1b51U;
  x ^= x >> 15;
  x *= 0x31848babU;
  x ^= x >> 14;
  return x;
}

template <class L>
inline typename L::U pair_hash(typename L::U x, std::uint32_t k0, std::uint32_t k1) {
  x ^= k0;
  x ^= x >> 17;
  return pair_hash_rest<L>(x, k1);
}

inline std::uint32_t pair_hash_block_base(std::uint32_t c0, std::uint32_t k0) {
  const std::uint32_t x = c0 ^ k0;
  return x ^ (x >> 17);
}

// sqrt(w), w ≥ −0: IEEE sqrt (correctly rounded everywhere, so every path and architecture gets
// the same bits). GCC will not vectorise sqrtf while -fmath-errno is on (the default, and not
// switchable per function), so the vector lanes call the ISA's sqrt instruction directly.
inline float sqrt_nonneg(float w) { return __builtin_sqrtf(w); }

#pragma GCC diagnostic push  // GCC 12's _mm512_sqrt_ps trips -Wuninitialized (GCC bug 105593)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
template <int W>
inline typename Vec<W>::F sqrt_nonneg(typename Vec<W>::F w) {
#if defined(__AVX512F__)
  using P = __m512;
#elif defined(__AVX__)
  using P = __m256;
#elif defined(__SSE2__)
  using P = __m128;
#elif defined(__aarch64__)
  using P = float32x4_t;
#else
  using P = float;
#endif
  constexpr int kPer = static_cast<int>(sizeof(P) / sizeof(float));
  static_assert(W % kPer == 0);
  P piece[W / kPer];
  std::memcpy(piece, &w, sizeof w);
  for (auto& p : piece) {
#if defined(__AVX512F__)
    p = _mm512_sqrt_ps(p);
#elif defined(__AVX__)
    p = _mm256_sqrt_ps(p);
#elif defined(__SSE2__)
    p = _mm_sqrt_ps(p);
#elif defined(__aarch64__)
    p = vsqrtq_f32(p);
#else
    p = __builtin_sqrtf(p);
#endif
  }
  std::memcpy(&w, piece, sizeof w);
  return w;
}
#pragma GCC diagnostic pop

// w = −2 ln u1 for u1 = j·2^-24, j = 2^24 − a24 ∈ [1, 2^24] (so u1 ∈ [2^-24, 1], w ∈ [0, 33.27]).
// float(j) is exact; j = 2^k·m with m ∈ [√½, √2) by integer bit manipulation (exact), e = k − 24,
// f = m − 1 exact. ln m = 2·atanh(s) with s = f/(2 + f) ∈ [−0.1716, 0.1716], by its series to s⁹
// (truncation < 3e-9 relative): ln m = 2s·(1 + s²/3 + s⁴/5 + s⁶/7 + s⁸/9). Then
//   w = e·(−2 ln2) − 4·(s + s³·(1/3 + s²/5 + s⁴/7 + s⁶/9))     (×−4 is exact).
// One correctly rounded division replaces half of the multiplies of a plain polynomial in f.
template <class L>
inline typename L::F neg2_log_from_bits(typename L::U a24) {
  using F = typename L::F;
  using U = typename L::U;
  using I = typename L::I;
  const F fj = L::to_f(std::bit_cast<I>(0x01000000U - a24));
  const U ix = std::bit_cast<U>(fj) - 0x3f3504f3U;
  const F e = L::to_f((std::bit_cast<I>(ix) >> 23) - 24);  // arithmetic shift: floor
  const F m = std::bit_cast<F>((ix & 0x007fffffU) + 0x3f3504f3U);
  const F f = m - 1.0f;
  const F s = f / (2.0f + f);
  const F z = s * s;
  const F q = 3.33333343e-1f + z * (2.00000003e-1f + z * (1.42857149e-1f + z * 1.11111112e-1f));
  const F half_ln_m = s + (s * z) * q;
  return e * -1.38629436e+0f + half_ln_m * -4.0f;
}

template <class L>
inline typename L::F radius_from_bits(typename L::U a24) {
  if constexpr (std::is_same_v<L, Scalar>) {
    return sqrt_nonneg(neg2_log_from_bits<L>(a24));
  } else {
    return sqrt_nonneg<sizeof(typename L::F) / sizeof(float)>(neg2_log_from_bits<L>(a24));
  }
}

// (cos φ, sin φ) for φ = 2π·b24·2^-24, b24 ∈ [0, 2^24). Exact reduction by quadrant in integers:
// q = round(b24 / 2^22) mod 4, residual t ∈ [−2^21, 2^21) → x = t·(π/2)·2^-22 ∈ [−π/4, π/4].
// sin x, cos x: Cephes sinf/cosf polynomials (abs. error ≈ 1e-7 on [−π/4, π/4]); then the quadrant
// swaps/negates them with integer masks on the sign and value bits (branch-free).
template <class L>
struct CosSinT {
  typename L::F c, s;
};

template <class L>
inline CosSinT<L> cossin_from_bits(typename L::U b24) {
  using F = typename L::F;
  using U = typename L::U;
  using I = typename L::I;
  const U qr = b24 + 0x00200000U;  // + half a quadrant: round to the nearest quadrant
  const I t = std::bit_cast<I>(b24 - (qr & 0xffc00000U));
  const F x = L::to_f(t) * 3.74507028e-7f;  // (π/2)·2^-22, rounded to f32
  const F z = x * x;
  const F s = x + (x * z) * (-1.6666654611e-1f + z * (8.3321608736e-3f + z * -1.9515295891e-4f));
  const F c = (1.0f - 0.5f * z) +
              (z * z) * (4.166664568298827e-2f +
                         z * (-1.388731625493765e-3f + z * 2.443315711809948e-5f));
  // Quadrant q = bits 22–23 of qr (bit 24 is dropped: mod 4): (cos, sin) = (c, s), (−s, c),
  // (−c, −s), (s, −c). Only bit 31 of the words below is used: q1 = bit 0 of q (swap), q2 = bit 1
  // of q (sin negated, q ∈ {2, 3}), q1 ^ q2 (cos negated, q ∈ {1, 2}). Branch-free, and written so
  // that each select / sign flip is one three-input bitwise operation where the ISA has one.
  const U q1 = qr << 9;
  const U q2 = qr << 8;
  const U swap = std::bit_cast<U>(std::bit_cast<I>(q1) >> 31);  // all ones when q is odd
  const U cb = std::bit_cast<U>(c);
  const U sb = std::bit_cast<U>(s);
  const U cos_b = (cb & ~swap) | (sb & swap);
  const U sin_b = (sb & ~swap) | (cb & swap);
  const U cos_neg = (q1 ^ q2) & 0x80000000U;
  const U sin_neg = q2 & 0x80000000U;
  return CosSinT<L>{std::bit_cast<F>(cos_b ^ cos_neg), std::bit_cast<F>(sin_b ^ sin_neg)};
}

// The pair of normals for pair counter low half `c` (keys fix seed, stream, high half).
template <class L>
struct PairT {
  typename L::F z0, z1;  // z0 → element 32·b + j, z1 → element 32·b + 16 + j
};

template <class L>
inline PairT<L> gaussian_pair(const Keys& k, typename L::U c) {
  const auto a = pair_hash<L>(c, k.a0, k.a1);
  const auto b = pair_hash<L>(c, k.b0, k.b1);
  const auto r = radius_from_bits<L>(a >> 8);
  const CosSinT<L> cs = cossin_from_bits<L>(b >> 8);
  return PairT<L>{r * cs.c, r * cs.s};
}

using CosSin = CosSinT<Scalar>;
using Pair = PairT<Scalar>;

// Pair index of element i (64-bit) and which half of the pair it takes.
inline std::uint64_t pair_index(std::uint64_t i) { return ((i >> 5) << 4) | (i & 15U); }
inline bool takes_sin(std::uint64_t i) { return (i & 16U) != 0; }

// Out-of-line entry points (compiled in perturb_ref.cpp under -ffp-contract=off) for tests that
// exercise the transform directly, e.g. the extreme hash outputs.
float neg2_log_from_bits_exact(std::uint32_t a24);  // −2 ln(1 − a24·2^-24)
float radius_from_bits_exact(std::uint32_t a24);
CosSin cossin_from_bits_exact(std::uint32_t b24);
std::uint32_t pair_hash_exact(std::uint32_t x, std::uint32_t k0, std::uint32_t k1);

}  // namespace zt::kernels::perturb_detail
