// Internals of the portable conv2d path, exposed for tests: which algorithm a shape takes.
#pragma once

#include "zotrain/kernels/conv2d.hpp"

namespace zt::kernels::conv2d_detail {

// Forward: direct convolution vectorised along output rows (true) or im2col + GEMM (false).
bool forward_uses_direct(const Conv2dShape& s);
// Backward: direct dx / dw / db (true) or im2col + GEMM + col2im (false).
bool backward_uses_direct(const Conv2dShape& s);
// Vector width (floats) the portable path was compiled for.
int lanes();

}  // namespace zt::kernels::conv2d_detail
