// Internal to the conv2d drivers (conv2d.cpp: dispatch, scratch and the portable tiles;
// conv2d_direct.cpp: the direct path; conv2d_im2col.cpp: the im2col + GEMM path): the portable
// vector helpers (GCC vector extensions, kLanes wide), the batch slots and their threading,
// and the two paths' entry points. The NEON path reaches the drivers through
// conv2d_internal.hpp only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "../chunked_parallel.hpp"
#include "conv2d_internal.hpp"

namespace zt::kernels::conv2d_detail {

using std::ptrdiff_t;

inline constexpr int kSlots = 8;
// The direct backward keeps lane-wise dW partials per slot (O·C·k·k·lanes floats), so it uses
// fewer slots: enough for the 2–4 cores of the target boards, and a scratch of ~1 MiB for conv2.
inline constexpr int kBwdSlots = 4;

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

// Batch slots: slot s owns samples s, s + S, … (S = min(batch, kSlots), or kBwdSlots for the
// direct backward).
inline int slots_of(const Conv2dShape& s) { return std::min(s.batch, kSlots); }
inline int bwd_slots_of(const Conv2dShape& s) { return std::min(s.batch, kBwdSlots); }

inline bool go_parallel(int work_items) {
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

// The direct path (conv2d_direct.cpp; taken where forward_uses_direct / backward_uses_direct)
// and the im2col + GEMM path (conv2d_im2col.cpp), each with the scratch (floats) it needs.
ptrdiff_t direct_forward_scratch(const Conv2dShape& s);
ptrdiff_t direct_backward_scratch(const Conv2dShape& s);
void direct_forward(const Tiles& tiles, const Conv2dShape& s, const float* x, const float* w,
                    const float* bias, float* y, float* scratch);
void direct_backward(const Tiles& tiles, const Conv2dShape& s, const float* x, const float* w,
                     const float* dy, float* dx, float* dw, float* db, float* scratch);
ptrdiff_t gemm_scratch(const Conv2dShape& s);
void gemm_forward(const Tiles& tiles, const Conv2dShape& s, const float* x, const float* w,
                  const float* bias, float* y, float* scratch);
void gemm_backward(const Tiles& tiles, const Conv2dShape& s, const float* x, const float* w,
                   const float* dy, float* dx, float* dw, float* db, float* scratch);

}  // namespace zt::kernels::conv2d_detail
