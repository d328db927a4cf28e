// The AVX-512 VNNI int8 micro-kernels (Isa::kAvx512Vnni): vpdpbusd (u8 × s8, 4 products per
// int32 lane: the quad layout of gemm_s8_internal.hpp) through GCC vector extensions and the
// vpdpbusd and masked-store builtins, no intrinsics header. Built for x86-64 with GCC, this file
// alone with -mavx512f -mavx512vnni (CMakeLists.txt), and run only when the CPU reports both
// (src/kernels/isa.cpp); everything it instantiates stays in this file (gemm_s8_tables.hpp).
#if !defined(__AVX512F__) || !defined(__AVX512VNNI__)
#error "gemm_s8_avx512_vnni.cpp is built with -mavx512f -mavx512vnni (CMakeLists.txt)"
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "gemm_s8_internal.hpp"
#include "gemm_s8_tables.hpp"

namespace zt::kernels::s8 {
namespace {

typedef int V16 __attribute__((vector_size(64)));
typedef int V16U __attribute__((vector_size(64), aligned(1), may_alias));

// Canvas store (acc already corrected): each run is rotated down to lane 0 and written with a
// masked store.
template <int MR, int NV>
__attribute__((always_inline)) inline void store_canvas(const MicroArgs& p, const V16 (&acc)[MR][NV]) {
  const V16 iota = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  V16 idx[NV][kMaxRuns];
  unsigned short mask[NV][kMaxRuns];
  ptrdiff_t dst[NV][kMaxRuns];
  int nr[NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    nr[v] = p.nruns[v];
    for (int i = 0; i < nr[v]; ++i) {
      const CanvasRun& r = p.runs[v * kMaxRuns + i];
      idx[v][i] = (iota + r.first) & (kLanes - 1);
      mask[v][i] = static_cast<unsigned short>((1u << r.count) - 1u);
      dst[v][i] = r.dst;
    }
  }
  // Common case (output rows that start on a vector, as LeNet conv1): at most one run per
  // vector, starting at lane 0, so no rotation; an empty vector gets an empty mask.
  bool aligned = true;
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    aligned = aligned && nr[v] <= 1 && (nr[v] == 0 || p.runs[v * kMaxRuns].first == 0);
    if (nr[v] == 0) mask[v][0] = 0, dst[v][0] = 0;
  }
  if (aligned) {
#pragma GCC unroll 16
    for (int m = 0; m < MR; ++m) {
      std::int32_t* c = p.c + m * p.ldc;
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) __builtin_ia32_storedqusi512_mask(c + dst[v][0], acc[m][v], mask[v][0]);
    }
    return;
  }
#pragma GCC unroll 16
  for (int m = 0; m < MR; ++m) {
    std::int32_t* c = p.c + m * p.ldc;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const V16 r = acc[m][v];
      for (int i = 0; i < nr[v]; ++i)
        __builtin_ia32_storedqusi512_mask(c + dst[v][i], __builtin_shuffle(r, idx[v][i]), mask[v][i]);
    }
  }
}

struct Avx512Vnni {
  static constexpr std::uint8_t kBBias = kBias;  // vpdpbusd multiplies u8 × s8
  template <bool kRows, int MR, int NV>
  static void micro(const MicroArgs& p);
  template <int OB, int TB>
  static void dot(const DotArgs& p);
  // 32 zmm: MR·NV accumulators + NV B vectors + one broadcast. Rows mode also holds MR row
  // pointers in general registers, so it stops at 8 rows.
  static constexpr int max_mr(bool rows_a, int nv) {
    constexpr int kPackedMr[kMaxNv] = {16, 12, 8, 6};
    constexpr int kRowsMr[kMaxNv] = {8, 8, 8, 6};
    return rows_a ? kRowsMr[nv - 1] : kPackedMr[nv - 1];
  }
};

