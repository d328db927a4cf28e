// Portable 2-D convolution: per-sample im2col + the portable GEMM.
//   forward  y_b[O, OH·OW]   = W[O, C·k·k] · col_b[C·k·k, OH·OW] (+ bias)
//   backward dW_s[O, C·k·k] += dy_b · col_bᵀ,  db_s[O] += Σ dy_b,
//            dcol_b = Wᵀ · dy_b  → col2im → dx_b
// Work is split into kSlots fixed slots: slot s owns samples s, s+S, s+2S, … (S = min(B,
// kSlots)) and its own scratch (col buffer and dW/db partials). Slots run in parallel; the
// partials are then summed in slot order. Nothing depends on the thread count, so results
// are bit-identical for any number of threads.
#include <algorithm>
#include <cstddef>

#ifdef ZT_OPENMP
#include <omp.h>
#endif

#include "zotrain/core/error.hpp"
#include "zotrain/kernels/conv2d.hpp"
#include "zotrain/kernels/gemm.hpp"

namespace zt::kernels {
namespace {

constexpr int kSlots = 8;

struct Dims {
  int c, h, w, o, k, pad, oh, ow;
  std::ptrdiff_t ckk, ohw, in_sz, out_sz, col_sz, slot_sz;
  bool direct;  // 1x1 kernel without padding: x_b already is the col matrix
};

Dims dims_of(const Conv2dShape& s) {
  Dims d{};
  d.c = s.in_c, d.h = s.in_h, d.w = s.in_w, d.o = s.out_c, d.k = s.kernel, d.pad = s.pad;
  d.oh = s.out_h(), d.ow = s.out_w();
  d.ckk = static_cast<std::ptrdiff_t>(d.c) * d.k * d.k;
  d.ohw = static_cast<std::ptrdiff_t>(d.oh) * d.ow;
  d.in_sz = static_cast<std::ptrdiff_t>(d.c) * d.h * d.w;
  d.out_sz = d.o * d.ohw;
  d.direct = d.k == 1 && d.pad == 0;
  d.col_sz = d.direct ? 0 : d.ckk * d.ohw;
  d.slot_sz = d.col_sz + d.o * d.ckk + d.o;
  return d;
}

int slots_of(const Conv2dShape& s) { return std::min(s.batch, kSlots); }

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
        float* row = col + ((static_cast<std::ptrdiff_t>(c) * d.k + i) * d.k + j) * d.ohw;
        int lo, hi;
        col_range(d, j, lo, hi);
        for (int oh = 0; oh < d.oh; ++oh) {
          float* out = row + static_cast<std::ptrdiff_t>(oh) * d.ow;
          const int ih = oh + i - d.pad;
          if (ih < 0 || ih >= d.h) {
            for (int ow = 0; ow < d.ow; ++ow) out[ow] = 0.0f;
            continue;
          }
          const float* src = xb + (static_cast<std::ptrdiff_t>(c) * d.h + ih) * d.w + (j - d.pad);
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
        const float* row = col + ((static_cast<std::ptrdiff_t>(c) * d.k + i) * d.k + j) * d.ohw;
        int lo, hi;
        col_range(d, j, lo, hi);
        for (int oh = 0; oh < d.oh; ++oh) {
          const int ih = oh + i - d.pad;
          if (ih < 0 || ih >= d.h) continue;
          const float* src = row + static_cast<std::ptrdiff_t>(oh) * d.ow;
          float* dst = dxb + (static_cast<std::ptrdiff_t>(c) * d.h + ih) * d.w + (j - d.pad);
          for (int ow = lo; ow < hi; ++ow) dst[ow] += src[ow];
        }
      }
}

bool go_parallel(int slots) {
#ifdef ZT_OPENMP
  return slots > 1 && !omp_in_parallel() && omp_get_max_threads() > 1;
#else
  (void)slots;
  return false;
#endif
}

}  // namespace

std::size_t conv2d_scratch_floats(const Conv2dShape& s) {
  check_shape(s);
  return static_cast<std::size_t>(slots_of(s)) * static_cast<std::size_t>(dims_of(s).slot_sz);
}

