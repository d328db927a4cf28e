// 2-D convolution drivers and the portable path. Two algorithms, chosen by shape only (never by
// batch size, thread count or ISA):
//   direct  (small channel counts, rows at least half a vector wide — the LeNet-5 layers):
//     each sample is copied into a zero-padded plane, then for a block of output channels
//     held in registers and each output row, acc[o][x..] += w[o,c,ky,kx] · in[c, y+ky, x+kx..]
//     with GCC vector extensions along x (16 lanes on AVX-512, 8 on AVX, 4 on NEON/generic).
//     The register tiles are pluggable (conv2d_internal.hpp): conv2d_neon.cpp brings its own.
//     dx is the same kernel run on zero-padded dy with the flipped, transposed weights;
//     dW and db are accumulated lane-wise in vector partials and reduced horizontally once.
//   im2col + the path's GEMM (everything else: 1x1 without padding, very narrow rows,
//     pad ≥ k, large dW): y_b = W · col_b, dW += dy_b · col_bᵀ, dx_b = col2im(Wᵀ · dy_b).
// Every output element of the forward pass and of dx sees the same operations in the same
// order (bias, then c, ky, kx ascending) whatever the batch or its split, so a sample's result
// does not depend on which call or thread computes it. dW/db: the batch is split into fixed
// slots (slot s owns samples s, s+S, … with S = min(B, kSlots), or kBwdSlots on the direct
// path), each with its own partials, summed in slot order: bit-identical for any thread count,
// but not between one batch-32 call and eight batch-4 calls. Inside an OpenMP parallel region
// (any level) the kernels run serially on the caller's thread.
#include <algorithm>
#include <cstddef>
#include <cstring>

#ifdef ZT_OPENMP
#include <omp.h>
#endif
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "../chunked_parallel.hpp"
#include "conv2d_internal.hpp"
#include "../select_isa.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/kernels/conv2d.hpp"
#include "zotrain/kernels/gemm.hpp"

namespace zt::kernels {
namespace {

using std::ptrdiff_t;
using namespace conv2d_detail;

constexpr int kSlots = 8;
// The direct backward keeps lane-wise dW partials per slot (O·C·k·k·lanes floats), so it uses
// fewer slots: enough for the 2–4 cores of the target boards, and a scratch of ~1 MiB for conv2.
constexpr int kBwdSlots = 4;

// Backward: samples of a slot handled together, so the dW kernel's accumulators stay in
// registers over kGroup samples (the order of the sums does not depend on it).
constexpr int kGroup = 4;
// Largest per-slot dW partial (floats) for which backward takes the direct path.
constexpr ptrdiff_t kMaxDwPartial = ptrdiff_t{1} << 16;

typedef float VecF __attribute__((vector_size(kLanes * sizeof(float))));

inline VecF loadu(const float* p) {
  VecF v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void storeu(float* p, VecF v) { std::memcpy(p, &v, sizeof v); }
// x − (+0) == x exactly for every x (−0 and NaN included); GCC lowers it to one broadcast.
inline VecF broadcast(float x) { return x - VecF{}; }

// Keeps v in a register. Without it GCC re-loads an input vector as the memory operand of
// every FMA that uses it (x86), which makes the dW kernel load-bound.
inline void pin(VecF& v) {
#if defined(__x86_64__) || defined(__i386__)
  asm("" : "+v"(v));
#else
  (void)v;
#endif
}

// Stores the first n (1 ≤ n ≤ kLanes) lanes of v.
inline void store_n(float* p, VecF v, int n) {
  if (n == kLanes) {
    storeu(p, v);
    return;
  }
#if defined(__AVX512F__)
  _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1u), (__m512)v);
#else
  float t[kLanes];
  std::memcpy(t, &v, sizeof v);
  for (int i = 0; i < n; ++i) p[i] = t[i];
#endif
}

// dst[0, n) = src[0, n), reading nothing past src + n.
inline void copy_row(float* __restrict dst, const float* __restrict src, int n) {
  int i = 0;
  for (; i + kLanes <= n; i += kLanes) storeu(dst + i, loadu(src + i));
  if (i == n) return;
#if defined(__AVX512F__)
  const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1u);
  _mm512_mask_storeu_ps(dst + i, m, _mm512_maskz_loadu_ps(m, src + i));
#else
  for (; i < n; ++i) dst[i] = src[i];
#endif
}

