// Internal to the kernels: the threading of elementwise kernels. [0, n) is run serially when n
// is small (or inside a parallel region), else as fixed `chunk`-sized pieces over OpenMP
// threads; elementwise work, so the split never changes a result. Integer-only (also compiled
// with -mgeneral-regs-only).
#pragma once

#include <cstddef>

#ifdef ZT_OPENMP
#include <omp.h>
#endif

namespace zt::kernels::detail {

inline bool go_parallel(std::size_t n, std::size_t min_elements) {
#ifdef ZT_OPENMP
  return n >= min_elements && !omp_in_parallel() && omp_get_max_threads() > 1;
#else
  (void)n;
  (void)min_elements;
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
