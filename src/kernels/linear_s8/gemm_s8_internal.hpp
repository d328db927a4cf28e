// Internals of the optimised int8 × int8 → int32 products (linear_s8, conv2d_s8): one register-
// blocked micro-kernel family (one implementation per ISA, see MicroKernel) and the helpers that pack operands for it. Integer arithmetic only
// (also compiled with -mgeneral-regs-only for aarch64).
//
// The micro-kernel computes, for MR rows m and NV·16 lanes l (NV "vectors" of 16 int32 lanes),
//   C[m][l] = (accumulate ? C[m][l] : 0) + Σ_q Σ_{s<4} A[m][q][s] · B[q][l][s] ,
//   A, the broadcast operand: int8, 4 consecutive reduction terms ("a quad") read as one word;
//   B, the lane operand: int8 values, quad q = 16 lanes × 4 bytes, each stored as the byte
//   value ^ b_bias of the kernel (MicroKernel::b_bias; every packing routine takes it from there).
// b_bias 0x80 stores value + 128, what x86 VNNI multiplies (vpdpbusd: u8 × s8, 4 products per
// int32 lane); those kernels and the plain-loop one evaluate Σ A · (value + 128) − corr[m] with
// corr[m] = 128 · Σ_{q,s} A[m][q][s]. The NEON kernels (b_bias 0) multiply the int8 values as
// stored and never read corr: an XOR per B vector would cost the A53 one NEON issue slot in
// seven of its product loop (docs/results/a53-model.md).
// Bytes of B that pad a quad beyond the real reduction hold the value 0 (byte b_bias): with
// 0x80 they add 128·A, and corr, which sums every A byte read, takes it out again.
//
// Overflow bound: every intermediate is a sum of at most kMaxTerms products |u8 · s8| ≤ 255·128
// (plus a previous partial result of at most that many true products ≤ 128·128), and
// 65536 · 255 · 128 = 2 139 095 040 < 2^31, so int32 never overflows as long as one int32
// accumulation covers at most kMaxTerms products. Forward and input-gradient reductions
// (K, C·k·k, N, O·k·k) are checked against it; weight-gradient sums over the batch are split into
// int32 blocks of at most kMaxTerms products, added in int64 and saturated at the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "zotrain/kernels/conv2d.hpp"
#include "zotrain/kernels/isa.hpp"
#include "../select_isa.hpp"