template <bool kRows, int MR, int NV>
void Avx512Vnni::micro(const MicroArgs& p) {
  // The accumulators start at −corr: the sums come out corrected.
  V16 acc[MR][NV];
#pragma GCC unroll 16
  for (int m = 0; m < MR; ++m) {
    const V16 start = -p.corr[m] + V16{};
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[m][v] = start;
  }
  const int nq_main = kRows && p.a_tail != nullptr ? p.nq - 1 : p.nq;
  const std::int8_t* rows[kRows ? MR : 1];
  if constexpr (kRows) {
#pragma GCC unroll 16
    for (int m = 0; m < MR; ++m) rows[m] = p.a_rows[m];
  }
  const auto step = [&](const std::uint8_t* bq, auto&& a_word) {
    V16 bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = *reinterpret_cast<const V16U*>(bq + v * p.b_vec);
#pragma GCC unroll 16
    for (int m = 0; m < MR; ++m) {
      const V16 ab = a_word(m) + V16{};  // broadcast the 4 int8 of row m
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[m][v] = __builtin_ia32_vpdpbusd_v16si(acc[m][v], bv[v], ab);
    }
  };
  const auto load_word = [](const std::int8_t* ptr) {
    std::int32_t w;
    std::memcpy(&w, ptr, sizeof w);
    return w;
  };
  if (p.b_off != nullptr) {
    for (int q = 0; q < nq_main; ++q) {
      if constexpr (kRows)
        step(p.b + p.b_off[q], [&](int m) { return load_word(rows[m] + q * p.a_step); });
      else
        step(p.b + p.b_off[q], [&](int m) { return load_word(p.a + q * p.a_step + 4 * m); });
    }
  } else {
    const std::uint8_t* bq = p.b;
    if constexpr (kRows) {
      for (int q = 0; q < nq_main; ++q, bq += p.b_step)
        step(bq, [&](int m) { return load_word(rows[m] + q * p.a_step); });
    } else {
      const std::int8_t* aq = p.a;
      for (int q = 0; q < nq_main; ++q, bq += p.b_step, aq += p.a_step)
        step(bq, [&](int m) { return load_word(aq + 4 * m); });
    }
  }
  if (kRows && nq_main < p.nq) {
    const int q = nq_main;
    step(p.b + (p.b_off != nullptr ? p.b_off[q] : q * p.b_step),
         [&](int m) { return load_word(p.a_tail + 4 * m); });
  }
  if (p.runs != nullptr) {
    store_canvas<MR, NV>(p, acc);
    return;
  }
#pragma GCC unroll 16
  for (int m = 0; m < MR; ++m) {
    std::int32_t* c = p.c + m * p.ldc;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const V16 r = acc[m][v];
      if ((v + 1) * kLanes <= p.n_valid) {
        V16U* cv = reinterpret_cast<V16U*>(c + v * kLanes);
        *cv = p.accumulate ? *cv + r : r;
      } else if (v * kLanes < p.n_valid) {
        std::int32_t t[kLanes];
        std::memcpy(t, &r, sizeof t);
        const int n = p.n_valid - v * kLanes;
        std::int32_t* cl = c + v * kLanes;
        if (p.accumulate) {
          for (int l = 0; l < n; ++l) cl[l] += t[l];
        } else {
          for (int l = 0; l < n; ++l) cl[l] = t[l];
        }
      }
    }
  }
}

// Vector dot tile (DotArgs).
template <int OB, int TB>
void Avx512Vnni::dot(const DotArgs& p) {
  V16 acc[OB][TB];
  const std::int8_t* e[OB];
  const std::uint8_t* x[TB];
#pragma GCC unroll 8
  for (int o = 0; o < OB; ++o) {
    e[o] = p.e[o];
#pragma GCC unroll 4
    for (int t = 0; t < TB; ++t) acc[o][t] = *reinterpret_cast<const V16U*>(p.part + (o * p.ld + t) * kLanes);
  }
#pragma GCC unroll 4
  for (int t = 0; t < TB; ++t) x[t] = p.x[t];
  for (int i = 0; i < p.steps; ++i) {
    V16 xv[TB];
#pragma GCC unroll 4
    for (int t = 0; t < TB; ++t) xv[t] = *reinterpret_cast<const V16U*>(x[t] + kVecBytes * i);
#pragma GCC unroll 8
    for (int o = 0; o < OB; ++o) {
      const V16 ev = *reinterpret_cast<const V16U*>(e[o] + kVecBytes * i);
#pragma GCC unroll 4
      for (int t = 0; t < TB; ++t) acc[o][t] = __builtin_ia32_vpdpbusd_v16si(acc[o][t], xv[t], ev);
    }
  }
#pragma GCC unroll 8
  for (int o = 0; o < OB; ++o)
#pragma GCC unroll 4
    for (int t = 0; t < TB; ++t) *reinterpret_cast<V16U*>(p.part + (o * p.ld + t) * kLanes) = acc[o][t];
}

}  // namespace

const MicroKernel micro_kernel_avx512_vnni = Tables<Avx512Vnni>::kernel;

}  // namespace zt::kernels::s8
