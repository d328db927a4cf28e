// Integer-only (compiled with -mgeneral-regs-only in the aarch64 check build).
#include "zotrain/kernels/batchnorm_s8.hpp"

#include <bit>

#include "zotrain/core/error.hpp"
#include "zotrain/kernels/quant.hpp"

namespace zt::kernels {
namespace {

using bn_detail::bitlen64;
using bn_detail::magnitude64;
using bn_detail::round_shift64;

// Rounded quotient (ties away from zero) of x by d > 0.
constexpr std::int64_t round_div(std::int64_t x, std::int64_t d) {
  const std::uint64_t q = (magnitude64(x) + static_cast<std::uint64_t>(d) / 2) /
                          static_cast<std::uint64_t>(d);
  return x < 0 ? -static_cast<std::int64_t>(q) : static_cast<std::int64_t>(q);
}

// ⌊√v⌋ bit by bit.
std::uint64_t isqrt(std::uint64_t v) {
  std::uint64_t r = 0, bit = std::uint64_t{1} << 62;
  while (bit > v) bit >>= 2;
  while (bit != 0) {
    if (v >= r + bit) {
      v -= r + bit;
      r = (r >> 1) + bit;
    } else {
      r >>= 1;
    }
    bit >>= 2;
  }
  return r;
}

constexpr std::int64_t kInt32Max = 2147483647;

}  // namespace

bool batchnorm_sums_fit(std::size_t rows, int inner) {
  const int b = bitlen64(static_cast<std::uint64_t>(rows)) +
                2 * bitlen64(std::uint64_t{127} * 127 * static_cast<std::uint64_t>(inner));
  return b <= 62;
}

void batchnorm_accumulate(std::size_t rows, int C, const std::int32_t* y, std::int64_t* s1,
                          std::int64_t* s2) {
  for (std::size_t r = 0; r < rows; ++r) {
    const std::int32_t* row = y + r * static_cast<std::size_t>(C);
    for (int c = 0; c < C; ++c) {
      const std::int64_t v = row[c];
      s1[c] += v;
      s2[c] += v * v;
    }
  }
}

void batchnorm_finish(std::size_t rows, int C, const std::int64_t* s1, const std::int64_t* s2,
                      ChannelNorm* norm) {
  ZT_CHECK(rows > 0);
  const std::int64_t m = static_cast<std::int64_t>(rows);
  for (int c = 0; c < C; ++c) {
    const std::int64_t mu = round_div(s1[c], m);
    // Σ(y − μ)² = Σy² − 2μΣy + mμ², exact for the integer μ.
    const std::int64_t ss = s2[c] - 2 * mu * s1[c] + m * mu * mu;
    std::uint64_t sigma = isqrt(static_cast<std::uint64_t>(ss > 0 ? ss : 0) /
                                static_cast<std::uint64_t>(m));
    if (sigma == 0) sigma = 1;
    const std::uint64_t one = std::uint64_t{1} << (kNormFracBits + kNormRecipBits);
    norm[c].mean = mu;
    norm[c].recip = static_cast<std::int64_t>((one + sigma / 2) / sigma);
  }
}

namespace {
// x̂ · 2^F of one element, RoundShift without a branch (the sign as a mask), so that the loop in
// batchnorm_apply_rows vectorises.
inline std::int32_t apply_one(std::int32_t y, std::int64_t mean, std::int64_t recip) {
  constexpr std::uint64_t kHalf = std::uint64_t{1} << (kNormRecipBits - 1);
  const std::int64_t v = (static_cast<std::int64_t>(y) - mean) * recip;
  const std::int64_t neg = v >> 63;
  std::int64_t m = static_cast<std::int64_t>(
      (static_cast<std::uint64_t>((v ^ neg) - neg) + kHalf) >> kNormRecipBits);
  m = m < kInt32Max ? m : kInt32Max;
  return static_cast<std::int32_t>((m ^ neg) - neg);
}
}  // namespace

std::int32_t batchnorm_apply(std::int32_t y, const ChannelNorm& n) { return apply_one(y, n.mean, n.recip); }

void batchnorm_forward_s32(std::size_t rows, int C, std::int32_t* acc, ChannelNorm* norm,
                           std::int64_t* sums) {
  std::int64_t* s1 = sums;
  std::int64_t* s2 = sums + C;
  for (int c = 0; c < 2 * C; ++c) sums[c] = 0;
  batchnorm_accumulate(rows, C, acc, s1, s2);
  batchnorm_finish(rows, C, s1, s2, norm);
  batchnorm_apply_rows(rows, C, acc, norm);
}

void batchnorm_apply_rows(std::size_t rows, int C, std::int32_t* acc, const ChannelNorm* norm) {
  for (std::size_t r = 0; r < rows; ++r) {
    std::int32_t* row = acc + r * static_cast<std::size_t>(C);
    for (int c = 0; c < C; ++c) row[c] = apply_one(row[c], norm[c].mean, norm[c].recip);
  }
}

void batchnorm_extremes(std::size_t rows, int C, const std::int32_t* y, std::int32_t* lo,
                        std::int32_t* hi) {
  for (std::size_t r = 0; r < rows; ++r) {
    const std::int32_t* row = y + r * static_cast<std::size_t>(C);
    for (int c = 0; c < C; ++c) {
      lo[c] = row[c] < lo[c] ? row[c] : lo[c];
      hi[c] = row[c] > hi[c] ? row[c] : hi[c];
    }
  }
}

BatchNormBackward::BatchNormBackward(std::size_t rows, int C, int xhat_exp,
                                     const ChannelNorm* norm, const std::int64_t* sums,
                                     std::int64_t* coef)
    : C_(static_cast<std::size_t>(C)), coef_(coef) {
  ZT_CHECK(rows > 0);
  const int k = -2 * xhat_exp;
  ZT_CHECK_MSG(k >= -8 && k <= 2 * (kNormFracBits + 1), "batchnorm_backward_s8: x̂ exponent out of range");
  std::uint64_t rmax = 0;
  for (int c = 0; c < C; ++c) rmax = magnitude64(norm[c].recip) > rmax ? magnitude64(norm[c].recip) : rmax;
  const int rs = bitlen64(rmax) > 12 ? bitlen64(rmax) - 12 : 0;
  // T · rb = rb·rows·2^k · e − rb·Σ(e·x̂) · x̂ − rb·Σe·2^k (k ≥ 0), with 2^k moved onto the x̂ term
  // for k < 0 (T = u − v · 2^(−k)).
  const std::int64_t up = std::int64_t{1} << (k >= 0 ? k : 0);
  const std::int64_t down = std::int64_t{1} << (k >= 0 ? 0 : -k);
  const auto n = static_cast<std::int64_t>(rows);
  for (int c = 0; c < C; ++c) {
    const std::int64_t rb = round_shift64(norm[c].recip, rs);
    const auto i = static_cast<std::size_t>(c);
    coef_[i] = rb * n * up;
    coef_[C_ + i] = -rb * sums[C + c] * down;
    coef_[2 * C_ + i] = -rb * sums[c] * up;
  }
}

void batchnorm_backward_s8(std::size_t rows, int C, const std::int8_t* xhat, int xhat_exp,
                           std::int8_t* e, const ChannelNorm* norm, std::int64_t* sums) {
  std::int64_t* a = sums;      // Σ e
  std::int64_t* b = sums + C;  // Σ e · x̂
  for (int c = 0; c < 2 * C; ++c) sums[c] = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t o = r * static_cast<std::size_t>(C);
    for (int c = 0; c < C; ++c) {
      a[c] += e[o + static_cast<std::size_t>(c)];
      b[c] += static_cast<std::int64_t>(e[o + static_cast<std::size_t>(c)]) * xhat[o + static_cast<std::size_t>(c)];
    }
  }
  const BatchNormBackward g(rows, C, xhat_exp, norm, sums, sums + 2 * C);
  const auto n = static_cast<std::size_t>(C);
  std::uint64_t mx = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const std::uint64_t m = g.row_largest(e + r * n, xhat + r * n);
    mx = m > mx ? m : mx;
  }
  const int s = BatchNormBackward::shift(mx);
  for (std::size_t r = 0; r < rows; ++r) g.row_errors(e + r * n, xhat + r * n, s, e + r * n);
}

}  // namespace zt::kernels
