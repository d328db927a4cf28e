// Internal to the quant family: the requantisation and weight-update drivers (the exact maximum,
// the shift, the elementwise spans over OpenMP chunks), shared by the portable and NEON paths,
// which differ only in their span functions, passed as template arguments (so they inline):
//   max_abs_span(x, n) = max |x[i]| as uint32; round_shift_span(x, n, s, y);
//   subtract_span(w, g, n); psto_subtract_span(w, g, n, s) — quant.cpp states their math.
// The maximum is an exact reduction and the rest elementwise: results do not depend on the
// thread count. Integer arithmetic only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "../chunked_parallel.hpp"
#include "zotrain/kernels/quant.hpp"

namespace zt::kernels::quant_detail {

// Elementwise threading (../chunked_parallel.hpp): fork from this many elements, in pieces.
using Chunks = detail::Chunking<std::size_t{1} << 16, 4096>;

// max |x[i]| over [0, n), chunk maxima combined over threads.
template <auto kMaxAbsSpan>
std::uint32_t max_abs(const std::int32_t* x, std::size_t n) {
  if (!Chunks::parallel(n)) return kMaxAbsSpan(x, n);
  std::uint32_t mx = 0;
  const long chunks = static_cast<long>((n + Chunks::kChunk - 1) / Chunks::kChunk);
#pragma omp parallel for schedule(static) reduction(max : mx)
  for (long c = 0; c < chunks; ++c) {
    const std::size_t b = static_cast<std::size_t>(c) * Chunks::kChunk;
    mx = std::max(mx, kMaxAbsSpan(x + b, n - b < Chunks::kChunk ? n - b : Chunks::kChunk));
  }
  return mx;
}

// requantize_max_s32_s8 (quant.hpp).
template <auto kRoundShiftSpan>
int requantize_max(const std::int32_t* x, std::size_t n, std::uint32_t mx, std::int8_t* y) {
  const int b = bitlen(mx);
  const int s = b > kInt8Bits ? b - kInt8Bits : 0;
  Chunks::for_each(n, [&](std::size_t b0, std::size_t len) { kRoundShiftSpan(x + b0, len, s, y + b0); });
  return s;
}

// requantize_s32_s8 (quant.hpp).
template <auto kMaxAbsSpan, auto kRoundShiftSpan>
int requantize(const std::int32_t* x, std::size_t n, std::int8_t* y) {
  return requantize_max<kRoundShiftSpan>(x, n, max_abs<kMaxAbsSpan>(x, n), y);
}

// update_weights_s8 (quant.hpp).
template <auto kMaxAbsSpan, auto kSubtractSpan, auto kPstoSubtractSpan>
int update_weights(std::int8_t* w, const std::int32_t* g, std::size_t n, int bits) {
  const int b = bitlen(max_abs<kMaxAbsSpan>(g, n));
  if (b == 0) return 0;
  const int s = b - bits;
  if (s < 1) {
    Chunks::for_each(n, [&](std::size_t b0, std::size_t len) { kSubtractSpan(w + b0, g + b0, len); });
  } else if (s <= 31) {
    Chunks::for_each(n, [&](std::size_t b0, std::size_t len) { kPstoSubtractSpan(w + b0, g + b0, len, s); });
  } else {
    return update_weights_s8_ref(w, g, n, bits);  // s = 32: |g| reached 2^31 with bits = 0
  }
  return s;
}

}  // namespace zt::kernels::quant_detail