// Fixed-order (pairwise tree) horizontal sum.
inline float hsum(VecF v) {
  float t[kLanes];
  std::memcpy(t, &v, sizeof v);
  for (int h = kLanes / 2; h >= 1; h /= 2)
    for (int i = 0; i < h; ++i) t[i] += t[i + h];
  return t[0];
}

inline int ceil_div(int a, int b) { return (a + b - 1) / b; }
inline ptrdiff_t round16(ptrdiff_t n) { return (n + 15) / 16 * 16; }

// Fraction of vector lanes a row of n values uses is at least one half.
inline bool lanes_well_used(int n) { return 2 * n >= ceil_div(n, kLanes) * kLanes; }

// Splits n into ceil(n / max_block) blocks of near-equal size; block i is [begin, begin+size).
inline void block_of(int n, int max_block, int i, int& begin, int& size) {
  const int nb = ceil_div(n, max_block), base = n / nb, rem = n % nb;
  begin = i * base + std::min(i, rem);
  size = base + (i < rem ? 1 : 0);
}

// ---- direct path ---------------------------------------------------------------------------

// A zero-padded copy of a [C, H, W] tensor: channel c, padded row r, column q lives at
// p[c·plane + r·row + q] and holds src[c, r − pad, q − pad] (zero outside the source).
struct Padded {
  int rows = 0, row = 0, pad = 0;
  ptrdiff_t plane = 0;
};

struct Direct {
  int c, h, w, o, k, pad, oh, ow;
  ptrdiff_t kk, ckk, in_sz, out_sz;
  Padded xp;   // x, padded by pad: rows OH + k − 1, read by the forward and dW kernels
  Padded dyp;  // dy, padded by k − 1 − pad: rows H + k − 1, read by the dx and dW kernels
  ptrdiff_t xp_sz, dyp_sz, dwv_sz, dbv_sz;  // floats per sample / slot, each rounded up to 16
  int group;  // backward: samples of a slot padded at once (the dW kernel runs over all)
  ptrdiff_t wp_sz;  // shared packed weights (forward: w; backward: flipped w for dx)
  ptrdiff_t fwd_slot_sz, bwd_slot_sz;
};

Direct direct_of(const Conv2dShape& s) {
  Direct d{};
  d.c = s.in_c, d.h = s.in_h, d.w = s.in_w, d.o = s.out_c, d.k = s.kernel, d.pad = s.pad;
  d.oh = s.out_h(), d.ow = s.out_w();
  d.kk = static_cast<ptrdiff_t>(d.k) * d.k;
  d.ckk = d.c * d.kk;
  d.in_sz = static_cast<ptrdiff_t>(d.c) * d.h * d.w;
  d.out_sz = static_cast<ptrdiff_t>(d.o) * d.oh * d.ow;
  const int nt_ow = ceil_div(d.ow, kLanes), nt_w = ceil_div(d.w, kLanes);
  // Rows are wide enough for the last vector of a row read at every kernel column.
  d.xp.pad = d.pad;
  d.xp.rows = d.oh + d.k - 1;
  d.xp.row = std::max(d.w + 2 * d.pad, nt_ow * kLanes + d.k - 1);
  d.xp.plane = static_cast<ptrdiff_t>(d.xp.rows) * d.xp.row;
  const int pd = d.k - 1 - d.pad;  // ≥ 0 on the direct path
  d.dyp.pad = pd;
  d.dyp.rows = d.h + d.k - 1;
  d.dyp.row = std::max({d.ow + 2 * pd, nt_w * kLanes + d.k - 1, pd + nt_ow * kLanes});
  d.dyp.plane = static_cast<ptrdiff_t>(d.dyp.rows) * d.dyp.row;
  d.xp_sz = round16(d.c * d.xp.plane);
  d.dyp_sz = round16(d.o * d.dyp.plane);
  d.dwv_sz = round16(d.o * d.ckk * kLanes);
  d.dbv_sz = round16(static_cast<ptrdiff_t>(d.o) * kLanes);
  d.wp_sz = round16(d.o * d.ckk);
  d.fwd_slot_sz = d.xp_sz;
  const int slots = std::max(1, std::min(s.batch, kBwdSlots));
  d.group = std::max(1, std::min(kGroup, ceil_div(s.batch, slots)));
  d.bwd_slot_sz = d.dwv_sz + d.dbv_sz + d.group * (d.xp_sz + d.dyp_sz);
  return d;
}

bool fwd_direct(const Conv2dShape& s) {
  return s.pad <= s.kernel - 1 && !(s.kernel == 1 && s.pad == 0) && lanes_well_used(s.out_w());
}

