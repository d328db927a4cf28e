// The im2col + GEMM path of the conv2d drivers (conv2d.cpp has the overview): per sample
// y_b = W · col_b, dW += dy_b · col_bᵀ, dx_b = col2im(Wᵀ · dy_b) with the path's GEMM, dW and
// db in per-slot partials summed in slot order.
#include <algorithm>
#include <cstddef>

#include "conv2d_driver.hpp"
#include "zotrain/core/error.hpp"

namespace zt::kernels::conv2d_detail {
namespace {

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

}  // namespace

ptrdiff_t gemm_scratch(const Conv2dShape& s) { return slots_of(s) * dims_of(s).slot_sz; }

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

}  // namespace zt::kernels::conv2d_detail
