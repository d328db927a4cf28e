// Reference int8 requantisation and b-bit weight update: the plain loops, the definition of
// correct (docs/design.md §5.1, 5.5). Integer arithmetic only.
#include <cstddef>
#include <cstdint>

#include "zotrain/kernels/quant.hpp"

namespace zt::kernels {

int requantize_max_s32_s8_ref(const std::int32_t* x, std::size_t n, std::uint32_t max_abs,
                              std::int8_t* y) {
  const int b = bitlen(max_abs);
  const int s = b > kInt8Bits ? b - kInt8Bits : 0;
  for (std::size_t i = 0; i < n; ++i) y[i] = clamp_s8(round_shift(x[i], s));
  return s;
}

int requantize_s32_s8_ref(const std::int32_t* x, std::size_t n, std::int8_t* y) {
  std::uint32_t mx = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t m = magnitude(x[i]);
    if (m > mx) mx = m;
  }
  return requantize_max_s32_s8_ref(x, n, mx, y);
}

int update_weights_s8_ref(std::int8_t* w, const std::int32_t* g, std::size_t n, int bits) {
  std::uint32_t mx = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t m = magnitude(g[i]);
    if (m > mx) mx = m;
  }
  const int b = bitlen(mx);
  if (b == 0) return 0;
  const int s = b - bits;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t gh = s < 1 ? g[i] : psto_shift(g[i], s);
    w[i] = clamp_s8(static_cast<std::int64_t>(w[i]) - gh);
  }
  return s;
}

}  // namespace zt::kernels
