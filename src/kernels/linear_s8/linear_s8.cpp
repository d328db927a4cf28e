// The optimised int8 linear products (every path but the reference), each path on its own
// micro-kernel (gemm_s8_internal.hpp):
//   forward   y = x·wᵀ: rows = samples (A = x rows, read in place), lanes = outputs
//             (B = w packed [k quad][n][4]);
//   dx        dx = e·w: rows = samples (A = e rows), lanes = inputs (B = w rows interleaved
//             four at a time: [n quad][k][4]);
//   dW        g = eᵀ·x: rows = outputs (A = e, four samples interleaved: [b quad][n][4]),
//             lanes = inputs (B = x, four samples interleaved: [b quad][k][4]).
// The packed operands live in fixed-size buffers on the caller's stack (the kernels allocate
// nothing): large problems are cut into blocks of lanes and chunks of the reduction, chunks after
// the first accumulating into the output (exact: integers). Threads split each block's tiles
// (rows × lane groups) and its packing; results do not depend on the split.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#ifdef ZT_OPENMP
#include <omp.h>
#endif

#include "gemm_s8_internal.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/kernels/linear_s8.hpp"
#include "../select_isa.hpp"

namespace zt::kernels {
namespace s8 {
namespace {

constexpr int kPackBytes = 64 * 1024;  // shared packed operand(s) of one block
constexpr int kMaxBlockPanels = 256;   // lanes of one block ≤ 4096 (the zero row below)
constexpr int kMaxRowsBlock = 1024;    // dW: outputs per block (correction array)
constexpr int kAcc64Elems = 4096;      // dW with more than kMaxTerms samples: int64 block
alignas(64) const std::int8_t kZeroRow[kMaxBlockPanels * kLanes] = {};

// Correction of rows-mode A rows: 128 · Σ of the real bytes [k0, k1) of each row.
void row_corrections(const std::int8_t* a, ptrdiff_t lda, int r0, int mr, int k0, int k1,
                     std::int32_t* corr) {
  for (int m = 0; m < mr; ++m) corr[m] = 128 * sum_s8(a + (r0 + m) * lda + k0, k1 - k0);
}

// A rows r0.. of a row-major [rows, depth] int8 matrix for quads [q0, q0 + nq) of the depth:
// row pointers, and when the last quad is partial, a zero-filled copy of it.
struct RowsA {
  const std::int8_t* rows[16];
  std::int8_t tail[16 * 4];
  bool has_tail = false;
};
void rows_a(const std::int8_t* a, ptrdiff_t lda, int depth, int r0, int mr, int q0, int nq, RowsA& out) {
  const int k0 = 4 * q0;
  for (int m = 0; m < mr; ++m) out.rows[m] = a + (r0 + m) * lda + k0;
  out.has_tail = 4 * (q0 + nq) > depth;
  if (out.has_tail) {
    const int kt = 4 * (q0 + nq - 1), n = depth - kt;
    std::memset(out.tail, 0, sizeof out.tail);
    for (int m = 0; m < mr; ++m) std::memcpy(out.tail + 4 * m, a + (r0 + m) * lda + kt, n);
  }
}

// Runs the tiles of one packed block: rows [0, rows) × panels [0, panels) of C. Tiles go row
// block by row block, so `set(args, r0, mr, p0, nv, rows_a, corr, fresh)` fills the A, B and C
// fields of the tile of rows [r0, r0 + mr) and vectors [p0, p0 + nv), and when `fresh` (first
// tile of a row block on this thread) also rows_a and corr[0, mr), which the next tiles reuse.
template <class Set>
void run_tiles(bool team, const MicroKernel& micro, bool rows_mode, int rows, int panels, const Set& set) {
  const TilePlan plan = plan_tiles(micro, rows_mode, rows, panels);
  const int tiles = plan.row_blocks * plan.groups;
  std::int32_t corr[16];
  RowsA ra;
  int last = -1;
  team_for(team, tiles, [&](int t) {
    const int rbi = t / plan.groups, gi = t % plan.groups;
    int r0, mr;
    block_of(rows, plan.row_blocks, rbi, r0, mr);
    const int p0 = gi * plan.nv, nv = std::min(plan.nv, panels - p0);
    MicroArgs args;
    args.corr = corr;
    set(args, r0, mr, p0, nv, ra, corr, rbi != last);
    last = rbi;
    micro.tile_fn(rows_mode, mr, nv)(args);
  });
}

// The rows-mode product of forward and input gradient: c[B, cols] = a[B, depth] · Wᵀ with A =
// the rows of a read in place and B = W packed by pack_b(team, pack, lane0, panels, q0, nq,
// b_step) as quads [q0, q0 + nq) of the depth × lanes [lane0, lane0 + panels·16), value ^
// b_bias, quad q at pack + q·b_step. Blocks of panels × quads fit the pack buffer; quad blocks
// after the first accumulate.
template <class PackB>
void rows_product(const MicroKernel& micro, int B, int depth, int cols, const std::int8_t* a_mat,
                  std::int32_t* c, const PackB& pack_b) {
  if (B == 0 || cols == 0) return;
  if (depth == 0) {
    std::fill_n(c, static_cast<ptrdiff_t>(B) * cols, 0);
    return;
  }
  const int dq = ceil_div(depth, 4), np = ceil_div(cols, kLanes);
  const int dqb = std::min(dq, std::max(16, kPackBytes / (np * kVecBytes)));
  const int npb = std::min({np, kMaxBlockPanels, std::max(1, kPackBytes / (dqb * kVecBytes))});
  alignas(64) std::uint8_t pack[kPackBytes];
  with_team(go_parallel(static_cast<std::int64_t>(B) * cols * depth), [&](bool team) {
    for (int pb = 0; pb < np; pb += npb) {
      const int panels = std::min(npb, np - pb), lane0 = pb * kLanes;
      const ptrdiff_t b_step = static_cast<ptrdiff_t>(panels) * kVecBytes;
      for (int q0 = 0; q0 < dq; q0 += dqb) {
        const int nq = std::min(dqb, dq - q0);
        pack_b(team, pack, lane0, panels, q0, nq, b_step);
        run_tiles(team, micro, true, B, panels,
                  [&](MicroArgs& a, int r0, int mr, int p0, int nv, RowsA& ra, std::int32_t* corr, bool fresh) {
                    if (fresh) {
                      rows_a(a_mat, depth, depth, r0, mr, q0, nq, ra);
                      row_corrections(a_mat, depth, r0, mr, 4 * q0, std::min(depth, 4 * (q0 + nq)), corr);
                    }
                    a.nq = nq;
                    a.a_rows = ra.rows;
                    a.a_step = 4;
                    a.a_tail = ra.has_tail ? ra.tail : nullptr;
                    a.b = pack + p0 * kVecBytes;
                    a.b_step = b_step;
                    a.c = c + static_cast<ptrdiff_t>(r0) * cols + lane0 + p0 * kLanes;
                    a.ldc = cols;
                    a.n_valid = std::min(nv * kLanes, cols - lane0 - p0 * kLanes);
                    a.accumulate = q0 > 0;
                  });
      }
    }
  });
}

}  // namespace

// ---- forward: y[B,N] = x[B,K] · w[N,K]ᵀ ----------------------------------------------------
void linear_forward(const MicroKernel& micro, int B, int N, int K, const std::int8_t* x, const std::int8_t* w,
                    std::int32_t* y) {
  ZT_CHECK(B >= 0 && N >= 0 && K >= 0);
  ZT_CHECK_MSG(K <= kMaxTerms, "linear_s8: K > 65536 could overflow int32");
  rows_product(micro, B, K, N, x, y,
               [&](bool team, std::uint8_t* pack, int lane0, int panels, int q0, int nq, ptrdiff_t b_step) {
                 // w[lane0 + l][4(q0 + q) + s] → pack[(q·lanes + l)·4 + s], value + 128.
                 team_for(team, panels * kLanes, [&](int l) {
                   const int n = lane0 + l;
                   std::uint8_t* d = pack + 4 * l;
                   int q = 0;
                   if (n < N) {
                     const std::int8_t* src = w + static_cast<ptrdiff_t>(n) * K + 4 * q0;
                     const int full = std::min(nq, (K - 4 * q0) / 4);
                     for (; q < full; ++q) {
                       std::uint32_t v;
                       std::memcpy(&v, src + 4 * q, 4);
                       v ^= 0x01010101u * micro.b_bias;
                       std::memcpy(d + q * b_step, &v, 4);
                     }
                     if (q < nq) {  // the partial last quad of the row
                       for (int s = 0; s < 4; ++s)
                         d[q * b_step + s] =
                             4 * (q0 + q) + s < K
                                 ? static_cast<std::uint8_t>(static_cast<std::uint8_t>(src[4 * q + s]) ^ micro.b_bias)
                                 : micro.b_bias;
                       ++q;
                     }
                   }
                   for (; q < nq; ++q) std::memset(d + q * b_step, micro.b_bias, 4);
                 });
               });
}

// ---- backward input: dx[B,K] = e[B,N] · w[N,K] ---------------------------------------------
void linear_backward_input(const MicroKernel& micro, int B, int N, int K, const std::int8_t* e,
                           const std::int8_t* w, std::int32_t* dx) {
  ZT_CHECK(B >= 0 && N >= 0 && K >= 0);
  ZT_CHECK_MSG(N <= kMaxTerms, "linear_s8: N > 65536 could overflow int32");
  rows_product(micro, B, N, K, e, dx,
               [&](bool team, std::uint8_t* pack, int lane0, int panels, int q0, int nq, ptrdiff_t b_step) {
                 const int lanes = std::min(panels * kLanes, K - lane0);
                 // Quad q: rows n = 4(q0 + q) + s of w, columns lane0 + l → pack[q][l][s].
                 team_for(team, nq, [&](int q) {
                   const std::int8_t* r[4];
                   for (int s = 0; s < 4; ++s) {
                     const int n = 4 * (q0 + q) + s;
                     r[s] = n < N ? w + static_cast<ptrdiff_t>(n) * K + lane0 : kZeroRow;
                   }
                   std::uint8_t* d = pack + q * b_step;
                   interleave4(d, r[0], r[1], r[2], r[3], lanes, micro.b_bias);
                   std::memset(d + 4 * lanes, micro.b_bias, static_cast<std::size_t>(b_step - 4 * lanes));
                 });
               });
}

// ---- backward weights: g[N,K] = Σ_b e[b,n] · x[b,k] -----------------------------------------
// Chunks of the batch accumulate in int32 into g while at most kMaxTerms samples have been
// summed (exact, and |g| ≤ 65536 · 128² < 2^31). Beyond that (batches over 65536) each block
// of g is added into int64 after every 65536 samples and saturated to int32 at the end.
void linear_backward_weights(const MicroKernel& micro, int B, int N, int K, const std::int8_t* e,
                             const std::int8_t* x, std::int32_t* g) {
  ZT_CHECK(B >= 0 && N >= 0 && K >= 0);
  if (N == 0 || K == 0) return;
  if (B == 0) {
    std::fill_n(g, static_cast<ptrdiff_t>(N) * K, 0);
    return;
  }
  const bool wide = B > kMaxTerms;
  const int kp = ceil_div(K, kLanes);
  const int nb = wide ? std::min(N, 32) : std::min(N, kMaxRowsBlock);
  const int kpb = wide ? std::min(kp, kAcc64Elems / (32 * kLanes)) : std::min(kp, 64);
  // Quads per chunk: E4 (nb words) + X4 (kpb vectors) per quad fit the pack buffer.
  const int bqc = std::max(1, kPackBytes / (4 * (nb + kpb * kLanes)));
  const int bq_all = ceil_div(B, 4);
  constexpr int kSuper = kMaxTerms / 4;  // quads per int32 accumulation
  alignas(64) std::uint8_t pack[kPackBytes];
  std::int32_t corr_all[kMaxRowsBlock];
  std::int64_t acc64[kAcc64Elems];  // used only when wide
  with_team(go_parallel(static_cast<std::int64_t>(B) * N * K), [&](bool team) {
    for (int n0 = 0; n0 < N; n0 += nb) {
      const int rows = std::min(nb, N - n0);
      for (int pb = 0; pb < kp; pb += kpb) {
        const int panels = std::min(kpb, kp - pb), lane0 = pb * kLanes;
        const int lanes = std::min(panels * kLanes, K - lane0);
        const ptrdiff_t a_step = 4 * static_cast<ptrdiff_t>(rows);
        const ptrdiff_t b_step = static_cast<ptrdiff_t>(panels) * kVecBytes;
        std::uint8_t* e4 = pack;
        std::uint8_t* x4 = pack + static_cast<ptrdiff_t>(bqc) * a_step;
        std::int32_t* gb = g + static_cast<ptrdiff_t>(n0) * K + lane0;
        const auto g_at = [&](int i) -> std::int32_t& { return gb[static_cast<ptrdiff_t>(i / lanes) * K + i % lanes]; };
        if (wide) team_for(team, rows * lanes, [&](int i) { acc64[i] = 0; });
        for (int s0 = 0; s0 < bq_all; s0 += kSuper) {
          const int s1 = std::min(bq_all, s0 + kSuper);
          for (int q0 = s0; q0 < s1; q0 += bqc) {
            const int nq = std::min(bqc, s1 - q0);
            // Quad q: samples b = 4(q0 + q) + s → e4[q][n][s] (plain int8), x4[q][k][s] (+128).
            team_for(team, nq, [&](int q) {
              const std::int8_t* re[4];
              const std::int8_t* rx[4];
              for (int s = 0; s < 4; ++s) {
                const ptrdiff_t b = 4 * static_cast<ptrdiff_t>(q0 + q) + s;
                re[s] = b < B ? e + b * N + n0 : kZeroRow;
                rx[s] = b < B ? x + b * K + lane0 : kZeroRow;
              }
              interleave4(e4 + q * a_step, re[0], re[1], re[2], re[3], rows, 0);
              std::uint8_t* d = x4 + q * b_step;
              interleave4(d, rx[0], rx[1], rx[2], rx[3], lanes, micro.b_bias);
              std::memset(d + 4 * lanes, micro.b_bias, static_cast<std::size_t>(b_step - 4 * lanes));
            });
            const int b_end = std::min(B, 4 * (q0 + nq));
            team_for(team, rows, [&](int n) {
              std::int32_t s = 0;
              for (int b = 4 * q0; b < b_end; ++b) s += e[static_cast<ptrdiff_t>(b) * N + n0 + n];
              corr_all[n] = 128 * s;
            });
            run_tiles(team, micro, false, rows, panels,
                      [&](MicroArgs& a, int r0, int, int p0, int nv, RowsA&, std::int32_t*, bool) {
                        a.nq = nq;
                        a.a = reinterpret_cast<const std::int8_t*>(e4) + 4 * r0;
                        a.a_step = a_step;
                        a.corr = corr_all + r0;
                        a.b = x4 + p0 * kVecBytes;
                        a.b_step = b_step;
                        a.c = gb + static_cast<ptrdiff_t>(r0) * K + p0 * kLanes;
                        a.ldc = K;
                        a.n_valid = std::min(nv * kLanes, lanes - p0 * kLanes);
                        a.accumulate = q0 > s0;
                      });
          }
          if (wide) team_for(team, rows * lanes, [&](int i) { acc64[i] += g_at(i); });
        }
        if (wide)
          team_for(team, rows * lanes, [&](int i) {
            g_at(i) = static_cast<std::int32_t>(std::clamp<std::int64_t>(acc64[i], INT32_MIN, INT32_MAX));
          });
      }
    }
  });
}

}  // namespace s8

// The public functions of each path: the drivers above on that path's micro-kernel.
#define ZT_LINEAR_S8_PATH(path)                                                                    \
  void linear_forward_s8_##path(int B, int N, int K, const std::int8_t* x, const std::int8_t* w,   \
                                std::int32_t* y) {                                                 \
    s8::linear_forward(s8::micro_kernel_##path, B, N, K, x, w, y);                                 \
  }                                                                                                \
  void linear_backward_input_s8_##path(int B, int N, int K, const std::int8_t* e,                  \
                                       const std::int8_t* w, std::int32_t* dx) {                   \
    s8::linear_backward_input(s8::micro_kernel_##path, B, N, K, e, w, dx);                         \
  }                                                                                                \
  void linear_backward_weights_s8_##path(int B, int N, int K, const std::int8_t* e,                \
                                         const std::int8_t* x, std::int32_t* g) {                  \
    s8::linear_backward_weights(s8::micro_kernel_##path, B, N, K, e, x, g);                        \
  }
ZT_FOR_EACH_S8_PATH(ZT_LINEAR_S8_PATH)
#undef ZT_LINEAR_S8_PATH

ZT_DEFINE_SELECT_DOT(LinearForwardS8Fn, linear_forward_s8)
ZT_DEFINE_SELECT_DOT(LinearBackwardInputS8Fn, linear_backward_input_s8)
ZT_DEFINE_SELECT_DOT(LinearBackwardWeightsS8Fn, linear_backward_weights_s8)

}  // namespace zt::kernels