namespace zt::kernels::s8 {

using std::ptrdiff_t;

inline constexpr int kLanes = 16;       // int32 lanes of one B vector
inline constexpr int kVecBytes = 64;    // one quad of one B vector: 16 lanes × 4 bytes
inline constexpr std::uint8_t kBias = 0x80;  // b_bias of the u8 × s8 kernels (value + 128)
inline constexpr int kMaxTerms = 65536;  // products per int32 accumulation (see above)
inline constexpr int kMaxNv = 4;         // B vectors per micro-tile

struct MicroArgs {
  int nq = 0;  // quads, including the tail quad when a_tail is set
  // A. Packed mode: word (m, q) at a + q·a_step + 4·m. Rows mode: at a_rows[m] + q·a_step, and
  // the last quad (q = nq − 1) from a_tail + 4·m when a_tail is not null.
  const std::int8_t* a = nullptr;
  const std::int8_t* const* a_rows = nullptr;
  ptrdiff_t a_step = 0;
  const std::int8_t* a_tail = nullptr;
  // B: vector v of quad q at b + (b_off ? b_off[q] : q·b_step) + v·b_vec (64 bytes each).
  const std::uint8_t* b = nullptr;
  const std::int32_t* b_off = nullptr;
  ptrdiff_t b_step = 0, b_vec = kVecBytes;
  // C: row m, lane l at c[m·ldc + l] for l < n_valid (≤ NV·16); lanes past n_valid are not
  // touched. corr: MR values subtracted from every lane of row m.
  std::int32_t* c = nullptr;
  ptrdiff_t ldc = 0;
  int n_valid = 0;
  const std::int32_t* corr = nullptr;
  bool accumulate = false;
  // Canvas store (when runs is set; never with accumulate): vector v writes, for each of its
  // nruns[v] runs r = runs[v·kMaxRuns + i], lanes [r.first, r.first + r.count) to
  // c[m·ldc + r.dst …]; other lanes are dropped. See canvas_runs. A kernel may also write
  // elements of row m (below ldc) past a run that a later run of the same or a later vector
  // writes (store_tile_rows_padded), so tiles go out in increasing vector order.
  const struct CanvasRun* runs = nullptr;
  const std::int32_t* nruns = nullptr;
};

// A run of lanes of one B vector that land on consecutive output elements.
struct CanvasRun {
  std::int32_t first, count, dst;
};
inline constexpr int kMaxRuns = kLanes / 2 + 1;
// Runs of a canvas whose lane l of vector p is position P = 16p + l (P < npos), i.e. row
// P / wc and column P % wc − col0 of an output of width w (kept when 0 ≤ column < w). Runs
// are separated by the wc − w dropped columns of a row (none when wc = w: one run), so a
// vector has at most kMaxRuns of them.
// runs: [panels][kMaxRuns], nruns: [panels].
void canvas_runs(int panels, int npos, int wc, int w, int col0, CanvasRun* runs, std::int32_t* nruns);

// Vector dot tile (weight gradient with few output channels): for o < OB, t < TB and 16 lanes,
//   part[o·ld + t][l] += Σ_{i < steps} Σ_{s<4} x[t][64i + 4l + s] · e[o][64i + 4l + s]
// with x the value + 128 of x's bytes (stored as value ^ b_bias, as B) and e int8: lane partial
// sums, reduced across lanes later.
struct DotArgs {
  int steps = 0;
  const std::uint8_t* const* x = nullptr;  // TB pointers
  const std::int8_t* const* e = nullptr;   // OB pointers
  std::int32_t* part = nullptr;            // [o][t] blocks of 16 int32, row o at part + o·ld·16
  ptrdiff_t ld = 0;
};
inline constexpr int kDotOb = 6, kDotTb = 4;

// One ISA's micro-kernels, in a file named after it (gemm_s8_tables.hpp builds them):
//   micro_kernel_portable     plain loops the compiler vectorises (gemm_s8_portable.cpp; scalar
//                             under -mgeneral-regs-only), on every machine;
//   micro_kernel_avx512_vnni  vpdpbusd through GCC vector extensions and builtins
//                             (gemm_s8_avx512_vnni.cpp; x86-64 builds, ZT_HAVE_AVX512_VNNI);
//   micro_kernel_avx2         vpmaddwd on operands widened to int16 (gemm_s8_avx2.cpp; x86-64
//                             builds, ZT_HAVE_AVX2);
//   micro_kernel_neon         vmull_s8 + vpadalq_s16 (gemm_s8_neon.cpp; ARM builds, ZT_HAVE_NEON);
//   micro_kernel_neon_dot     SDOT (gemm_s8_neon_dot.cpp; aarch64 builds, ZT_HAVE_NEON_DOT).
using MicroFn = void (*)(const MicroArgs& args);

struct MicroKernel {
  // Largest MR for NV vectors and the A mode (rows mode needs a pointer per row); 0 where the
  // combination is not built.
  int (*max_mr)(bool rows_a, int nv);
  // The (mr, nv) micro-kernel, 1 ≤ mr ≤ max_mr(rows_a, nv), 1 ≤ nv ≤ kMaxNv (checked): a loop
  // over tiles of one shape looks it up once.
  MicroFn (*tile_fn)(bool rows_a, int mr, int nv);
  // The (ob, tb) dot tile, 1 ≤ ob ≤ kDotOb, 1 ≤ tb ≤ kDotTb.
  void (*run_dot)(int ob, int tb, const DotArgs& args);
  // How B and DotArgs::x bytes are stored: value ^ b_bias (kBias or 0, see the top).
  std::uint8_t b_bias;
};
extern const MicroKernel micro_kernel_portable;
extern const MicroKernel micro_kernel_avx512_vnni;  // defined only where built (see above)
extern const MicroKernel micro_kernel_avx2;         // likewise
extern const MicroKernel micro_kernel_neon;
extern const MicroKernel micro_kernel_neon_dot;
// The micro-kernel of a kernel path, chosen as every family chooses (select_isa.hpp: a path
// this build lacks falls back). kReference, which has no micro-kernel, gives the portable one.
const MicroKernel& micro_kernel(Isa isa);
// X(path) for each micro-kernel this build has: portable, then avx512_vnni, avx2, neon and
// neon_dot where built (the public functions of linear_s8.cpp and conv2d_s8.cpp, one per path).
#define ZT_FOR_EACH_S8_PATH(X)                                                 \
  X(portable) ZT_IF_AVX512_VNNI(X(avx512_vnni), ) ZT_IF_AVX2(X(avx2), ) \
      ZT_IF_NEON(X(neon), ) ZT_IF_NEON_DOT(X(neon_dot), )

// dst[l] = src[l] for a run of n ≤ kLanes (16) int32 values: up to four 4-value blocks, the
// last one ending at n (overlapping its predecessor when n is not a multiple of 4); n < 4 one
// by one. No loop (and no memcpy call), so a tile's store is a few vector moves.
inline void copy_run(std::int32_t* __restrict dst, const std::int32_t* __restrict src, int n) {
  if (n < 4) {
    if (n > 2) dst[2] = src[2];
    if (n > 1) dst[1] = src[1];
    if (n > 0) dst[0] = src[0];
    return;
  }
  std::memcpy(dst, src, 16);
  if (n > 8) std::memcpy(dst + 4, src + 4, 16);
  if (n > 12) std::memcpy(dst + 8, src + 8, 16);
  if (n > 4) std::memcpy(dst + n - 4, src + n - 4, 16);
}

// Writes row m of a finished tile from its `lanes` sums acc[l] (l < lanes, a multiple of 16):
// C = (accumulate ? C : 0) + acc − corr_m for lanes < n_valid, or the canvas runs when set.
// Row m's A word (4 int8) of quad q: packed or rows mode, the last quad from a_tail when it is
// set (nq_main = nq − 1 then, else nq). For the plain-loop kernels (portable, AVX2).
template <bool kRows>
inline const std::int8_t* a_word(const MicroArgs& p, int q, int m, int nq_main) {
  if constexpr (kRows)
    return q < nq_main ? p.a_rows[m] + q * p.a_step : p.a_tail + 4 * m;
  else
    return p.a + q * p.a_step + 4 * m;
}

inline void store_tile_row(const MicroArgs& p, int m, const std::int32_t* acc, int lanes, std::int32_t corr_m) {
  std::int32_t* c = p.c + m * p.ldc;
  if (p.runs != nullptr) {
    for (int v = 0; v < lanes / kLanes; ++v)
      for (int i = 0, nr = p.nruns[v]; i < nr; ++i) {  // nr read once: c's stores may alias it
        const CanvasRun& r = p.runs[v * kMaxRuns + i];
        if (corr_m == 0)  // the NEON kernels
          copy_run(c + r.dst, acc + v * kLanes + r.first, r.count);
        else
          for (int l = 0; l < r.count; ++l) c[r.dst + l] = acc[v * kLanes + r.first + l] - corr_m;
      }
    return;
  }
  const int n = lanes < p.n_valid ? lanes : p.n_valid;
  if (p.accumulate) {
    for (int l = 0; l < n; ++l) c[l] = c[l] + (acc[l] - corr_m);
  } else {
    for (int l = 0; l < n; ++l) c[l] = acc[l] - corr_m;
  }
}

// store_tile_row for rows [m0, m0 + rows) of a tile without corrections, row m0 + j's sums at
// acc + j·acc_ld, which may be read kLanes lanes past `lanes` (the NEON kernels pad their
// buffers). A canvas run that has at least kLanes elements of its output row from its start is
// copied as one whole vector: its lanes past the run land on elements of that row that a later
// run writes — of the same vector, or of a later one, which canvas_sample stores after this one —
// so the result is the same, with one branch-free copy where copy_run branches on the count.
// Runs nearer the end of the row are copied exactly. The rows share each run's descriptor.
inline void store_tile_rows_padded(const MicroArgs& p, int m0, int rows, const std::int32_t* acc,
                                   ptrdiff_t acc_ld, int lanes) {
  if (p.runs == nullptr) {
    for (int j = 0; j < rows; ++j) store_tile_row(p, m0 + j, acc + j * acc_ld, lanes, 0);
    return;
  }
  for (int v = 0; v < lanes / kLanes; ++v)
    for (int i = 0, nr = p.nruns[v]; i < nr; ++i) {  // nr read once: c's stores may alias it
      const CanvasRun r = p.runs[v * kMaxRuns + i];
      const std::int32_t* src = acc + v * kLanes + r.first;
      std::int32_t* dst = p.c + m0 * p.ldc + r.dst;
      if (r.dst + kLanes <= p.ldc) {
        for (int j = 0; j < rows; ++j)
          std::memcpy(dst + j * p.ldc, src + j * acc_ld, kLanes * sizeof(std::int32_t));
      } else {
        for (int j = 0; j < rows; ++j) copy_run(dst + j * p.ldc, src + j * acc_ld, r.count);
      }
    }
}

// Register blocking of an M-row × `panels`-vector product: row blocks of at most `mr` rows
// (near-equal sizes, see block_of) × groups of `nv` vectors (the last group may be narrower).
struct TilePlan {
  int mr = 1, nv = 1;
  int row_blocks = 1, groups = 1;
};
TilePlan plan_tiles(const MicroKernel& m, bool rows_a, int rows, int panels);
// Row block i of n rows split into `blocks` near-equal blocks: [begin, begin + size).
void block_of(int n, int blocks, int i, int& begin, int& size);

// ---- packing helpers ---------------------------------------------------------------------
// dst[4i + s] = r_s[i] ^ xor_mask for i < n (the r_s may overlap: they are only read).
inline void interleave4(std::uint8_t* __restrict dst, const std::int8_t* __restrict r0,
                        const std::int8_t* __restrict r1, const std::int8_t* __restrict r2,
                        const std::int8_t* __restrict r3, int n, std::uint8_t xor_mask) {
  for (int i = 0; i < n; ++i) {
    dst[4 * i] = static_cast<std::uint8_t>(static_cast<std::uint8_t>(r0[i]) ^ xor_mask);
    dst[4 * i + 1] = static_cast<std::uint8_t>(static_cast<std::uint8_t>(r1[i]) ^ xor_mask);
    dst[4 * i + 2] = static_cast<std::uint8_t>(static_cast<std::uint8_t>(r2[i]) ^ xor_mask);
    dst[4 * i + 3] = static_cast<std::uint8_t>(static_cast<std::uint8_t>(r3[i]) ^ xor_mask);
  }
}
// dst[i] = src[i] ^ xor_mask.
inline void copy_xor(std::uint8_t* __restrict dst, const std::int8_t* __restrict src, ptrdiff_t n,
                     std::uint8_t xor_mask) {
  for (ptrdiff_t i = 0; i < n; ++i)
    dst[i] = static_cast<std::uint8_t>(static_cast<std::uint8_t>(src[i]) ^ xor_mask);
}
// dst[i] = src[i] ^ xor_mask for a short row (n < 2^16): whole 16- / 8-byte words, the last
// one overlapping its predecessor, instead of a vector loop with scalar tails.
inline void copy_xor_row(std::uint8_t* __restrict dst, const std::int8_t* __restrict src, int n,
                         std::uint8_t xor_mask) {
  const std::uint64_t m = 0x0101010101010101ull * xor_mask;
  const auto word = [&](int i) {
    std::uint64_t v;
    std::memcpy(&v, src + i, 8);
    v ^= m;
    std::memcpy(dst + i, &v, 8);
  };
  if (n < 8) {
    copy_xor(dst, src, n, xor_mask);
    return;
  }
  for (int i = 0; i + 8 <= n; i += 8) word(i);
  if (n % 8 != 0) word(n - 8);
}
// dst[i] = src[i] for a row of n values of T. Short rows (8 to 128 bytes) are copied as a few
// fixed-size pieces, the last one overlapping its predecessor: no call, no scalar tail.
template <class T>
inline void copy_row(T* __restrict dst, const T* __restrict src, int n) {
  const ptrdiff_t bytes = static_cast<ptrdiff_t>(n) * static_cast<ptrdiff_t>(sizeof(T));
  auto* d = reinterpret_cast<unsigned char*>(dst);
  const auto* s = reinterpret_cast<const unsigned char*>(src);
  if (bytes > 128) {
    std::memcpy(d, s, static_cast<std::size_t>(bytes));
  } else if (bytes >= 64) {
    std::memcpy(d, s, 64);
    std::memcpy(d + bytes - 64, s + bytes - 64, 64);
  } else if (bytes >= 16) {
    std::memcpy(d, s, 16);
    if (bytes > 32) std::memcpy(d + 16, s + 16, 16);
    if (bytes > 48) std::memcpy(d + 32, s + 32, 16);
    std::memcpy(d + bytes - 16, s + bytes - 16, 16);
  } else if (bytes >= 8) {
    std::memcpy(d, s, 8);
    std::memcpy(d + bytes - 8, s + bytes - 8, 8);
  } else {
    for (ptrdiff_t i = 0; i < bytes; ++i) d[i] = s[i];
  }
}
// Σ src[i], exact (n ≤ 2^24).
inline std::int32_t sum_s8(const std::int8_t* src, ptrdiff_t n) {
  std::int32_t s = 0;
  for (ptrdiff_t i = 0; i < n; ++i) s += src[i];
  return s;
}
// Σ src[i] for a short row (n < 2^16), 8 bytes at a time in a 64-bit word: the bytes are
// biased to unsigned (x ^ 0x80 = x + 128), summed pairwise into 16-bit fields and folded by a
// multiply; the bias is subtracted at the end.
inline std::int32_t sum_s8_row(const std::int8_t* src, int n) {
  if (n < 8) return sum_s8(src, n);
  const auto biased = [&](int at) {
    std::uint64_t v;
    std::memcpy(&v, src + at, 8);
    return v ^ 0x8080808080808080ull;
  };
  const auto byte_sum = [](std::uint64_t u) {
    u = (u & 0x00FF00FF00FF00FFull) + ((u >> 8) & 0x00FF00FF00FF00FFull);  // 4 sums ≤ 510
    return static_cast<std::int32_t>((u * 0x0001000100010001ull) >> 48);   // their sum ≤ 2040
  };
  std::int32_t s = 0;
  int i = 0;
  for (; i + 8 <= n; i += 8) s += byte_sum(biased(i));
  if (i < n) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    // The last n − i bytes are the top of the word ending at n: shift the counted ones out.
    s += byte_sum(biased(n - 8) >> (8 * (8 - (n - i))));
#else
    for (; i < n; ++i) s += src[i] + 128;
#endif
  }
  return s - 128 * n;
}

