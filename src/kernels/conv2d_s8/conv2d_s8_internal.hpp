// Internal to the int8 convolution (conv2d_s8.cpp: the checks, scratch and paths;
// conv2d_s8_canvas.cpp: forward and input gradient; conv2d_s8_dw.cpp: weight gradient): the
// scratch layout helpers and the two algorithms' entry points. Integer-only.
#pragma once

#include <cstddef>
#include <cstdint>

#ifdef ZT_OPENMP
#include <omp.h>
#endif

#include "../conv2d_shape.hpp"
#include "../linear_s8/gemm_s8_internal.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/kernels/conv2d.hpp"

namespace zt::kernels::s8 {

// Scratch: a 64-byte aligned base, regions rounded up to 64 bytes; one slot per thread.
inline constexpr ptrdiff_t kAlign = 64;
inline ptrdiff_t align_up(ptrdiff_t v) { return round_up(v, kAlign); }

inline std::uint8_t* aligned_base(void* scratch) {
  const auto p = reinterpret_cast<std::uintptr_t>(scratch);
  return reinterpret_cast<std::uint8_t*>((p + kAlign - 1) / kAlign * kAlign);
}

// The scratch slot of the calling thread inside with_team's body.
inline int thread_slot(bool team) {
#ifdef ZT_OPENMP
  return team ? omp_get_thread_num() : 0;
#else
  (void)team;
  return 0;
#endif
}

// dst[r·ld_dst + i] = src[r·ld_src + i] for r < rows, i < n.
template <class T>
inline void copy_rows(T* __restrict dst, ptrdiff_t ld_dst, const T* __restrict src, ptrdiff_t ld_src, int rows, int n) {
  for (int r = 0; r < rows; ++r) copy_row(dst + r * ld_dst, src + r * ld_src, n);
}

// Forward (dx = false: in = x [B, C, H, W], out = y) or input gradient (dx = true: in = e
// [B, O, OH, OW], out = dx) by canvas correlation, for a checked shape with batch > 0.
void canvas_conv(const MicroKernel& micro, const Conv2dShape& s, bool dx, const std::int8_t* in,
                 const std::int8_t* w, std::int32_t* out, void* scratch);
// Bytes canvas_conv needs with `threads` slots (without the alignment room).
ptrdiff_t canvas_scratch(const Conv2dShape& s, bool dx, int threads);
// Whether canvas_conv reduces over channel quads (else row/column quads): the cheaper one.
bool channel_quads(const Conv2dShape& s, bool dx);

// Weight gradient g[O, C, k, k] = Σ_b e ⋆ x for a checked shape with batch > 0; base: the
// aligned scratch.
void weight_gradient(const MicroKernel& micro, const Conv2dShape& s, const std::int8_t* x,
                     const std::int8_t* e, std::int32_t* g, std::uint8_t* base);
ptrdiff_t weight_gradient_scratch(const Conv2dShape& s, int threads);
// Whether weight_gradient takes the dot form (else the lane form): the fewer vector products.
bool dw_dot(const Conv2dShape& s);

}  // namespace zt::kernels::s8
