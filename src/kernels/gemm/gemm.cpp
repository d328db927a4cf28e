// Portable GEMM fast path: GotoBLAS-style blocking (NC → KC → MC) with packed panels and a
// register-blocked kMr × kNr micro-kernel written with GCC vector extensions (zmm on AVX-512,
// ymm on AVX, 128-bit on NEON / generic). The tile grid and the K blocking depend only on the
// problem size, never on the thread count, so every C element sees the same sequence of
// floating-point operations whichever thread computes it: bit-identical for any thread count.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#ifdef ZT_OPENMP
#include <omp.h>
#endif

#include "zotrain/core/error.hpp"
#include "zotrain/kernels/gemm.hpp"

namespace zt::kernels {
namespace {

#if defined(__AVX512F__)
constexpr int kLanes = 16;
#elif defined(__AVX__)
constexpr int kLanes = 8;
#else
constexpr int kLanes = 4;
#endif

typedef float VecF __attribute__((vector_size(kLanes * sizeof(float))));
typedef float VecFU __attribute__((vector_size(kLanes * sizeof(float)), aligned(4), may_alias));

constexpr int kMr = 8;               // rows of A per micro-tile
constexpr int kNrv = 2;              // vectors of B per micro-tile
constexpr int kNr = kNrv * kLanes;   // columns per micro-tile
constexpr int kKc = kGemmDepthBlock;  // depth per packed block (gemm.hpp)
constexpr int kMc = 128;             // rows per packed A block (multiple of kMr)
constexpr int kNc = 4096;            // columns per packed B block (multiple of kNr)
static_assert(kMc % kMr == 0 && kNc % kNr == 0);

// Minimum multiply-accumulates before a call forks threads (results do not depend on it).
constexpr double kParallelMacs = 512.0 * 1024.0;

// x − (+0) == x exactly for every x (−0 and NaN included); GCC lowers it to one broadcast.
inline VecF broadcast(float x) { return x - VecF{}; }

inline int round_up(int v, int m) { return (v + m - 1) / m * m; }

// Packs op(A)[i0 .. i0+mc, p0 .. p0+kc] into kMr-row panels, k-major: dst[panel][p][r].
// Rows past mc are zero. Packs one panel.
void pack_a_panel(bool trans_a, const float* a, int lda, int i0, int mc, int p0, int kc,
                  int panel, float* dst) {
  const int r0 = panel * kMr;
  const int mr = std::min(kMr, mc - r0);
  float* d = dst + static_cast<std::ptrdiff_t>(panel) * kMr * kc;
  if (trans_a) {  // A is [K, M]: row p holds op(A)[:, p] contiguously.
    for (int p = 0; p < kc; ++p) {
      const float* src = a + static_cast<std::ptrdiff_t>(p0 + p) * lda + i0 + r0;
      float* out = d + static_cast<std::ptrdiff_t>(p) * kMr;
      int r = 0;
      for (; r < mr; ++r) out[r] = src[r];
      for (; r < kMr; ++r) out[r] = 0.0f;
    }
  } else {  // A is [M, K].
    for (int r = 0; r < mr; ++r) {
      const float* src = a + static_cast<std::ptrdiff_t>(i0 + r0 + r) * lda + p0;
      for (int p = 0; p < kc; ++p) d[static_cast<std::ptrdiff_t>(p) * kMr + r] = src[p];
    }
    for (int r = mr; r < kMr; ++r)
      for (int p = 0; p < kc; ++p) d[static_cast<std::ptrdiff_t>(p) * kMr + r] = 0.0f;
  }
}

// Packs op(B)[p0 .. p0+kc, j0 .. j0+nc] into kNr-column panels, k-major: dst[panel][p][c].
void pack_b_panel(bool trans_b, const float* b, int ldb, int j0, int nc, int p0, int kc,
                  int panel, float* dst) {
  const int c0 = panel * kNr;
  const int nr = std::min(kNr, nc - c0);
  float* d = dst + static_cast<std::ptrdiff_t>(panel) * kNr * kc;
  if (!trans_b) {  // B is [K, N]: contiguous along N.
    for (int p = 0; p < kc; ++p) {
      const float* src = b + static_cast<std::ptrdiff_t>(p0 + p) * ldb + j0 + c0;
      float* out = d + static_cast<std::ptrdiff_t>(p) * kNr;
      if (nr == kNr) {
        std::memcpy(out, src, sizeof(float) * kNr);
      } else {
        int c = 0;
        for (; c < nr; ++c) out[c] = src[c];
        for (; c < kNr; ++c) out[c] = 0.0f;
      }
    }
  } else {  // B is [N, K].
    for (int c = 0; c < nr; ++c) {
      const float* src = b + static_cast<std::ptrdiff_t>(j0 + c0 + c) * ldb + p0;
      for (int p = 0; p < kc; ++p) d[static_cast<std::ptrdiff_t>(p) * kNr + c] = src[p];
    }
    for (int c = nr; c < kNr; ++c)
      for (int p = 0; p < kc; ++p) d[static_cast<std::ptrdiff_t>(p) * kNr + c] = 0.0f;
  }
}

// C[0..MR, 0..nr] = (load_c ? C : 0) + Apanel · Bpanel over kc steps. Accumulators live in
// registers (MR · kNrv vectors); each C element is a k-ordered FMA chain then one add.
template <int MR>
inline void micro_kernel(int kc, const float* __restrict ap, const float* __restrict bp,
                         float* __restrict c, int ldc, int nr, bool load_c) {
  VecF acc[MR][kNrv];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < kNrv; ++j) acc[i][j] = VecF{};
  for (int p = 0; p < kc; ++p) {
    VecF bv[kNrv];
#pragma GCC unroll 4
    for (int j = 0; j < kNrv; ++j) bv[j] = *reinterpret_cast<const VecFU*>(bp + j * kLanes);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const VecF av = broadcast(ap[i]);
#pragma GCC unroll 4
      for (int j = 0; j < kNrv; ++j) acc[i][j] += av * bv[j];
    }
    ap += kMr;
    bp += kNr;
  }
  if (nr == kNr) {
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
      for (int j = 0; j < kNrv; ++j) {
        VecFU* cp = reinterpret_cast<VecFU*>(c + static_cast<std::ptrdiff_t>(i) * ldc + j * kLanes);
        *cp = load_c ? *cp + acc[i][j] : acc[i][j];
      }
    }
  } else {
    alignas(64) float tmp[kNr];
    for (int i = 0; i < MR; ++i) {
      for (int j = 0; j < kNrv; ++j) *reinterpret_cast<VecFU*>(tmp + j * kLanes) = acc[i][j];
      float* crow = c + static_cast<std::ptrdiff_t>(i) * ldc;
      if (load_c) {
        for (int j = 0; j < nr; ++j) crow[j] = crow[j] + tmp[j];
      } else {
        for (int j = 0; j < nr; ++j) crow[j] = tmp[j];
      }
    }
  }
}

