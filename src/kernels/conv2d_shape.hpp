// Internal to the kernels: the shape check every 2-D convolution kernel (conv2d and conv2d_s8,
// every path) makes on entry, a zt::Error naming the failed condition. Integer-only.
#pragma once

#include "zotrain/core/error.hpp"
#include "zotrain/kernels/conv2d.hpp"

namespace zt::kernels::detail {

inline void check_conv2d_shape(const Conv2dShape& s) {
  ZT_CHECK(s.batch >= 0 && s.in_c > 0 && s.out_c > 0 && s.kernel > 0 && s.pad >= 0);
  ZT_CHECK(s.in_h > 0 && s.in_w > 0 && s.out_h() > 0 && s.out_w() > 0);
}

}  // namespace zt::kernels::detail