bool bwd_direct(const Conv2dShape& s) {
  return fwd_direct(s) && lanes_well_used(s.in_w) &&
         static_cast<ptrdiff_t>(s.out_c) * s.in_c * s.kernel * s.kernel * kLanes <= kMaxDwPartial;
}

// Zeroes a padded buffer (borders stay zero; interiors are overwritten per sample).
void zero_padded(float* p, ptrdiff_t n) { std::fill_n(p, n, 0.0f); }

// Writes the interior of a padded buffer from src[C, H, W].
void fill_padded(const Padded& pb, int c_n, int h, int w, const float* __restrict src,
                 float* __restrict p) {
  for (int c = 0; c < c_n; ++c)
    for (int r = 0; r < h; ++r)
      copy_row(p + c * pb.plane + static_cast<ptrdiff_t>(r + pb.pad) * pb.row + pb.pad,
               src + (static_cast<ptrdiff_t>(c) * h + r) * w, w);
}

// Register tile of the forward/dx kernel: ob output channels × rows output rows × nv vectors
// of one row, chosen from the output-channel count and the row width only.
struct FwdPlan {
  int nt;      // vectors per output row
  int nv;      // vectors per tile (≤ kFwdNv)
  int rows;    // output rows per tile: 2 when a row is one vector, else 1
  int max_ob;  // output channels per block (blocks as block_of(cout, max_ob))
};

FwdPlan fwd_plan(int ow) {
  FwdPlan p{};
  p.nt = ceil_div(ow, kLanes);
  p.nv = std::min(p.nt, kFwdNv);
  p.rows = p.nt == 1 ? 2 : 1;
  p.max_ob = std::max(1, std::min(kFwdOb, kFwdAcc / (p.nv * p.rows)));
  return p;
}

// Weights packed per block of output channels: block [o0, o0 + ob) holds
// wp[o0·ckk + t·ob + o] = wfn(o0 + o, t) for t in [0, ckk), so a tile finds the ob weights of
// one tap side by side.
template <class WFn>
void pack_weights(int cout, ptrdiff_t ckk, int max_ob, const WFn& wfn, float* __restrict wp) {
  const int nob = ceil_div(cout, max_ob);
  for (int bo = 0; bo < nob; ++bo) {
    int o0, ob;
    block_of(cout, max_ob, bo, o0, ob);
    float* dst = wp + o0 * ckk;
    for (ptrdiff_t t = 0; t < ckk; ++t)
      for (int o = 0; o < ob; ++o) dst[t * ob + o] = wfn(o0 + o, t);
  }
}

template <int OB, int NV, int R, int K>
void fwd_tile(const FwdArgs& a) {
  const int k = K > 0 ? K : a.k;
  const ptrdiff_t kk = static_cast<ptrdiff_t>(k) * k, y_os = static_cast<ptrdiff_t>(a.oh) * a.ow;
  const ptrdiff_t row = a.in_row;
  const int width = std::min(NV * kLanes, a.ow - a.x0);
  const float* __restrict w = a.w;
  for (int yy = a.y0; yy < a.y1; yy += R) {
    VecF acc[OB][R][NV];
#pragma GCC unroll 16
    for (int o = 0; o < OB; ++o) {
      const VecF b = a.bias != nullptr ? broadcast(a.bias[o]) : VecF{};
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int n = 0; n < NV; ++n) acc[o][r][n] = b;
    }
    const float* xrow = a.in + yy * row + a.x0;
    for (int c = 0; c < a.cin; ++c) {
      const float* xc = xrow + c * a.in_plane;
      const float* wc = w + c * kk * OB;
      for (int ky = 0; ky < k; ++ky) {
        const float* xr = xc + ky * row;
        const float* wr = wc + ky * k * OB;
#pragma GCC unroll 8
        for (int kx = 0; kx < k; ++kx) {
          VecF v[R][NV];
#pragma GCC unroll 4
          for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
            for (int n = 0; n < NV; ++n) v[r][n] = loadu(xr + r * row + kx + n * kLanes);
#pragma GCC unroll 16
          for (int o = 0; o < OB; ++o) {
            const VecF wv = broadcast(wr[kx * OB + o]);
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
              for (int n = 0; n < NV; ++n) acc[o][r][n] += wv * v[r][n];
          }
        }
      }
    }
#pragma GCC unroll 16
    for (int o = 0; o < OB; ++o)
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        float* yr = a.y + o * y_os + static_cast<ptrdiff_t>(yy + r) * a.ow + a.x0;
#pragma GCC unroll 4
        for (int n = 0; n < NV; ++n) store_n(yr + n * kLanes, acc[o][r][n], std::min(kLanes, width - n * kLanes));
      }
  }
}

