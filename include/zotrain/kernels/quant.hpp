// Int8 (NITI) numerics, docs/design.md §5: a tensor is int8 values in [−127, 127] with one shared
// power-of-two exponent e (real value = v · 2^e). Everything here is integer arithmetic only
// (the files are also compiled with -mgeneral-regs-only in the aarch64 test build).
//
// Rounding by a right shift s works on the magnitude m = |x| and reapplies the sign
// (sign-magnitude, never floor); s = 0 returns x unchanged. q = m >> s, r = m & (2^s − 1).
//   RoundShift: (m + 2^(s−1)) >> s                — nearest, ties away from zero
//   PstoShift:  h = s/2, P = r >> h, R = r & (2^h − 1), R ← 2R if s is odd; q + (P > R)
//   StoShift:   q + (r > (u & (2^s − 1)))          — u a random 32-bit word
// These helpers do not clamp; callers clamp to ±127 where the result is stored as int8.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "zotrain/kernels/isa.hpp"

namespace zt::kernels {

inline constexpr int kInt8Max = 127;
inline constexpr int kInt8Bits = 7;  // magnitude bits of an int8 value

// bitlen(m) = 32 − clz(m), 0 for m = 0.
constexpr int bitlen(std::uint32_t m) { return m == 0 ? 0 : 32 - std::countl_zero(m); }

constexpr std::uint32_t magnitude(std::int32_t x) {
  return x < 0 ? 0u - static_cast<std::uint32_t>(x) : static_cast<std::uint32_t>(x);
}
constexpr std::int32_t with_sign(std::int32_t x, std::uint32_t m) {
  return x < 0 ? -static_cast<std::int32_t>(m) : static_cast<std::int32_t>(m);
}
constexpr std::int8_t clamp_s8(std::int64_t v) {
  return static_cast<std::int8_t>(v > kInt8Max ? kInt8Max : (v < -kInt8Max ? -kInt8Max : v));
}

constexpr std::int32_t round_shift(std::int32_t x, int s) {
  if (s <= 0) return x;
  const std::uint64_t m = magnitude(x);
  return with_sign(x, static_cast<std::uint32_t>((m + (std::uint64_t{1} << (s - 1))) >> s));
}

// clamp_s8(RoundShift(v, s)) for |v| < 2^62, 0 ≤ s < 63, without a branch: the sign as a mask
// (0 or −1), so that loops over it vectorise.
constexpr std::int8_t round_shift_clamp_s8(std::int64_t v, int s) {
  const std::int64_t neg = v >> 63;
  const std::uint64_t half = s > 0 ? std::uint64_t{1} << (s - 1) : 0;
  std::int64_t m = static_cast<std::int64_t>((static_cast<std::uint64_t>((v ^ neg) - neg) + half) >> s);
  m = m < kInt8Max ? m : kInt8Max;
  return static_cast<std::int8_t>((m ^ neg) - neg);
}

constexpr std::int32_t psto_shift(std::int32_t x, int s) {
  if (s <= 0) return x;
  const std::uint32_t m = magnitude(x);
  const std::uint32_t q = s >= 32 ? 0u : m >> s;
  const std::uint32_t r = s >= 32 ? m : m & ((1u << s) - 1u);
  const int h = s / 2;
  const std::uint32_t p = r >> h;
  std::uint32_t low = r & ((1u << h) - 1u);
  if (s & 1) low <<= 1;
  return with_sign(x, q + (p > low ? 1u : 0u));
}

constexpr std::int32_t sto_shift(std::int32_t x, int s, std::uint32_t u) {
  if (s <= 0) return x;
  const std::uint32_t m = magnitude(x);
  const std::uint32_t mask = s >= 32 ? 0xffffffffu : (1u << s) - 1u;
  const std::uint32_t q = s >= 32 ? 0u : m >> s;
  return with_sign(x, q + ((m & mask) > (u & mask) ? 1u : 0u));
}

// max |x[i]| over the whole tensor (unsigned, so |INT32_MIN| is representable); 0 for n = 0.
std::uint32_t max_abs_s32(const std::int32_t* x, std::size_t n);

// NITI requantisation (docs/design.md §5.1) of a whole int32 tensor [n]: s = max(0, bitlen(max|x|)
// − 7), y[i] = clamp(RoundShift(x[i], s), ±127). Returns s (the caller adds it to the exponent).
using RequantizeS32S8Fn = int (*)(const std::int32_t* x, std::size_t n, std::int8_t* y);
int requantize_s32_s8_ref(const std::int32_t* x, std::size_t n, std::int8_t* y);
int requantize_s32_s8_portable(const std::int32_t* x, std::size_t n, std::int8_t* y);
int requantize_s32_s8_neon(const std::int32_t* x, std::size_t n, std::int8_t* y);  // ARM builds
RequantizeS32S8Fn select_requantize_s32_s8(Isa isa);  // kNeon, kNeonDot → _neon where built
// The same with the maximum given instead of found: max_abs ≥ max|x[i]|, e.g. a batch's maximum
// over the rows every rank of a data-parallel run holds (zt::Ranks); s = max(0,
// bitlen(max_abs) − 7). requantize_s32_s8 is this with max_abs = max_abs_s32(x, n).
using RequantizeMaxS32S8Fn = int (*)(const std::int32_t* x, std::size_t n, std::uint32_t max_abs,
                                     std::int8_t* y);
int requantize_max_s32_s8_ref(const std::int32_t* x, std::size_t n, std::uint32_t max_abs,
                              std::int8_t* y);
int requantize_max_s32_s8_portable(const std::int32_t* x, std::size_t n, std::uint32_t max_abs,
                                   std::int8_t* y);
int requantize_max_s32_s8_neon(const std::int32_t* x, std::size_t n, std::uint32_t max_abs,
                               std::int8_t* y);  // ARM builds
RequantizeMaxS32S8Fn select_requantize_max_s32_s8(Isa isa);

// b-bit weight update (docs/design.md §5.5) of int8 weights w [n] by an int32 gradient g [n]:
// b = bitlen(max|g|); if b = 0 nothing changes; s = b − bits; ĝ = g if s < 1, else
// PstoShift(g, s); w = clamp(w − ĝ, ±127) computed in wider arithmetic. Returns s (≤ 0 when g
// was used as is; 0 also when g = 0).
using UpdateWeightsS8Fn = int (*)(std::int8_t* w, const std::int32_t* g, std::size_t n, int bits);
int update_weights_s8_ref(std::int8_t* w, const std::int32_t* g, std::size_t n, int bits);
int update_weights_s8_portable(std::int8_t* w, const std::int32_t* g, std::size_t n, int bits);
int update_weights_s8_neon(std::int8_t* w, const std::int32_t* g, std::size_t n, int bits);  // ARM builds
UpdateWeightsS8Fn select_update_weights_s8(Isa isa);  // kNeon, kNeonDot → _neon where built

// Input quantisation (docs/design.md §5.6): a pixel byte p becomes table[p], one exponent for
// every pixel, so no statistic of the batch is needed.
struct PixelQuant {
  std::array<std::int8_t, 256> table{};
  int exponent = 0;
};
// p >> 1 with exponent −7: values 0..127 (int8.input shift).
PixelQuant pixel_quant_shift();
// NITI's input: the normalised pixel v = (p/255 − mean)/std, mean and std in units of 10^−4,
// scaled so the largest |v| over p ∈ 0..255, R, fills 7 bits: exponent b − 7 with b = ⌈log2 R⌉,
// value round(v · 2^(7 − b)) (ties away from zero) clamped to ±127 (int8.input normalised).
// Exact integer arithmetic; std_e4 > 0.
PixelQuant pixel_quant_normalised(std::int32_t mean_e4, std::int32_t std_e4);
void quantize_pixels_s8(const std::uint8_t* p, std::size_t n, const PixelQuant& q, std::int8_t* x);

}  // namespace zt::kernels