inline ptrdiff_t round_up(ptrdiff_t v, ptrdiff_t m) { return (v + m - 1) / m * m; }
inline int ceil_div(int a, int b) { return (a + b - 1) / b; }

// Forks threads only at the outermost level and for work worth it; inside any parallel region
// the kernels run serially on the caller's thread.
bool go_parallel(std::int64_t macs);
int max_threads();  // omp_get_max_threads(), 1 without OpenMP

// Runs body(team) once on a team of threads (team = true) when `par`, else once on the calling
// thread (team = false). Inside, team_for(team, n, f) runs f(0 .. n−1) split statically over the
// team (with a barrier at the end) or serially. A serial call never touches OpenMP, so it is
// safe from inside any parallel region.
template <class Body>
void with_team(bool par, const Body& body) {
  if (!par) {
    body(false);
    return;
  }
#pragma omp parallel
  body(true);
}
template <class F>
void team_for(bool team, int n, const F& f) {
  if (!team) {
    for (int i = 0; i < n; ++i) f(i);
    return;
  }
#pragma omp for schedule(static)
  for (int i = 0; i < n; ++i) f(i);
}

// ---- the drivers on a given micro-kernel (the public functions of each path: linear_s8.cpp,
// conv2d_s8.cpp) --------------------------------------------------------------------------
void linear_forward(const MicroKernel& m, int B, int N, int K, const std::int8_t* x, const std::int8_t* w,
                    std::int32_t* y);