// out[co, oh, ow] = bias[co] + Σ_{c,ky,kx} w[co, c, ky, kx] · in[c, y+ky, x+kx] for one sample;
// wp: the weights packed by pack_weights with fwd_plan(ow).max_ob.
void direct_conv(const Tiles& tiles, const float* in, const Padded& pb, int cin, int k,
                 const float* wp, const float* bias, float* out, int cout, int oh, int ow) {
  const FwdTileFn* table = k == 5 ? tiles.fwd5 : k == 3 ? tiles.fwd3 : tiles.fwd_any;
  const FwdPlan p = fwd_plan(ow);
  const ptrdiff_t ckk = static_cast<ptrdiff_t>(cin) * k * k;
  const int nob = ceil_div(cout, p.max_ob), ntile = ceil_div(p.nt, kFwdNv);
  const int y_split = oh - oh % p.rows;  // rows [0, y_split) p.rows at a time, then one by one
  for (int bo = 0; bo < nob; ++bo) {
    int o0, ob;
    block_of(cout, p.max_ob, bo, o0, ob);
    for (int bt = 0; bt < ntile; ++bt) {
      int t0, nv;
      block_of(p.nt, kFwdNv, bt, t0, nv);
      FwdArgs a{in, pb.plane, pb.row, cin, k, wp + o0 * ckk,
                bias != nullptr ? bias + o0 : nullptr,
                out + o0 * static_cast<ptrdiff_t>(oh) * ow, oh, ow, t0 * kLanes, 0, y_split};
      const int base = ((ob - 1) * kFwdNv + (nv - 1)) * 2;
      if (y_split > 0) table[base + p.rows - 1](a);
      if (y_split < oh) {
        a.y0 = y_split, a.y1 = oh;
        table[base](a);
      }
    }
  }
}

template <int OB, int KB>
void dw_tile(const DwArgs& a) {
  VecF acc[OB][KB];
#pragma GCC unroll 8
  for (int o = 0; o < OB; ++o)
#pragma GCC unroll 8
    for (int j = 0; j < KB; ++j)
      acc[o][j] = a.first ? VecF{} : loadu(a.dwv + o * a.dwv_os + j * kLanes);
  for (int smp = 0; smp < a.ns; ++smp)
  for (int yy = 0; yy < a.oh; ++yy) {
    const float* xr = a.x + smp * a.x_ss + static_cast<ptrdiff_t>(yy) * a.x_row;
    const float* gr = a.g + smp * a.g_ss + static_cast<ptrdiff_t>(yy) * a.g_row;
    for (int n = 0; n < a.nv; ++n) {
      VecF g[OB];
#pragma GCC unroll 8
      for (int o = 0; o < OB; ++o) g[o] = loadu(gr + o * a.g_plane + n * kLanes);
#pragma GCC unroll 8
      for (int j = 0; j < KB; ++j) {
        VecF v = loadu(xr + n * kLanes + j);
        pin(v);
#pragma GCC unroll 8
        for (int o = 0; o < OB; ++o) acc[o][j] += g[o] * v;
      }
    }
  }
#pragma GCC unroll 8
  for (int o = 0; o < OB; ++o)
#pragma GCC unroll 8
    for (int j = 0; j < KB; ++j) storeu(a.dwv + o * a.dwv_os + j * kLanes, acc[o][j]);
}

// The portable tiles as a tile set (conv2d_internal.hpp).
struct PortableTiles {
  template <int OB, int NV, int R, int K>
  static void fwd(const FwdArgs& a) {
    fwd_tile<OB, NV, R, K>(a);
  }
  template <int OB, int KB>
  static void dw(const DwArgs& a) {
    dw_tile<OB, KB>(a);
  }
};
constexpr Tiles kPortableTiles = tiles_of<PortableTiles>(&gemm_f32_portable);

