// Internal to the int8 micro-kernel files (gemm_s8_portable.cpp, gemm_s8_avx512_vnni.cpp,
// gemm_s8_neon.cpp, gemm_s8_neon_dot.cpp): the dispatch tables that turn one ISA's templates into
// its MicroKernel (gemm_s8_internal.hpp). An ISA provides a type K with
//   template <bool kRows, int MR, int NV> static void micro(const MicroArgs&);
//   template <int OB, int TB> static void dot(const DotArgs&);
//   static constexpr int max_mr(bool rows_a, int nv);  // 0 where (A mode, NV) is not built
//   static constexpr std::uint8_t kBBias;               // MicroKernel::b_bias
// and declares K in an unnamed namespace, so that the instantiations below stay inside its file
// (each file has its own target flags: no inline copy may be shared between them).
#pragma once

#include <array>
#include <utility>

#include "gemm_s8_internal.hpp"
#include "zotrain/core/error.hpp"

namespace zt::kernels::s8 {

inline constexpr int kMaxMr = 16;  // the tables cover MR ≤ kMaxMr

template <class K>
struct Tables {
  using DotFn = void (*)(const DotArgs&);

  template <bool kRows, int I>
  static constexpr MicroFn micro_entry() {
    constexpr int mr = I % kMaxMr + 1, nv = I / kMaxMr + 1;
    if constexpr (mr <= K::max_mr(kRows, nv))
      return &K::template micro<kRows, mr, nv>;
    else
      return nullptr;
  }
  template <bool kRows, int... I>
  static constexpr auto micro_table(std::integer_sequence<int, I...>) {
    return std::array<MicroFn, sizeof...(I)>{micro_entry<kRows, I>()...};
  }
  template <int... I>
  static constexpr auto dot_table(std::integer_sequence<int, I...>) {
    return std::array<DotFn, sizeof...(I)>{&K::template dot<I / kDotTb + 1, I % kDotTb + 1>...};
  }

  static int max_mr(bool rows_a, int nv) { return nv >= 1 && nv <= kMaxNv ? K::max_mr(rows_a, nv) : 0; }
  static MicroFn tile_fn(bool rows_a, int mr, int nv) {
    static constexpr auto kPacked = micro_table<false>(std::make_integer_sequence<int, kMaxMr * kMaxNv>{});
    static constexpr auto kRowsT = micro_table<true>(std::make_integer_sequence<int, kMaxMr * kMaxNv>{});
    ZT_CHECK(nv >= 1 && nv <= kMaxNv && mr >= 1 && mr <= K::max_mr(rows_a, nv));
    const int i = (nv - 1) * kMaxMr + (mr - 1);
    return rows_a ? kRowsT[i] : kPacked[i];
  }
  static void run_dot(int ob, int tb, const DotArgs& args) {
    static constexpr auto kTable = dot_table(std::make_integer_sequence<int, kDotOb * kDotTb>{});
    ZT_CHECK(ob >= 1 && ob <= kDotOb && tb >= 1 && tb <= kDotTb);
    kTable[(ob - 1) * kDotTb + (tb - 1)](args);
  }
  static constexpr MicroKernel kernel{&max_mr, &tile_fn, &run_dot, K::kBBias};
};

}  // namespace zt::kernels::s8
