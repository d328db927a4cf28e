// The AVX2 int8 micro-kernels (Isa::kAvx2), for x86-64 CPUs without AVX-512 VNNI. AVX2 has no
// exact 4-term u8 × s8 product (vpmaddubsw saturates its int16 pair sums), so both operands are
// widened to int16 and multiplied by vpmaddwd, whose int32 pair sums are exact:
//   B, 4 lanes × 4 bytes (16 bytes, value + 128) → 16 int16 (vpmovzxbw);
//   A, the 4 int8 of a row → 4 int16 broadcast to every 64-bit group;
//   vpmaddwd → 8 int32 "half sums": lane l's s = 0,1 and s = 2,3 products, side by side.
// The accumulators hold half sums; the two halves of each lane are added (vphaddd, then a
// permute back to lane order) once per tile, so the result is the same integer sum as the
// portable kernel's and the contract of gemm_s8_internal.hpp (corr, canvas runs) is met by its
// store_tile_row. Built for x86-64, this file alone with -mavx2 (CMakeLists.txt), and run only
// when the CPU reports AVX2 (src/kernels/isa.cpp).
#if !defined(__AVX2__)
#error "gemm_s8_avx2.cpp is built with -mavx2 (CMakeLists.txt)"
#endif

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "gemm_s8_internal.hpp"
#include "gemm_s8_tables.hpp"

namespace zt::kernels::s8 {
namespace {

// Lanes 4g..4g+3 of a 64-byte B vector (or DotArgs x block) as 16 zero-extended int16.
inline __m256i load_quarter_u8(const std::uint8_t* v, int g) {
  return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + 16 * g)));
}
// The same for signed bytes (DotArgs e).
inline __m256i load_quarter_s8(const std::int8_t* v, int g) {
  return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + 16 * g)));
}
// A row's 4 int8 (one quad) sign-extended to int16 in every 64-bit group.
inline __m256i broadcast_a(const std::int8_t* a) {
  std::int32_t w;
  std::memcpy(&w, a, sizeof w);
  return _mm256_broadcastq_epi64(_mm_cvtepi8_epi16(_mm_cvtsi32_si128(w)));
}
// Half sums of lanes 4g..4g+3 (h0) and 4g+4..4g+7 (h1) → the 8 lane sums in lane order.
inline __m256i lane_sums(__m256i h0, __m256i h1) {
  // vphaddd works within 128-bit halves: [l0 l1 l4 l5 | l2 l3 l6 l7]; the permute restores order.
  return _mm256_permute4x64_epi64(_mm256_hadd_epi32(h0, h1), 0xD8);
}

struct Avx2 {
  static constexpr std::uint8_t kBBias = kBias;  // B holds value + 128, as for VNNI
  template <bool kRows, int MR, int NV>
  static void micro(const MicroArgs& p);
  template <int OB, int TB>
  static void dot(const DotArgs& p);
  // 16 ymm: 4 half-sum accumulators per row and vector, the 4 widened B quarters of a vector and
  // one broadcast A: two rows of one vector.
  static constexpr int max_mr(bool, int nv) { return nv == 1 ? 2 : 0; }
};

template <bool kRows, int MR, int NV>
void Avx2::micro(const MicroArgs& p) {
  static_assert(NV == 1, "max_mr builds one vector per tile");
  __m256i acc[MR][4];
  for (int m = 0; m < MR; ++m)
    for (int g = 0; g < 4; ++g) acc[m][g] = _mm256_setzero_si256();
  const int nq_main = kRows && p.a_tail != nullptr ? p.nq - 1 : p.nq;
  for (int q = 0; q < p.nq; ++q) {
    const std::uint8_t* bq = p.b + (p.b_off != nullptr ? p.b_off[q] : q * p.b_step);
    const __m256i b0 = load_quarter_u8(bq, 0), b1 = load_quarter_u8(bq, 1);
    const __m256i b2 = load_quarter_u8(bq, 2), b3 = load_quarter_u8(bq, 3);
    for (int m = 0; m < MR; ++m) {
      const std::int8_t* aw = a_word<kRows>(p, q, m, nq_main);
      const __m256i a = broadcast_a(aw);
      acc[m][0] = _mm256_add_epi32(acc[m][0], _mm256_madd_epi16(a, b0));
      acc[m][1] = _mm256_add_epi32(acc[m][1], _mm256_madd_epi16(a, b1));
      acc[m][2] = _mm256_add_epi32(acc[m][2], _mm256_madd_epi16(a, b2));
      acc[m][3] = _mm256_add_epi32(acc[m][3], _mm256_madd_epi16(a, b3));
    }
  }
  for (int m = 0; m < MR; ++m) {
    alignas(32) std::int32_t row[kLanes];
    _mm256_store_si256(reinterpret_cast<__m256i*>(row), lane_sums(acc[m][0], acc[m][1]));
    _mm256_store_si256(reinterpret_cast<__m256i*>(row + 8), lane_sums(acc[m][2], acc[m][3]));
    store_tile_row(p, m, row, kLanes, p.corr[m]);
  }
}

// Vector dot tile (DotArgs): the running lane sums of part enter as half sums (each lane's sum
// in its first half, 0 in the second), so one vphaddd per 8 lanes at the end gives part + Σ.
template <int OB, int TB>
void Avx2::dot(const DotArgs& p) {
  for (int o = 0; o < OB; ++o)
    for (int t = 0; t < TB; ++t) {
      std::int32_t* part = p.part + (o * p.ld + t) * kLanes;
      __m256i acc[4];
      for (int g = 0; g < 4; ++g)
        acc[g] = _mm256_cvtepu32_epi64(_mm_loadu_si128(reinterpret_cast<const __m128i*>(part + 4 * g)));
      const std::uint8_t* x = p.x[t];
      const std::int8_t* e = p.e[o];
      for (int i = 0; i < p.steps; ++i, x += kVecBytes, e += kVecBytes)
        for (int g = 0; g < 4; ++g)
          acc[g] = _mm256_add_epi32(acc[g], _mm256_madd_epi16(load_quarter_u8(x, g), load_quarter_s8(e, g)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(part), lane_sums(acc[0], acc[1]));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(part + 8), lane_sums(acc[2], acc[3]));
    }
}

}  // namespace

const MicroKernel micro_kernel_avx2 = Tables<Avx2>::kernel;

}  // namespace zt::kernels::s8
