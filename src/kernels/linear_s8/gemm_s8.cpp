// The driver pieces shared by every int8 path (linear_s8.cpp, conv2d_s8.cpp): the choice of a
// micro-kernel, tile planning, canvas runs and the threading helpers. The micro-kernels live in
// files named after their ISA (gemm_s8_portable.cpp, gemm_s8_avx512_vnni.cpp, gemm_s8_avx2.cpp,
// gemm_s8_neon.cpp, gemm_s8_neon_dot.cpp). See gemm_s8_internal.hpp for the contract.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#ifdef ZT_OPENMP
#include <omp.h>
#endif

#include "../chunked_parallel.hpp"
#include "../select_isa.hpp"
#include "gemm_s8_internal.hpp"
#include "zotrain/core/error.hpp"

namespace zt::kernels::s8 {

const MicroKernel& micro_kernel(Isa isa) {
  return *detail::pick_isa<const MicroKernel*>(isa, &micro_kernel_portable, &micro_kernel_portable,
                                               ZT_NEON_FN(micro_kernel), ZT_NEON_DOT_FN(micro_kernel),
                                               ZT_AVX512_VNNI_FN(micro_kernel), ZT_AVX2_FN(micro_kernel));
}

void block_of(int n, int blocks, int i, int& begin, int& size) {
  const int base = n / blocks, rem = n % blocks;
  begin = i * base + std::min(i, rem);
  size = base + (i < rem ? 1 : 0);
}

TilePlan plan_tiles(const MicroKernel& m, bool rows_a, int rows, int panels) {
  // Minimises the loads per quad over the whole product: each tile loads its mr A words and nv
  // B vectors for mr·nv multiply-accumulates.
  TilePlan best{};
  long best_cost = -1;
  for (int nv = 1; nv <= std::min(kMaxNv, std::max(panels, 1)); ++nv) {
    const int limit = m.max_mr(rows_a, nv);
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