// dW and db contributions of ns samples (padded copies d.xp_sz / d.dyp_sz apart), lane-wise:
// dwv[o,c,ky,kx][l] += Σ_{sample, y, x ≡ l} dy·x. Lanes past the row end read zeros of dy.
void direct_dw_db(const Tiles& tiles, const Direct& d, const float* xp, const float* dyp, int ns, float* dwv,
                  float* dbv, bool first) {
  const int nv = ceil_div(d.ow, kLanes);
  const float* g0 = dyp + static_cast<ptrdiff_t>(d.dyp.pad) * d.dyp.row + d.dyp.pad;
  if (dwv != nullptr) {
    const ptrdiff_t dwv_os = d.ckk * kLanes;
    const int nob = ceil_div(d.o, kDwOb), nkb = ceil_div(d.k, kDwKb);
    for (int bo = 0; bo < nob; ++bo) {
      int o0, ob;
      block_of(d.o, kDwOb, bo, o0, ob);
      for (int c = 0; c < d.c; ++c)
        for (int ky = 0; ky < d.k; ++ky)
          for (int bk = 0; bk < nkb; ++bk) {
            int kx0, kb;
            block_of(d.k, kDwKb, bk, kx0, kb);
            const DwArgs a{xp + c * d.xp.plane + static_cast<ptrdiff_t>(ky) * d.xp.row + kx0,
                           d.xp.row,
                           g0 + o0 * d.dyp.plane,
                           d.dyp.plane,
                           d.dyp.row,
                           d.oh,
                           nv,
                           ns,
                           d.xp_sz,
                           d.dyp_sz,
                           dwv + o0 * dwv_os + ((c * d.kk) + ky * d.k + kx0) * kLanes,
                           dwv_os,
                           first};
            tiles.dw[(ob - 1) * kDwKb + (kb - 1)](a);
          }
    }
  }
  if (dbv != nullptr) {
    for (int o = 0; o < d.o; ++o) {
      VecF acc = first ? VecF{} : loadu(dbv + o * kLanes);
      for (int smp = 0; smp < ns; ++smp)
        for (int yy = 0; yy < d.oh; ++yy) {
          const float* gr = g0 + smp * d.dyp_sz + o * d.dyp.plane + static_cast<ptrdiff_t>(yy) * d.dyp.row;
          for (int n = 0; n < nv; ++n) acc += loadu(gr + n * kLanes);
        }
      storeu(dbv + o * kLanes, acc);
    }
  }
}

// ---- im2col + GEMM path --------------------------------------------------------------------

struct Dims {
  int c, h, w, o, k, pad, oh, ow;
  ptrdiff_t ckk, ohw, in_sz, out_sz, col_sz, slot_sz;
  bool direct;  // 1x1 kernel without padding: x_b already is the col matrix
};

Dims dims_of(const Conv2dShape& s) {
  Dims d{};
  d.c = s.in_c, d.h = s.in_h, d.w = s.in_w, d.o = s.out_c, d.k = s.kernel, d.pad = s.pad;
  d.oh = s.out_h(), d.ow = s.out_w();
  d.ckk = static_cast<ptrdiff_t>(d.c) * d.k * d.k;
  d.ohw = static_cast<ptrdiff_t>(d.oh) * d.ow;
  d.in_sz = static_cast<ptrdiff_t>(d.c) * d.h * d.w;
  d.out_sz = d.o * d.ohw;
  d.direct = d.k == 1 && d.pad == 0;
  d.col_sz = d.direct ? 0 : d.ckk * d.ohw;
  d.slot_sz = d.col_sz + d.o * d.ckk + d.o;
  return d;
}

int slots_of(const Conv2dShape& s) { return std::min(s.batch, kSlots); }
int bwd_slots_of(const Conv2dShape& s) { return std::min(s.batch, kBwdSlots); }

void check_shape(const Conv2dShape& s) {
  ZT_CHECK(s.batch >= 0 && s.in_c > 0 && s.out_c > 0 && s.kernel > 0 && s.pad >= 0);
  ZT_CHECK(s.in_h > 0 && s.in_w > 0 && s.out_h() > 0 && s.out_w() > 0);
}

// Valid output-column range [lo, hi) for kernel column j: 0 ≤ ow + j − pad < W.
inline void col_range(const Dims& d, int j, int& lo, int& hi) {
  lo = std::max(0, d.pad - j);
  hi = std::min(d.ow, d.w + d.pad - j);
  if (hi < lo) hi = lo;
}

