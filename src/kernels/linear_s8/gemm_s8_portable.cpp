// The portable int8 micro-kernels (Isa::kPortable on every machine): plain loops over MR rows ×
// NV·16 lanes of int32 accumulators; the compiler vectorises the lane loop (NEON: widening
// multiply-accumulates; -mgeneral-regs-only: scalar). See gemm_s8_internal.hpp for the contract.
#include <cstdint>

#include "gemm_s8_internal.hpp"
#include "gemm_s8_tables.hpp"

namespace zt::kernels::s8 {
namespace {

struct Portable {
  template <bool kRows, int MR, int NV>
  static void micro(const MicroArgs& p);
  template <int OB, int TB>
  static void dot(const DotArgs& p);
  // One vector: wider tiles gain nothing from plain loops.
  static constexpr int max_mr(bool, int nv) { return nv == 1 ? 4 : 0; }
  static constexpr std::uint8_t kBBias = kBias;
};

template <bool kRows, int MR, int NV>
void Portable::micro(const MicroArgs& p) {
  constexpr int kL = NV * kLanes;
  std::int32_t acc[MR][kL];
  for (int m = 0; m < MR; ++m)
    for (int l = 0; l < kL; ++l) acc[m][l] = 0;
  const int nq_main = kRows && p.a_tail != nullptr ? p.nq - 1 : p.nq;
  for (int q = 0; q < p.nq; ++q) {
    const std::uint8_t* bq = p.b + (p.b_off != nullptr ? p.b_off[q] : q * p.b_step);
    for (int m = 0; m < MR; ++m) {
      const std::int8_t* aw = a_word<kRows>(p, q, m, nq_main);
      const std::int32_t a0 = aw[0], a1 = aw[1], a2 = aw[2], a3 = aw[3];
      for (int v = 0; v < NV; ++v) {
        const std::uint8_t* bv = bq + v * p.b_vec;
        std::int32_t* ac = acc[m] + v * kLanes;
        for (int l = 0; l < kLanes; ++l)
          ac[l] += a0 * bv[4 * l] + a1 * bv[4 * l + 1] + a2 * bv[4 * l + 2] + a3 * bv[4 * l + 3];
      }
    }
  }
  for (int m = 0; m < MR; ++m) store_tile_row(p, m, acc[m], kL, p.corr[m]);
}

// Vector dot tile (DotArgs).
template <int OB, int TB>
void Portable::dot(const DotArgs& p) {
  std::int32_t acc[OB][TB][kLanes];
  for (int o = 0; o < OB; ++o)
    for (int t = 0; t < TB; ++t)
      for (int l = 0; l < kLanes; ++l) acc[o][t][l] = p.part[(o * p.ld + t) * kLanes + l];
  for (int i = 0; i < p.steps; ++i)
    for (int o = 0; o < OB; ++o) {
      const std::int8_t* e = p.e[o] + kVecBytes * i;
      for (int t = 0; t < TB; ++t) {
        const std::uint8_t* x = p.x[t] + kVecBytes * i;
        for (int l = 0; l < kLanes; ++l)
          acc[o][t][l] += x[4 * l] * e[4 * l] + x[4 * l + 1] * e[4 * l + 1] + x[4 * l + 2] * e[4 * l + 2] +
                          x[4 * l + 3] * e[4 * l + 3];
      }
    }
  for (int o = 0; o < OB; ++o)
    for (int t = 0; t < TB; ++t)
      for (int l = 0; l < kLanes; ++l) p.part[(o * p.ld + t) * kLanes + l] = acc[o][t][l];
}

}  // namespace

const MicroKernel micro_kernel_portable = Tables<Portable>::kernel;

}  // namespace zt::kernels::s8
