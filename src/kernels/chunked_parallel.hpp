// Internal to the kernels: the one threading decision of every kernel family, and the threading
// of elementwise kernels. [0, n) is run serially when n is small (or inside a parallel region),
// else as fixed `chunk`-sized pieces over OpenMP threads; elementwise work, so the split never
// changes a result. Integer-only (also compiled with -mgeneral-regs-only).
#pragma once

#include <cstddef>

#ifdef ZT_OPENMP
#include <omp.h>
#endif

namespace zt::kernels::detail {

// Whether a kernel should fork threads for `work` units of work (elements, multiply-adds or
// items; the caller's threshold `min_work` is in the same units): only at the outermost level —
// inside any parallel region, active or not, the caller owns the parallelism and the kernel
// runs serially — and only when there is more than one thread to use.
inline bool go_parallel(std::size_t work, std::size_t min_work) {
#ifdef ZT_OPENMP
  return work >= min_work && omp_get_level() == 0 && omp_get_max_threads() > 1;
#else
  (void)work;
  (void)min_work;
  return false;
#endif
}

// Calls fn(begin, length) for the pieces of [0, n).
template <class Fn>
void for_each_chunk(std::size_t n, std::size_t min_elements, std::size_t chunk, Fn fn) {
  if (!go_parallel(n, min_elements)) {
    fn(std::size_t{0}, n);
    return;
  }
  const long chunks = static_cast<long>((n + chunk - 1) / chunk);
#pragma omp parallel for schedule(static)
  for (long c = 0; c < chunks; ++c) {
    const std::size_t b = static_cast<std::size_t>(c) * chunk;
    fn(b, n - b < chunk ? n - b : chunk);
  }
}

// A kernel family's elementwise threading policy in one line: fork above kMin elements, in
// pieces of kChunk (e.g. `using Chunks = detail::Chunking<std::size_t{1} << 16, 4096>;`).
template <std::size_t kMinElements, std::size_t kChunkElements>
struct Chunking {
  static constexpr std::size_t kMin = kMinElements;
  static constexpr std::size_t kChunk = kChunkElements;
  static bool parallel(std::size_t n) { return go_parallel(n, kMin); }
  template <class Fn>
  static void for_each(std::size_t n, Fn fn) {
    for_each_chunk(n, kMin, kChunk, fn);
  }
};

// Calls fn(i) for i in [0, count), over OpenMP threads when the items hold at least
// min_elements elements in all (and we are not inside a parallel region).
template <class Fn>
void for_each_item(int count, std::size_t elements, std::size_t min_elements, Fn fn) {
  if (!go_parallel(elements, min_elements)) {
    for (int i = 0; i < count; ++i) fn(i);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int i = 0; i < count; ++i) fn(i);
}

}  // namespace zt::kernels::detail