// col[C·k·k, OH·OW] from one sample x_b[C, H, W]. Rows are short (OW values), so plain loops
// beat memcpy/memset calls; loop distribution into those calls is disabled for this function.
__attribute__((optimize("no-tree-loop-distribute-patterns")))
void im2col(const Dims& d, const float* __restrict xb, float* __restrict col) {
  for (int c = 0; c < d.c; ++c)
    for (int i = 0; i < d.k; ++i)
      for (int j = 0; j < d.k; ++j) {
        float* row = col + ((static_cast<ptrdiff_t>(c) * d.k + i) * d.k + j) * d.ohw;
        int lo, hi;
        col_range(d, j, lo, hi);
        for (int oh = 0; oh < d.oh; ++oh) {
          float* out = row + static_cast<ptrdiff_t>(oh) * d.ow;
          const int ih = oh + i - d.pad;
          if (ih < 0 || ih >= d.h) {
            for (int ow = 0; ow < d.ow; ++ow) out[ow] = 0.0f;
            continue;
          }
          const float* src = xb + (static_cast<ptrdiff_t>(c) * d.h + ih) * d.w + (j - d.pad);
          for (int ow = 0; ow < lo; ++ow) out[ow] = 0.0f;
          for (int ow = lo; ow < hi; ++ow) out[ow] = src[ow];
          for (int ow = hi; ow < d.ow; ++ow) out[ow] = 0.0f;
        }
      }
}

// dx_b[C, H, W] = Σ of col entries that map to each input position (overwrites dx_b).
__attribute__((optimize("no-tree-loop-distribute-patterns")))
void col2im(const Dims& d, const float* __restrict col, float* __restrict dxb) {
  std::fill_n(dxb, d.in_sz, 0.0f);
  for (int c = 0; c < d.c; ++c)
    for (int i = 0; i < d.k; ++i)
      for (int j = 0; j < d.k; ++j) {
        const float* row = col + ((static_cast<ptrdiff_t>(c) * d.k + i) * d.k + j) * d.ohw;
        int lo, hi;
        col_range(d, j, lo, hi);
        for (int oh = 0; oh < d.oh; ++oh) {
          const int ih = oh + i - d.pad;
          if (ih < 0 || ih >= d.h) continue;
          const float* src = row + static_cast<ptrdiff_t>(oh) * d.ow;
          float* dst = dxb + (static_cast<ptrdiff_t>(c) * d.h + ih) * d.w + (j - d.pad);
          for (int ow = lo; ow < hi; ++ow) dst[ow] += src[ow];
        }
      }
}

bool go_parallel(int work_items) {
  return detail::go_parallel(static_cast<std::size_t>(work_items), 2);
}

// Runs body(i) for i in [0, n), in parallel when `par`; the iteration → result mapping is fixed.
template <class F>
void for_each(bool par, int n, const F& body) {
  if (!par) {
    for (int i = 0; i < n; ++i) body(i);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int i = 0; i < n; ++i) body(i);
}

void gemm_forward(const Tiles& tiles, const Conv2dShape& s, const float* x, const float* w,
                  const float* bias, float* y, float* scratch) {
  const Dims d = dims_of(s);
  const int slots = slots_of(s);
  ZT_CHECK(d.direct || scratch != nullptr);
  for_each(go_parallel(slots), slots, [&](int sl) {
    float* col = scratch != nullptr ? scratch + sl * d.slot_sz : nullptr;
    for (int b = sl; b < s.batch; b += slots) {
      const float* xb = x + b * d.in_sz;
      float* yb = y + b * d.out_sz;
      if (!d.direct) im2col(d, xb, col);
      if (bias != nullptr)
        for (int o = 0; o < d.o; ++o) std::fill_n(yb + o * d.ohw, d.ohw, bias[o]);
      tiles.gemm(false, false, d.o, static_cast<int>(d.ohw), static_cast<int>(d.ckk), w,
                 static_cast<int>(d.ckk), d.direct ? xb : col, static_cast<int>(d.ohw), yb,
                 static_cast<int>(d.ohw), bias != nullptr);
    }
  });
}