void conv2d_forward_f32_portable(const Conv2dShape& s, const float* x, const float* w,
                                 const float* bias, float* y, float* scratch) {
  check_shape(s);
  const Dims d = dims_of(s);
  const int slots = slots_of(s);
  ZT_CHECK(slots == 0 || d.direct || scratch != nullptr);
  const bool par = go_parallel(slots);
  (void)par;
#pragma omp parallel for schedule(static) if (par)
  for (int sl = 0; sl < slots; ++sl) {
    float* col = scratch != nullptr ? scratch + sl * d.slot_sz : nullptr;
    for (int b = sl; b < s.batch; b += slots) {
      const float* xb = x + b * d.in_sz;
      float* yb = y + b * d.out_sz;
      if (!d.direct) im2col(d, xb, col);
      if (bias != nullptr)
        for (int o = 0; o < d.o; ++o) std::fill_n(yb + o * d.ohw, d.ohw, bias[o]);
      gemm_f32_portable(false, false, d.o, static_cast<int>(d.ohw), static_cast<int>(d.ckk), w,
                        static_cast<int>(d.ckk), d.direct ? xb : col, static_cast<int>(d.ohw), yb,
                        static_cast<int>(d.ohw), bias != nullptr);
    }
  }
}

void conv2d_backward_f32_portable(const Conv2dShape& s, const float* x, const float* w,
                                  const float* dy, float* dx, float* dw, float* db,
                                  float* scratch) {
  check_shape(s);
  const Dims d = dims_of(s);
  const int slots = slots_of(s);
  if (slots == 0) return;
  ZT_CHECK(scratch != nullptr);
  const int ckk = static_cast<int>(d.ckk), ohw = static_cast<int>(d.ohw);
  const bool par = go_parallel(slots);
  (void)par;
#pragma omp parallel for schedule(static) if (par)
  for (int sl = 0; sl < slots; ++sl) {
    float* col = scratch + sl * d.slot_sz;
    float* dw_part = col + d.col_sz;   // [O, C·k·k]
    float* db_part = dw_part + d.o * d.ckk;  // [O]
    for (int b = sl; b < s.batch; b += slots) {
      const bool first = b == sl;
      const float* xb = x + b * d.in_sz;
      const float* dyb = dy + b * d.out_sz;
      if (dw != nullptr) {
        if (!d.direct) im2col(d, xb, col);
        gemm_f32_portable(false, true, d.o, ckk, ohw, dyb, ohw, d.direct ? xb : col, ohw,
                          dw_part, ckk, !first);
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
          gemm_f32_portable(true, false, ckk, ohw, d.o, w, ckk, dyb, ohw, dxb, ohw, false);
        } else {
          gemm_f32_portable(true, false, ckk, ohw, d.o, w, ckk, dyb, ohw, col, ohw, false);
          col2im(d, col, dxb);
        }
      }
    }
  }
  // Fixed-order reduction of the slot partials.
  if (dw != nullptr) {
    for (std::ptrdiff_t i = 0; i < d.o * d.ckk; ++i) {
      float acc = scratch[d.col_sz + i];
      for (int sl = 1; sl < slots; ++sl) acc += scratch[sl * d.slot_sz + d.col_sz + i];
      dw[i] += acc;
    }
  }
  if (db != nullptr) {
    for (int o = 0; o < d.o; ++o) {
      const std::ptrdiff_t off = d.col_sz + d.o * d.ckk + o;
      float acc = scratch[off];
      for (int sl = 1; sl < slots; ++sl) acc += scratch[sl * d.slot_sz + off];
      db[o] += acc;
    }
  }
}

Conv2dForwardF32Fn select_conv2d_forward_f32(Isa isa) {
  return isa == Isa::kReference ? &conv2d_forward_f32_ref : &conv2d_forward_f32_portable;
}

Conv2dBackwardF32Fn select_conv2d_backward_f32(Isa isa) {
  return isa == Isa::kReference ? &conv2d_backward_f32_ref : &conv2d_backward_f32_portable;
}

}  // namespace zt::kernels
