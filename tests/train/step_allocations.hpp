// The check that a trainer's step allocates nothing once its buffers are planned (every buffer is
// reserved in the arena plan before the first step; docs/design.md §7): shared by the FP32 cases
// (step_allocations_test.cpp) and the int8 ones.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <string>

#include "../alloc_counter.hpp"

namespace zt::test {

// Runs step(k) for k = 0 (the warm-up: thread pools and the like start here) and then counts the
// heap allocations of steps 1..counted; expects none, naming `what` and the bytes.
template <class StepFn>
void expect_steps_allocate_nothing(const std::string& what, StepFn step, int counted = 3) {
  step(0);
  std::size_t count = 0, bytes = 0;
  {
    CountAllocations counter;
    for (int k = 1; k <= counted; ++k) step(k);
    count = counter.count();
    bytes = counter.bytes();
  }
  EXPECT_EQ(count, 0u) << what << ": " << count << " heap allocations (" << bytes
                       << " bytes) in " << counted << " steps after the first";
}

}  // namespace zt::test
