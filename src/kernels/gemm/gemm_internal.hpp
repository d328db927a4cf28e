// Internal to the gemm family: the GotoBLAS-style driver (NC → KC → MC blocking, packed panels,
// OpenMP over output tiles only) shared by the portable path (gemm.cpp) and the NEON path
// (gemm_neon.cpp), which differ only in their register tile and micro-kernel.
//
// A Tile policy provides:
//   kMr, kNr            rows of op(A) / columns of op(B) per micro-tile (panels are this wide)
//   micro(kc, ap, bp, c, ldc, mr, nr, load_c)
//                       C[0..mr, 0..nr] = (load_c ? C : 0) + Apanel · Bpanel over kc steps, for
//                       a kMr-row A panel and a kNr-column B panel (packed k-major, zero-padded
//                       past mr / nr); must touch no C element outside [0, mr) × [0, nr).
// The tile grid and the K blocking depend only on the problem size, never on the thread count,
// so every C element sees the same sequence of floating-point operations whichever thread
// computes it: bit-identical for any thread count.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#ifdef ZT_OPENMP
#include <omp.h>
#endif

#include "../chunked_parallel.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/kernels/gemm.hpp"

namespace zt::kernels::gemm_detail {

constexpr int kKc = kGemmDepthBlock;  // depth per packed block (gemm.hpp)
constexpr int kMc = 128;  // rows per packed A block (a multiple of every kMr)
constexpr int kNc = 4096; // columns per packed B block (a multiple of every kNr)

// Minimum multiply-accumulates before a call forks threads (results do not depend on it).
constexpr double kParallelMacs = 512.0 * 1024.0;

inline int round_up(int v, int m) { return (v + m - 1) / m * m; }

// Packs rows [i0, i0 + n) × depth [p0, p0 + kc) of an operand into R-wide panels, k-major:
// dst[panel][p][r], zero past n; packs one panel. The operand's element (row i, depth p) is at
// m[p·ld + i] when `rows_contiguous`, else at m[i·ld + p]. A is packed with R = MR (rows of
// op(A); contiguous when trans_a), B with R = NR (columns of op(B); contiguous unless trans_b).
template <int R>
void pack_panel(bool rows_contiguous, const float* m, int ld, int i0, int n, int p0, int kc, int panel,
                float* dst) {
  const int r0 = panel * R;
  const int nr = std::min(R, n - r0);
  float* d = dst + static_cast<std::ptrdiff_t>(panel) * R * kc;
  if (rows_contiguous) {
    for (int p = 0; p < kc; ++p) {
      const float* src = m + static_cast<std::ptrdiff_t>(p0 + p) * ld + i0 + r0;
      float* out = d + static_cast<std::ptrdiff_t>(p) * R;
      if (nr == R) {
        std::memcpy(out, src, sizeof(float) * R);
      } else {
        int r = 0;
        for (; r < nr; ++r) out[r] = src[r];
        for (; r < R; ++r) out[r] = 0.0f;
      }
    }
  } else {
    for (int r = 0; r < nr; ++r) {
      const float* src = m + static_cast<std::ptrdiff_t>(i0 + r0 + r) * ld + p0;
      for (int p = 0; p < kc; ++p) d[static_cast<std::ptrdiff_t>(p) * R + r] = src[p];
    }
    for (int r = nr; r < R; ++r)
      for (int p = 0; p < kc; ++p) d[static_cast<std::ptrdiff_t>(p) * R + r] = 0.0f;
  }
}

// The whole product (the contract of gemm.hpp) with Tile's micro-kernel.
template <class Tile>
void gemm_blocked(bool trans_a, bool trans_b, int m, int n, int k, const float* a, int lda,
                  const float* b, int ldb, float* c, int ldc, bool accumulate) {
  constexpr int kMr = Tile::kMr, kNr = Tile::kNr;
  static_assert(kMc % kMr == 0 && kNc % kNr == 0);
  ZT_CHECK(m >= 0 && n >= 0 && k >= 0);
  ZT_CHECK(ldc >= n);
  ZT_CHECK(lda >= (trans_a ? m : k) && ldb >= (trans_b ? k : n));
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate)
      for (int i = 0; i < m; ++i) std::fill_n(c + static_cast<std::ptrdiff_t>(i) * ldc, n, 0.0f);
    return;
  }

  const int kc_max = std::min(k, kKc);
  const std::size_t a_floats = static_cast<std::size_t>(round_up(std::min(m, kMc), kMr)) * kc_max;
  const std::size_t b_floats = static_cast<std::size_t>(round_up(std::min(n, kNc), kNr)) * kc_max;
  // Packing buffers: grown once per calling thread, reused; worker threads read them.
  thread_local std::vector<float> pack;
  if (pack.size() < a_floats + b_floats) pack.resize(a_floats + b_floats);
  float* const a_pack = pack.data();
  float* const b_pack = pack.data() + a_floats;

  const bool parallel =
      (m > kMr || n > kNr) &&
      detail::go_parallel(static_cast<std::size_t>(m) * static_cast<std::size_t>(n) *
                              static_cast<std::size_t>(k),
                          static_cast<std::size_t>(kParallelMacs));
  (void)parallel;

#pragma omp parallel if (parallel)
  {
    for (int jc = 0; jc < n; jc += kNc) {
      const int nc = std::min(kNc, n - jc);
      const int n_panels = (nc + kNr - 1) / kNr;
      for (int pc = 0; pc < k; pc += kKc) {
        const int kc = std::min(kKc, k - pc);
        const bool load_c = accumulate || pc > 0;
#pragma omp for schedule(static)
        for (int jp = 0; jp < n_panels; ++jp)
          pack_panel<kNr>(!trans_b, b, ldb, jc, nc, pc, kc, jp, b_pack);
        for (int ic = 0; ic < m; ic += kMc) {
          const int mc = std::min(kMc, m - ic);
          const int m_panels = (mc + kMr - 1) / kMr;
#pragma omp for schedule(static)
          for (int ip = 0; ip < m_panels; ++ip)
            pack_panel<kMr>(trans_a, a, lda, ic, mc, pc, kc, ip, a_pack);
          // Tiles: column panel outer so a thread's consecutive tiles share the B panel.
#pragma omp for schedule(static)
          for (int t = 0; t < n_panels * m_panels; ++t) {
            const int jp = t / m_panels;
            const int ip = t % m_panels;
            const int mr = std::min(kMr, mc - ip * kMr);
            const int nr = std::min(kNr, nc - jp * kNr);
            float* ct = c + static_cast<std::ptrdiff_t>(ic + ip * kMr) * ldc + jc + jp * kNr;
            Tile::micro(kc, a_pack + static_cast<std::ptrdiff_t>(ip) * kMr * kc,
                        b_pack + static_cast<std::ptrdiff_t>(jp) * kNr * kc, ct, ldc, mr, nr, load_c);
          }
        }
      }
    }
  }
}

}  // namespace zt::kernels::gemm_detail
