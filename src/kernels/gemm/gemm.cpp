// Portable GEMM fast path: the blocked driver of gemm_internal.hpp with a register-blocked
// kMr × kNr micro-kernel written with GCC vector extensions (zmm on AVX-512, ymm on AVX, 128-bit
// on NEON / generic). Bit-identical for any thread count (see gemm_internal.hpp).
#include <algorithm>
#include <cstddef>

#include "../native_lanes.hpp"
#include "../select_isa.hpp"
#include "gemm_internal.hpp"
#include "zotrain/kernels/gemm.hpp"

namespace zt::kernels {
namespace {

constexpr int kLanes = kNativeF32Lanes;

typedef float VecF __attribute__((vector_size(kLanes * sizeof(float))));
typedef float VecFU __attribute__((vector_size(kLanes * sizeof(float)), aligned(4), may_alias));

constexpr int kMr = 8;               // rows of A per micro-tile
constexpr int kNrv = 2;              // vectors of B per micro-tile
constexpr int kNr = kNrv * kLanes;   // columns per micro-tile

// x − (+0) == x exactly for every x (−0 and NaN included); GCC lowers it to one broadcast.
inline VecF broadcast(float x) { return x - VecF{}; }

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

struct PortableTile {
  static constexpr int kMr = zt::kernels::kMr, kNr = zt::kernels::kNr;
  static void micro(int kc, const float* ap, const float* bp, float* c, int ldc, int mr, int nr,
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
};
static_assert(kMr == 8, "PortableTile::micro dispatches MR = 1..8");

}  // namespace

void gemm_f32_portable(bool trans_a, bool trans_b, int m, int n, int k, const float* a, int lda,
                       const float* b, int ldb, float* c, int ldc, bool accumulate) {
  gemm_detail::gemm_blocked<PortableTile>(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc,
                                          accumulate);
}

ZT_DEFINE_SELECT(GemmF32Fn, gemm_f32)

}  // namespace zt::kernels