void gemm_backward(const Tiles& tiles, const Conv2dShape& s, const float* x, const float* w,
                   const float* dy, float* dx, float* dw, float* db, float* scratch) {
  const Dims d = dims_of(s);
  const int slots = slots_of(s);
  ZT_CHECK(scratch != nullptr);
  const int ckk = static_cast<int>(d.ckk), ohw = static_cast<int>(d.ohw);
  for_each(go_parallel(slots), slots, [&](int sl) {
    float* col = scratch + sl * d.slot_sz;
    float* dw_part = col + d.col_sz;         // [O, C·k·k]
    float* db_part = dw_part + d.o * d.ckk;  // [O]
    for (int b = sl; b < s.batch; b += slots) {
      const bool first = b == sl;
      const float* xb = x + b * d.in_sz;
      const float* dyb = dy + b * d.out_sz;
      if (dw != nullptr) {
        if (!d.direct) im2col(d, xb, col);
        tiles.gemm(false, true, d.o, ckk, ohw, dyb, ohw, d.direct ? xb : col, ohw, dw_part, ckk,
                   !first);
      }
      if (db != nullptr) {
        for (int o = 0; o < d.o; ++o) {
          const float* g = dyb + o * d.ohw;
          float acc = 0.0f;
          for (int p = 0; p < ohw; ++p) acc += g[p];
          db_part[o] = first ? acc : db_part[o] + acc;
        }
      }
      if (dx != nullptr) {
        float* dxb = dx + b * d.in_sz;
        if (d.direct) {
          tiles.gemm(true, false, ckk, ohw, d.o, w, ckk, dyb, ohw, dxb, ohw, false);
        } else {
          tiles.gemm(true, false, ckk, ohw, d.o, w, ckk, dyb, ohw, col, ohw, false);
          col2im(d, col, dxb);
        }
      }
    }
  });
  // Fixed-order reduction of the slot partials.
  if (dw != nullptr) {
    for (ptrdiff_t i = 0; i < d.o * d.ckk; ++i) {
      float acc = scratch[d.col_sz + i];
      for (int sl = 1; sl < slots; ++sl) acc += scratch[sl * d.slot_sz + d.col_sz + i];
      dw[i] += acc;
    }
  }
  if (db != nullptr) {
    for (int o = 0; o < d.o; ++o) {
      const ptrdiff_t off = d.col_sz + d.o * d.ckk + o;
      float acc = scratch[off];
      for (int sl = 1; sl < slots; ++sl) acc += scratch[sl * d.slot_sz + off];
      db[o] += acc;
    }
  }
}

// ---- direct path drivers -------------------------------------------------------------------

void direct_forward(const Tiles& tiles, const Conv2dShape& s, const float* x, const float* w,
                    const float* bias, float* y, float* scratch) {
  const Direct d = direct_of(s);
  const int slots = slots_of(s);
  ZT_CHECK(scratch != nullptr);
  const bool par = go_parallel(slots);
  float* wp = scratch;
  pack_weights(d.o, d.ckk, fwd_plan(d.ow).max_ob, [&](int o, ptrdiff_t t) { return w[o * d.ckk + t]; }, wp);
  // Serially one padded buffer serves every sample; in parallel, one per slot.
  for_each(par, par ? slots : 1, [&](int sl) {
    float* xp = scratch + d.wp_sz + sl * d.fwd_slot_sz;
    zero_padded(xp, d.xp_sz);
    for (int b = sl; b < s.batch; b += (par ? slots : 1)) {
      fill_padded(d.xp, d.c, d.h, d.w, x + b * d.in_sz, xp);
      direct_conv(tiles, xp, d.xp, d.c, d.k, wp, bias, y + b * d.out_sz, d.o, d.oh, d.ow);
    }
  });
}

