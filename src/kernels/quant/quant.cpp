// Portable int8 requantisation, weight update and input quantisation, and their dispatch.
// The same sign-magnitude arithmetic as the reference (quant.hpp helpers), written branch-free
// in 32-bit lanes so GCC vectorises it at -O3. The maximum is an exact reduction and every
// other step is elementwise, so results are bit-identical to the reference for any thread count.
// Integer arithmetic only (also built with -mgeneral-regs-only).
#include <algorithm>
#include <cstdlib>
#include <cstddef>
#include <cstdint>

#include "quant_driver.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/kernels/quant.hpp"
#include "../select_isa.hpp"

namespace zt::kernels {
namespace {

// All-ones when x < 0, else 0; |x| = (x ^ sign) − sign and back again (mod 2^32).
inline std::uint32_t sign_mask(std::int32_t x) { return static_cast<std::uint32_t>(x >> 31); }
inline std::uint32_t abs_u32(std::int32_t x, std::uint32_t sm) {
  return (static_cast<std::uint32_t>(x) ^ sm) - sm;
}
inline std::int32_t apply_sign(std::uint32_t m, std::uint32_t sm) {
  return static_cast<std::int32_t>((m ^ sm) - sm);
}

std::uint32_t max_abs_span(const std::int32_t* x, std::size_t n) {
  std::uint32_t mx = 0;
  for (std::size_t i = 0; i < n; ++i) mx = std::max(mx, abs_u32(x[i], sign_mask(x[i])));
  return mx;
}

// y = clamp(RoundShift(x, s), ±127) for 0 ≤ s ≤ 25 (the largest requantisation shift).
void round_shift_span(const std::int32_t* x, std::size_t n, int s, std::int8_t* y) {
  const std::uint32_t half = s > 0 ? std::uint32_t{1} << (s - 1) : 0u;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t sm = sign_mask(x[i]);
    // m ≤ 2^31 and half ≤ 2^24, so the sum cannot wrap.
    const std::uint32_t q = std::min((abs_u32(x[i], sm) + half) >> s, std::uint32_t{kInt8Max});
    y[i] = static_cast<std::int8_t>(apply_sign(q, sm));
  }
}

// w = clamp(w − g, ±127). g is first clamped to ±255: with |w| ≤ 128 that cannot change the
// clamped result, and it keeps the arithmetic in 32 bits.
void subtract_span(std::int8_t* w, const std::int32_t* g, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const std::int32_t gc = std::clamp(g[i], -255, 255);
    w[i] = static_cast<std::int8_t>(std::clamp(w[i] - gc, -kInt8Max, kInt8Max));
  }
}

// w = clamp(w − PstoShift(g, s), ±127) for 1 ≤ s ≤ 31.
void psto_subtract_span(std::int8_t* w, const std::int32_t* g, std::size_t n, int s) {
  const int h = s / 2;
  const std::uint32_t rmask = (std::uint32_t{1} << s) - 1u;
  const std::uint32_t lmask = (std::uint32_t{1} << h) - 1u;
  const int odd = s & 1;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t sm = sign_mask(g[i]);
    const std::uint32_t m = abs_u32(g[i], sm);
    const std::uint32_t r = m & rmask;
    const std::uint32_t up = (r >> h) > ((r & lmask) << odd) ? 1u : 0u;
    // q + up ≤ 2^30 + 1; clamping the magnitude to 255 cannot change the clamped result.
    const std::uint32_t q = std::min((m >> s) + up, 255u);
    const std::int32_t gh = apply_sign(q, sm);
    w[i] = static_cast<std::int8_t>(std::clamp(w[i] - gh, -kInt8Max, kInt8Max));
  }
}

}  // namespace

std::uint32_t max_abs_s32(const std::int32_t* x, std::size_t n) {
  return quant_detail::max_abs<max_abs_span>(x, n);
}

int requantize_s32_s8_portable(const std::int32_t* x, std::size_t n, std::int8_t* y) {
  return quant_detail::requantize<max_abs_span, round_shift_span>(x, n, y);
}

int requantize_max_s32_s8_portable(const std::int32_t* x, std::size_t n, std::uint32_t max_abs,
                                   std::int8_t* y) {
  return quant_detail::requantize_max<round_shift_span>(x, n, max_abs, y);
}

int update_weights_s8_portable(std::int8_t* w, const std::int32_t* g, std::size_t n, int bits) {
  return quant_detail::update_weights<max_abs_span, subtract_span, psto_subtract_span>(w, g, n, bits);
}

PixelQuant pixel_quant_shift() {
  PixelQuant q;
  for (int p = 0; p < 256; ++p) q.table[static_cast<std::size_t>(p)] = static_cast<std::int8_t>(p >> 1);
  q.exponent = -7;
  return q;
}

PixelQuant pixel_quant_normalised(std::int32_t mean_e4, std::int32_t std_e4) {
  ZT_CHECK(std_e4 >= 1 && std_e4 <= 1000000 && mean_e4 >= -10000 && mean_e4 <= 10000);
  // v(p) = (10^4·p − 255·mean) / (255·std); R = top / std with top = max(|mean|, |10^4 − mean|).
  const std::int64_t top = std::max(std::abs(std::int64_t{mean_e4}), std::abs(10000 - std::int64_t{mean_e4}));
  const std::int64_t sd = std_e4;
  int b = 0;                                  // b = ⌈log2 R⌉, the smallest b with R ≤ 2^b
  while (top > (sd << b)) ++b;                // R > 2^b
  while (b <= 0 && (top << (1 - b)) <= sd) --b;  // R ≤ 2^(b−1) (b ≥ 1 is minimal already)
  const int k = kInt8Bits - b;                // value = v · 2^k, k in [−8, 15] here
  PixelQuant q;
  q.exponent = -k;
  for (int p = 0; p < 256; ++p) {
    std::int64_t num = 10000 * std::int64_t{p} - 255 * std::int64_t{mean_e4};
    std::int64_t den = 255 * sd;
    if (k >= 0) num *= std::int64_t{1} << k; else den *= std::int64_t{1} << -k;
    const std::int64_t m = std::min<std::int64_t>((2 * std::abs(num) + den) / (2 * den), kInt8Max);
    q.table[static_cast<std::size_t>(p)] = static_cast<std::int8_t>(num < 0 ? -m : m);
  }
  return q;
}

void quantize_pixels_s8(const std::uint8_t* p, std::size_t n, const PixelQuant& q, std::int8_t* x) {
  for (std::size_t i = 0; i < n; ++i) x[i] = q.table[p[i]];
}

ZT_DEFINE_SELECT(RequantizeS32S8Fn, requantize_s32_s8)
ZT_DEFINE_SELECT(RequantizeMaxS32S8Fn, requantize_max_s32_s8)
ZT_DEFINE_SELECT(UpdateWeightsS8Fn, update_weights_s8)

}  // namespace zt::kernels
