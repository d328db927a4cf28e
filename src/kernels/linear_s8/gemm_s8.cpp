// The int8 micro-kernels (plain loops; AVX-512 VNNI when the compiler targets it) and the packing
// helpers shared by linear_s8 and conv2d_s8. See gemm_s8_internal.hpp for the contract.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#ifdef ZT_OPENMP
#include <omp.h>
#endif

#include "../chunked_parallel.hpp"
#include "gemm_s8_internal.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/kernels/isa.hpp"

#if defined(__AVX512F__) && defined(__AVX512VNNI__) && !defined(ZT_GENERAL_REGS_ONLY)
#define ZT_S8_VNNI512 1
#endif
// The NEON micro-kernels live in gemm_s8_neon.cpp / gemm_s8_neon_dot.cpp (ARM builds only).
#if defined(ZT_HAVE_NEON) && !defined(ZT_GENERAL_REGS_ONLY)
#define ZT_S8_NEON 1
#if defined(ZT_HAVE_NEON_DOT)
#define ZT_S8_NEON_DOT 1
#endif
#endif

namespace zt::kernels::s8 {
namespace {

// ---- plain loops -------------------------------------------------------------------------
// MR rows × NV·16 lanes of int32 accumulators; the compiler vectorises the lane loop (NEON:
// widening multiply-accumulates; -mgeneral-regs-only: scalar).
template <bool kRows, int MR, int NV>
void micro_generic(const MicroArgs& p) {
  constexpr int kL = NV * kLanes;
  std::int32_t acc[MR][kL];
  for (int m = 0; m < MR; ++m)
    for (int l = 0; l < kL; ++l) acc[m][l] = 0;
  const int nq_main = kRows && p.a_tail != nullptr ? p.nq - 1 : p.nq;
  for (int q = 0; q < p.nq; ++q) {
    const std::uint8_t* bq = p.b + (p.b_off != nullptr ? p.b_off[q] : q * p.b_step);
    for (int m = 0; m < MR; ++m) {
      const std::int8_t* aw;
      if constexpr (kRows)
        aw = q < nq_main ? p.a_rows[m] + q * p.a_step : p.a_tail + 4 * m;
      else
        aw = p.a + q * p.a_step + 4 * m;
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

// ---- AVX-512 VNNI --------------------------------------------------------------------------
#ifdef ZT_S8_VNNI512
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

template <bool kRows, int MR, int NV>
void micro_vnni(const MicroArgs& p) {
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
#endif

// ---- vector dot tiles -----------------------------------------------------------------------
template <int OB, int TB>
void dot_generic(const DotArgs& p) {
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

#ifdef ZT_S8_VNNI512
template <int OB, int TB>
void dot_vnni(const DotArgs& p) {
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
#endif

// Compile-time integer sequences for the dispatch tables.
template <int... I>
struct Ints {};
template <int N, int... I>
struct MakeInts : MakeInts<N - 1, N - 1, I...> {};
template <int... I>
struct MakeInts<0, I...> {
  using type = Ints<I...>;
};

using DotFn = void (*)(const DotArgs&);
struct DotTable {
  DotFn fn[kDotOb * kDotTb];
};
template <template <int, int> class F, int... I>
constexpr DotTable make_dot_table(Ints<I...>) {
  return {{F<I / kDotTb + 1, I % kDotTb + 1>::fn...}};
}
template <int OB, int TB>
struct DotGenericF {
  static constexpr DotFn fn = &dot_generic<OB, TB>;
};
constexpr DotTable kDotGeneric = make_dot_table<DotGenericF>(MakeInts<kDotOb * kDotTb>::type{});
#ifdef ZT_S8_VNNI512
template <int OB, int TB>
struct DotVnniF {
  static constexpr DotFn fn = &dot_vnni<OB, TB>;
};
constexpr DotTable kDotVnni = make_dot_table<DotVnniF>(MakeInts<kDotOb * kDotTb>::type{});
#endif

// ---- dispatch tables -----------------------------------------------------------------------
using MicroFn = void (*)(const MicroArgs&);
constexpr int kTableMr = 16;

// Largest MR per NV (index nv − 1); 0 where the combination is not built.
constexpr int kGenericMr[kMaxNv] = {4, 0, 0, 0};
#ifdef ZT_S8_VNNI512
// 32 zmm: MR·NV accumulators + NV B vectors + one broadcast. Rows mode also holds MR row
// pointers in general registers, so it stops at 8 rows.
constexpr int kVnniPackedMr[kMaxNv] = {16, 12, 8, 6};
constexpr int kVnniRowsMr[kMaxNv] = {8, 8, 8, 6};
#endif

template <bool kRows, int MR, int NV>
struct GenericK {
  static constexpr MicroFn fn = (NV <= 1 && MR <= kGenericMr[NV - 1]) ? &micro_generic<kRows, MR, NV> : nullptr;
};
#ifdef ZT_S8_VNNI512
template <bool kRows, int MR, int NV>
struct VnniK {
  static constexpr int kLimit = kRows ? kVnniRowsMr[NV - 1] : kVnniPackedMr[NV - 1];
  static constexpr MicroFn fn = MR <= kLimit ? &micro_vnni<kRows, MR, NV> : nullptr;
};
#endif

struct MicroTable {
  MicroFn fn[kTableMr * kMaxNv];
};
template <template <bool, int, int> class K, bool kRows, int... I>
constexpr MicroTable make_table(Ints<I...>) {
  return {{K<kRows, I % kTableMr + 1, I / kTableMr + 1>::fn...}};
}
using TableSeq = MakeInts<kTableMr * kMaxNv>::type;
constexpr MicroTable kGenericPacked = make_table<GenericK, false>(TableSeq{});
constexpr MicroTable kGenericRows = make_table<GenericK, true>(TableSeq{});
#ifdef ZT_S8_VNNI512
constexpr MicroTable kVnniPacked = make_table<VnniK, false>(TableSeq{});
constexpr MicroTable kVnniRows = make_table<VnniK, true>(TableSeq{});
#endif

}  // namespace

bool micro_available(Micro m) {
  switch (m) {
    case Micro::kGeneric: return true;
    case Micro::kVnni512:
#ifdef ZT_S8_VNNI512
      return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512f");
#else
      return false;
#endif
    case Micro::kNeon:
#ifdef ZT_S8_NEON
      return isa_available(Isa::kNeon);
#else
      return false;
#endif
    case Micro::kNeonDot:
#ifdef ZT_S8_NEON_DOT
      return isa_available(Isa::kNeonDot);
#else
      return false;
#endif
  }
  return false;
}

Micro best_micro() {
  static const Micro best = micro_available(Micro::kVnni512) ? Micro::kVnni512 : Micro::kGeneric;
  return best;
}

const char* micro_name(Micro m) {
  switch (m) {
    case Micro::kGeneric: return "generic";
    case Micro::kVnni512: return "vnni512";
    case Micro::kNeon: return "neon";
    case Micro::kNeonDot: return "neon_dot";
  }
  return "unknown";
}

int max_mr(Micro m, bool rows_a, int nv) {
  if (nv < 1 || nv > kMaxNv) return 0;
#ifdef ZT_S8_VNNI512
  if (m == Micro::kVnni512) return rows_a ? kVnniRowsMr[nv - 1] : kVnniPackedMr[nv - 1];
#endif
#ifdef ZT_S8_NEON
  if (m == Micro::kNeon) return max_mr_neon(rows_a, nv);
#endif
#ifdef ZT_S8_NEON_DOT
  if (m == Micro::kNeonDot) return max_mr_neon_dot(rows_a, nv);
#endif
  (void)rows_a;
  return m == Micro::kGeneric ? kGenericMr[nv - 1] : 0;
}

void run_micro(Micro m, bool rows_a, int mr, int nv, const MicroArgs& args) {
  ZT_DCHECK(mr >= 1 && mr <= max_mr(m, rows_a, nv));
#ifdef ZT_S8_NEON
  if (m == Micro::kNeon) return run_micro_neon(rows_a, mr, nv, args);
#endif
#ifdef ZT_S8_NEON_DOT
  if (m == Micro::kNeonDot) return run_micro_neon_dot(rows_a, mr, nv, args);
#endif
  const int i = (nv - 1) * kTableMr + (mr - 1);
  MicroFn fn = nullptr;
#ifdef ZT_S8_VNNI512
  if (m == Micro::kVnni512) fn = rows_a ? kVnniRows.fn[i] : kVnniPacked.fn[i];
#endif
  if (m == Micro::kGeneric) fn = rows_a ? kGenericRows.fn[i] : kGenericPacked.fn[i];
  ZT_CHECK(fn != nullptr);
  fn(args);
}

void run_dot(Micro m, int ob, int tb, const DotArgs& args) {
  ZT_DCHECK(ob >= 1 && ob <= kDotOb && tb >= 1 && tb <= kDotTb);
#ifdef ZT_S8_NEON
  if (m == Micro::kNeon) return run_dot_neon(ob, tb, args);
#endif
#ifdef ZT_S8_NEON_DOT
  if (m == Micro::kNeonDot) return run_dot_neon_dot(ob, tb, args);
#endif
  const int i = (ob - 1) * kDotTb + (tb - 1);
#ifdef ZT_S8_VNNI512
  if (m == Micro::kVnni512) {
    kDotVnni.fn[i](args);
    return;
  }
#endif
  ZT_CHECK(m == Micro::kGeneric);
  kDotGeneric.fn[i](args);
}

void block_of(int n, int blocks, int i, int& begin, int& size) {
  const int base = n / blocks, rem = n % blocks;
  begin = i * base + std::min(i, rem);
  size = base + (i < rem ? 1 : 0);
}

TilePlan plan_tiles(Micro m, bool rows_a, int rows, int panels) {
  // Minimises the loads per quad over the whole product: each tile loads its mr A words and nv
  // B vectors for mr·nv multiply-accumulates.
  TilePlan best{};
  long best_cost = -1;
  for (int nv = 1; nv <= std::min(kMaxNv, std::max(panels, 1)); ++nv) {
    const int limit = max_mr(m, rows_a, nv);
    if (limit == 0) continue;
    const int rb = ceil_div(std::max(rows, 1), limit);
    const int mr = ceil_div(std::max(rows, 1), rb);
    const int groups = ceil_div(std::max(panels, 1), nv);
    const long cost = static_cast<long>(rb) * groups * (mr + nv);
    if (best_cost < 0 || cost < best_cost) {
      best_cost = cost;
      best = {mr, nv, rb, groups};
    }
  }
  ZT_CHECK(best_cost >= 0);
  return best;
}

void canvas_runs(int panels, int npos, int wc, int w, int col0, CanvasRun* runs, std::int32_t* nruns) {
  ZT_CHECK(wc >= w && col0 >= 0 && col0 + w <= wc);
  for (int p = 0; p < panels; ++p) nruns[p] = 0;
  // Output row r covers positions [r·wc + col0, r·wc + col0 + w): cut it at vector boundaries.
  for (int r = 0; r * wc + col0 < npos; ++r) {
    const int start = r * wc + col0, end = std::min(start + w, npos);
    for (int pos = start; pos < end;) {
      const int p = pos / kLanes, l = pos % kLanes, count = std::min(kLanes - l, end - pos);
      const int dst = r * w + (pos - start);
      CanvasRun* pr = runs + p * kMaxRuns;
      int& n = nruns[p];
      if (n > 0 && pr[n - 1].first + pr[n - 1].count == l && pr[n - 1].dst + pr[n - 1].count == dst) {
        pr[n - 1].count += count;  // rows that touch (wc = w): one run
      } else {
        ZT_CHECK(n < kMaxRuns);
        pr[n++] = {l, count, dst};
      }
      pos += count;
    }
  }
}

bool go_parallel(std::int64_t macs) {
  // Below ~1M multiply-accumulates (a few microseconds) a fork costs more than it saves.
  return detail::go_parallel(static_cast<std::size_t>(macs), std::size_t{1} << 20);
}

int max_threads() {
#ifdef ZT_OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

}  // namespace zt::kernels::s8
