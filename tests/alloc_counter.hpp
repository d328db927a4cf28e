// Counts heap allocations (global operator new, every thread) while a CountAllocations is alive:
// the check that a training step allocates nothing once its buffers are planned. The counting
// operator new is defined once for the test binary (tests/core/alloc_counter.cpp).
#pragma once

#include <cstddef>

namespace zt::test {

class CountAllocations {
 public:
  CountAllocations();
  ~CountAllocations();
  CountAllocations(const CountAllocations&) = delete;
  CountAllocations& operator=(const CountAllocations&) = delete;
  // False where the counting operator new cannot be installed (ThreadSanitizer's runtime defines
  // its own): nothing is counted there, and the tests that rely on it skip.
  static bool available();
  // Allocations and bytes since construction.
  std::size_t count() const;
  std::size_t bytes() const;
};

}  // namespace zt::test
