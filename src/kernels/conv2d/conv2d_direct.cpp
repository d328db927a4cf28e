// The direct path of the conv2d drivers (conv2d.cpp has the overview): samples copied into
// zero-padded planes, forward and dx by the path's register tiles over output rows, dW and db
// lane-wise in per-slot vector partials reduced in a fixed order.
#include <algorithm>
#include <cstddef>

#include "conv2d_driver.hpp"
#include "zotrain/core/error.hpp"

namespace zt::kernels::conv2d_detail {
namespace {

// Backward: samples of a slot handled together, so the dW kernel's accumulators stay in
// registers over kGroup samples (the order of the sums does not depend on it).
constexpr int kGroup = 4;
// Largest per-slot dW partial (floats) for which backward takes the direct path.
constexpr ptrdiff_t kMaxDwPartial = ptrdiff_t{1} << 16;

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

}  // namespace

bool forward_uses_direct(const Conv2dShape& s) {
  return s.pad <= s.kernel - 1 && !(s.kernel == 1 && s.pad == 0) && lanes_well_used(s.out_w());
}

bool backward_uses_direct(const Conv2dShape& s) {
  return forward_uses_direct(s) && lanes_well_used(s.in_w) &&
         static_cast<ptrdiff_t>(s.out_c) * s.in_c * s.kernel * s.kernel * kLanes <= kMaxDwPartial;
}

namespace {

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

}  // namespace

ptrdiff_t direct_forward_scratch(const Conv2dShape& s) {
  const Direct d = direct_of(s);
  return d.wp_sz + slots_of(s) * d.fwd_slot_sz;
}

ptrdiff_t direct_backward_scratch(const Conv2dShape& s) {
  const Direct d = direct_of(s);
  return d.wp_sz + bwd_slots_of(s) * d.bwd_slot_sz;
}

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

}  // namespace zt::kernels::conv2d_detail