void direct_backward(const Tiles& tiles, const Conv2dShape& s, const float* x, const float* w,
                     const float* dy, float* dx, float* dw, float* db,
                     float* scratch) {
  const Direct d = direct_of(s);
  const int slots = bwd_slots_of(s);
  ZT_CHECK(scratch != nullptr);
  const bool par = go_parallel(slots);
  // dx = conv(dy padded by k − 1 − pad, wt) with wt[c, o, ky, kx] = w[o, c, k−1−ky, k−1−kx].
  float* wt = scratch;
  float* slot0 = scratch + d.wp_sz;
  if (dx != nullptr) {
    const ptrdiff_t okk = d.o * d.kk;
    pack_weights(d.c, okk, fwd_plan(d.w).max_ob, [&](int c, ptrdiff_t t) {
      const ptrdiff_t o = t / d.kk, tap = t % d.kk;
      return w[o * d.ckk + c * d.kk + (d.kk - 1 - tap)];
    }, wt);
  }
  for_each(par, slots, [&](int sl) {
    float* dwv = slot0 + sl * d.bwd_slot_sz;  // [O, C, k, k, lanes]
    float* dbv = dwv + d.dwv_sz;               // [O, lanes]
    float* xp = dbv + d.dbv_sz;                // group × padded x
    float* dyp = xp + d.group * d.xp_sz;       // group × padded dy
    if (dw != nullptr) zero_padded(xp, d.group * d.xp_sz);
    zero_padded(dyp, d.group * d.dyp_sz);
    const int count = ceil_div(s.batch - sl, slots);  // samples sl, sl + slots, …
    for (int i0 = 0; i0 < count; i0 += d.group) {
      const int ns = std::min(d.group, count - i0);
      for (int j = 0; j < ns; ++j) {
        const int b = sl + (i0 + j) * slots;
        if (dw != nullptr) fill_padded(d.xp, d.c, d.h, d.w, x + b * d.in_sz, xp + j * d.xp_sz);
        fill_padded(d.dyp, d.o, d.oh, d.ow, dy + b * d.out_sz, dyp + j * d.dyp_sz);
      }
      direct_dw_db(tiles, d, xp, dyp, ns, dw != nullptr ? dwv : nullptr, db != nullptr ? dbv : nullptr, i0 == 0);
      if (dx != nullptr)
        for (int j = 0; j < ns; ++j)
          direct_conv(tiles, dyp + j * d.dyp_sz, d.dyp, d.o, d.k, wt, nullptr, dx + (sl + (i0 + j) * slots) * d.in_sz,
                      d.c, d.h, d.w);
    }
  });
  // Fixed-order reduction: slots lane-wise in slot order, then lanes by a fixed tree.
  const auto reduce = [&](ptrdiff_t off, ptrdiff_t e) {
    VecF v = loadu(slot0 + off + e * kLanes);
    for (int sl = 1; sl < slots; ++sl) v += loadu(slot0 + sl * d.bwd_slot_sz + off + e * kLanes);
    return hsum(v);
  };
  if (dw != nullptr) {
    const ptrdiff_t off = 0;
    const int n = static_cast<int>(d.o * d.ckk);
    for_each(par && n >= 1024, n, [&](int e) { dw[e] += reduce(off, e); });
  }
  if (db != nullptr) {
    const ptrdiff_t off = d.dwv_sz;
    for (int o = 0; o < d.o; ++o) db[o] += reduce(off, o);
  }
}

}  // namespace

namespace conv2d_detail {
bool forward_uses_direct(const Conv2dShape& s) { return fwd_direct(s); }
bool backward_uses_direct(const Conv2dShape& s) { return bwd_direct(s); }
int lanes() { return kLanes; }
}  // namespace conv2d_detail

std::size_t conv2d_scratch_floats(const Conv2dShape& s) {
  check_shape(s);
  const ptrdiff_t slots = slots_of(s);
  if (slots == 0) return 0;
  const ptrdiff_t gemm = slots * dims_of(s).slot_sz;
  ptrdiff_t fwd = gemm, bwd = gemm;
  if (fwd_direct(s)) fwd = direct_of(s).wp_sz + slots * direct_of(s).fwd_slot_sz;
  if (bwd_direct(s)) bwd = direct_of(s).wp_sz + bwd_slots_of(s) * direct_of(s).bwd_slot_sz;
  return static_cast<std::size_t>(std::max(fwd, bwd));
}

namespace conv2d_detail {

void forward(const Tiles& tiles, const Conv2dShape& s, const float* x, const float* w,
             const float* bias, float* y, float* scratch) {
  check_shape(s);
  if (s.batch == 0) return;
  if (fwd_direct(s))
    direct_forward(tiles, s, x, w, bias, y, scratch);
  else
    gemm_forward(tiles, s, x, w, bias, y, scratch);
}

void backward(const Tiles& tiles, const Conv2dShape& s, const float* x, const float* w,
              const float* dy, float* dx, float* dw, float* db, float* scratch) {
  check_shape(s);
  if (s.batch == 0) return;
  if (bwd_direct(s))
    direct_backward(tiles, s, x, w, dy, dx, dw, db, scratch);
  else
    gemm_backward(tiles, s, x, w, dy, dx, dw, db, scratch);
}

}  // namespace conv2d_detail

void conv2d_forward_f32_portable(const Conv2dShape& s, const float* x, const float* w,
                                 const float* bias, float* y, float* scratch) {
  conv2d_detail::forward(kPortableTiles, s, x, w, bias, y, scratch);
}

void conv2d_backward_f32_portable(const Conv2dShape& s, const float* x, const float* w,
                                  const float* dy, float* dx, float* dw, float* db,
                                  float* scratch) {
  conv2d_detail::backward(kPortableTiles, s, x, w, dy, dx, dw, db, scratch);
}

Conv2dForwardF32Fn select_conv2d_forward_f32(Isa isa) {
  return ZT_SELECT(isa, conv2d_forward_f32);
}

Conv2dBackwardF32Fn select_conv2d_backward_f32(Isa isa) {
  return ZT_SELECT(isa, conv2d_backward_f32);
}

}  // namespace zt::kernels