void linear_backward_input(const MicroKernel& m, int B, int N, int K, const std::int8_t* e,
                           const std::int8_t* w, std::int32_t* dx);
void linear_backward_weights(const MicroKernel& m, int B, int N, int K, const std::int8_t* e,
                             const std::int8_t* x, std::int32_t* g);

void conv2d_forward(const MicroKernel& m, const Conv2dShape& s, const std::int8_t* x, const std::int8_t* w,
                    std::int32_t* y, void* scratch);
void conv2d_backward_input(const MicroKernel& m, const Conv2dShape& s, const std::int8_t* e,
                           const std::int8_t* w, std::int32_t* dx, void* scratch);
void conv2d_backward_weights(const MicroKernel& m, const Conv2dShape& s, const std::int8_t* x,
                             const std::int8_t* e, std::int32_t* g, void* scratch);

// Which quads the conv forward / input-gradient reduction uses (tests cover both):
// channel quads (4 channels at one tap) or row quads (4 neighbouring taps of one kernel row).
bool conv_uses_channel_quads(const Conv2dShape& s, bool backward_input);
// Which algorithm the weight gradient uses: vector dot products over positions (true) or
// taps × output-channel lanes (false).
bool conv_dw_uses_dot(const Conv2dShape& s);

}  // namespace zt::kernels::s8