inline void run_micro(int mr, int kc, const float* ap, const float* bp, float* c, int ldc, int nr,
                      bool load_c) {
  switch (mr) {
    case 8: micro_kernel<8>(kc, ap, bp, c, ldc, nr, load_c); break;
    case 7: micro_kernel<7>(kc, ap, bp, c, ldc, nr, load_c); break;
    case 6: micro_kernel<6>(kc, ap, bp, c, ldc, nr, load_c); break;
    case 5: micro_kernel<5>(kc, ap, bp, c, ldc, nr, load_c); break;
    case 4: micro_kernel<4>(kc, ap, bp, c, ldc, nr, load_c); break;
    case 3: micro_kernel<3>(kc, ap, bp, c, ldc, nr, load_c); break;
    case 2: micro_kernel<2>(kc, ap, bp, c, ldc, nr, load_c); break;
    default: micro_kernel<1>(kc, ap, bp, c, ldc, nr, load_c); break;
  }
}
static_assert(kMr == 8, "run_micro dispatches MR = 1..8");

}  // namespace

void gemm_f32_portable(bool trans_a, bool trans_b, int m, int n, int k, const float* a, int lda,
                       const float* b, int ldb, float* c, int ldc, bool accumulate) {
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

  bool parallel = false;
#ifdef ZT_OPENMP
  parallel = !omp_in_parallel() && omp_get_max_threads() > 1 &&
             static_cast<double>(m) * n * k >= kParallelMacs &&
             (m > kMr || n > kNr);
#endif
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
        for (int jp = 0; jp < n_panels; ++jp) pack_b_panel(trans_b, b, ldb, jc, nc, pc, kc, jp, b_pack);
        for (int ic = 0; ic < m; ic += kMc) {
          const int mc = std::min(kMc, m - ic);
          const int m_panels = (mc + kMr - 1) / kMr;
#pragma omp for schedule(static)
          for (int ip = 0; ip < m_panels; ++ip) pack_a_panel(trans_a, a, lda, ic, mc, pc, kc, ip, a_pack);
          // Tiles: column panel outer so a thread's consecutive tiles share the B panel.
#pragma omp for schedule(static)
          for (int t = 0; t < n_panels * m_panels; ++t) {
            const int jp = t / m_panels;
            const int ip = t % m_panels;
            const int mr = std::min(kMr, mc - ip * kMr);
            const int nr = std::min(kNr, nc - jp * kNr);
            float* ct = c + static_cast<std::ptrdiff_t>(ic + ip * kMr) * ldc + jc + jp * kNr;
            run_micro(mr, kc, a_pack + static_cast<std::ptrdiff_t>(ip) * kMr * kc,
                      b_pack + static_cast<std::ptrdiff_t>(jp) * kNr * kc, ct, ldc, nr, load_c);
          }
        }
      }
    }
  }
}

GemmF32Fn select_gemm_f32(Isa isa) {
  switch (isa) {
    case Isa::kReference: return &gemm_f32_ref;
    case Isa::kPortable:
    case Isa::kNeon:
    case Isa::kNeonDot: return &gemm_f32_portable;  // no NEON-specific GEMM yet
  }
  return &gemm_f32_portable;
}

}  // namespace zt::kernels
