// LeNet-5 as docs/design.md §2: conv1 1→6 5x5 pad 2, ReLU, pool, conv2 6→16 5x5 pad 2, ReLU, pool,
// (flatten view) fc1 784→120, ReLU, fc2 120→84, ReLU, fc3 84→10. 107,786 FP32 parameters.
#pragma once

#include <memory>

#include "zotrain/kernels/isa.hpp"
#include "zotrain/nn/model.hpp"

namespace zt::nn {

std::unique_ptr<Model> make_lenet5(kernels::Isa isa);

}  // namespace zt::nn
