// The check that a trainer's step allocates nothing once its buffers are planned (every buffer is
// reserved in the arena plan before the first step; docs/design.md §7): shared by the FP32 cases
// (step_allocations_test.cpp) and the int8 ones.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <string>

#include "../alloc_counter.hpp"
#include "zotrain/kernels/isa.hpp"
#include "zotrain/nn/lenet5.hpp"
#include "zotrain/nn/model.hpp"
#include "zotrain/nn/pointnet.hpp"

namespace zt::test {

// The networks the cases train: LeNet-5, or PointNet on kPoints points.
enum class Net { kLeNet5, kPointNet };
inline constexpr int kPoints = 64;
inline std::unique_ptr<nn::Model> make_net(Net net, kernels::Isa isa) {
  return net == Net::kLeNet5 ? nn::make_lenet5(isa) : nn::make_pointnet(kPoints, isa);
}

// Runs step(k) for k = 0 (the warm-up: thread pools and the like start here) and then counts the
// heap allocations of steps 1..counted; expects none, naming `what` and the bytes.
template <class StepFn>
void expect_steps_allocate_nothing(const std::string& what, StepFn step, int counted = 3) {
  if (!CountAllocations::available()) GTEST_SKIP() << "no counting operator new in this build";
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
