// Integer-only (compiled with -mgeneral-regs-only in the aarch64 check build).
#include "zotrain/train/int8_point_stack.hpp"

#include <algorithm>
#include <climits>
#include <optional>

#include "zotrain/core/error.hpp"
#include "zotrain/kernels/batchnorm_s8.hpp"
#include "zotrain/kernels/quant.hpp"

namespace zt::train {
namespace {

// y = clamp_s8(round_shift(x, shift)) elementwise, in a loop that vectorises: the streamed point
// layers requantise every chunk (outputs and input errors) with the tensor's one shift.
void round_shift_s8(const std::int32_t* x, std::size_t n, int shift, std::int8_t* y) {
  for (std::size_t i = 0; i < n; ++i) y[i] = kernels::round_shift_clamp_s8(x[i], shift);
}

// The weight gradient of a streamed product is summed over its chunks in int64 (a chunk's int32
// sum is exact: at most kTailMaxRows rows) and saturated once, as the whole-batch kernel does.
void saturate_grad(const std::int64_t* total, std::size_t n, std::int32_t* grad) {
  for (std::size_t i = 0; i < n; ++i)
    grad[i] = static_cast<std::int32_t>(std::clamp<std::int64_t>(total[i], INT32_MIN, INT32_MAX));
}

// A per-point layer's points N, input and output widths K, C, and the rows n · N of n samples.
struct PointDims {
  std::size_t N, K, C, rows;
};
PointDims point_dims(const nn::Int8Layer& l, int n) {
  const auto N = static_cast<std::size_t>(l.in.dims.at(0));
  return {N, static_cast<std::size_t>(l.in.dims.at(1)), static_cast<std::size_t>(l.out.dims.at(1)),
          static_cast<std::size_t>(n) * N};
}

}  // namespace

Int8PointStackStreamer::Int8PointStackStreamer(nn::Int8Net& net, const Int8Plan& plan)
    : net_(net), plan_(plan) {}

const std::int8_t* Int8PointStackStreamer::act(int i) const {
  return i < 0 ? input_ : plan_.output(i);
}

const std::int8_t* Int8PointStackStreamer::input_rows(int i, std::size_t r0, std::size_t nr) {
  const std::size_t K = static_cast<std::size_t>(net_.layer(i).in.dims.back());
  if (i == 0 || !plan_.relu_on_read[static_cast<std::size_t>(i - 1)]) return act(i - 1) + r0 * K;
  const std::int8_t* x = act(i - 2) + r0 * K;  // the ReLU's input
  std::int8_t* y = plan_.relu_chunk();
  for (std::size_t k = 0; k < nr * K; ++k) y[k] = x[k] > 0 ? x[k] : std::int8_t{0};
  return y;
}

int Int8PointStackStreamer::forward_tail(int n, int ex) {
  const int tail = plan_.tail;
  const nn::Int8Layer& l = net_.layer(tail);
  const PointDims dims = point_dims(l, n);
  const std::size_t N = dims.N, K = dims.K, C = dims.C, rows = dims.rows;
  std::int32_t* acc = plan_.acc();
  std::int32_t* mx = plan_.tail_max();
  std::uint32_t maxabs = 0;
  // Integer BatchNorm (docs/design.md §5.8): per channel Σy, Σy² and the extremes of y.
  std::int64_t* sums = plan_.tail_norm_sums();    // [2C] when l.norm
  std::int32_t* ext = plan_.tail_norm_extremes();  // [2C]: min, max
  if (l.norm) {
    ZT_CHECK_MSG(kernels::batchnorm_sums_fit(rows, static_cast<int>(K)),
                 "int8 BatchNorm: batch × points too large for its int64 sums");
    std::fill(sums, sums + 2 * C, std::int64_t{0});
    std::fill(ext, ext + C, INT32_MAX);
    std::fill(ext + C, ext + 2 * C, INT32_MIN);
  }
  for (std::size_t r0 = 0; r0 < rows; r0 += plan_.tail_rows) {
    const std::size_t nr = std::min(plan_.tail_rows, rows - r0);
    net_.point_product(tail, nr, input_rows(tail, r0, nr), acc);
    if (l.norm) {
      kernels::batchnorm_accumulate(nr, static_cast<int>(C), acc, sums, sums + C);
      kernels::batchnorm_extremes(nr, static_cast<int>(C), acc, ext, ext + C);
    }
    for (std::size_t r = r0; r < r0 + nr; ++r) {  // the pool of y (of x̂ below) per sample
      const std::int32_t* a = acc + (r - r0) * C;
      std::int32_t* m = mx + (r / N) * C;
      if (r % N == 0) {
        std::copy(a, a + C, m);
      } else {
        for (std::size_t c = 0; c < C; ++c) m[c] = a[c] > m[c] ? a[c] : m[c];
      }
      if (!l.norm)
        for (std::size_t c = 0; c < C; ++c) {
          const std::uint32_t mag = kernels::magnitude(a[c]);
          maxabs = mag > maxabs ? mag : maxabs;
        }
    }
  }
  int base = ex + l.exponent;
  if (l.norm) {
    // x̂ is monotone non-decreasing in y, so each channel's largest |x̂| is at its extremes and
    // the pool of x̂ is x̂ of the pool: the same bits as normalising the whole tensor.
    kernels::ChannelNorm* nrm = l.norm_state.data();
    kernels::batchnorm_finish(rows, static_cast<int>(C), sums, sums + C, nrm);
    maxabs = 0;
    for (std::size_t c = 0; c < C; ++c) {
      const std::uint32_t lo = kernels::magnitude(kernels::batchnorm_apply(ext[c], nrm[c]));
      const std::uint32_t hi = kernels::magnitude(kernels::batchnorm_apply(ext[C + c], nrm[c]));
      maxabs = std::max({maxabs, lo, hi});
    }
    for (std::size_t i = 0; i < static_cast<std::size_t>(n) * C; ++i)
      mx[i] = kernels::batchnorm_apply(mx[i], nrm[i % C]);
    base = -kernels::kNormFracBits;
  }
  // requantize_s32_s8's shift for the whole tensor, then ReLU of each pooled value.
  const int b = kernels::bitlen(maxabs);
  const int shift = b > kernels::kInt8Bits ? b - kernels::kInt8Bits : 0;
  std::int8_t* pooled = plan_.output(tail + 2);
  round_shift_s8(mx, static_cast<std::size_t>(n) * C, shift, pooled);
  for (std::size_t i = 0; i < static_cast<std::size_t>(n) * C; ++i) pooled[i] = pooled[i] > 0 ? pooled[i] : 0;
  if (l.norm) l.norm_exp = base + shift;
  tail_shift_ = shift;
  return base + shift;
}

int Int8PointStackStreamer::forward_points(int i, int n, int ex) {
  const nn::Int8Layer& l = net_.layer(i);
  const PointDims dims = point_dims(l, n);
  const std::size_t K = dims.K, C = dims.C, rows = dims.rows;
  const std::size_t step = plan_.chunk_rows[static_cast<std::size_t>(i)];
  std::int8_t* y = plan_.output(i);
  std::int32_t* acc = plan_.acc();
  std::int64_t* sums = plan_.tail_norm_sums();
  std::int32_t* ext = plan_.tail_norm_extremes();  // min [C], max [C]
  kernels::ChannelNorm* nrm = l.norm ? l.norm_state.data() : nullptr;
  if (l.norm) {
    ZT_CHECK_MSG(kernels::batchnorm_sums_fit(rows, static_cast<int>(K)),
                 "int8 BatchNorm: batch × points too large for its int64 sums");
    std::fill(sums, sums + 2 * C, std::int64_t{0});
  }
  // Pass 1: the statistics and extremes (BatchNorm) or the largest magnitude.
  std::uint32_t maxabs = 0;
  if (l.norm) {
    std::fill(ext, ext + C, INT32_MAX);
    std::fill(ext + C, ext + 2 * C, INT32_MIN);
  }
  for (std::size_t r0 = 0; r0 < rows; r0 += step) {
    const std::size_t nr = std::min(step, rows - r0);
    net_.point_product(i, nr, input_rows(i, r0, nr), acc);
    if (l.norm) {
      kernels::batchnorm_accumulate(nr, static_cast<int>(C), acc, sums, sums + C);
      kernels::batchnorm_extremes(nr, static_cast<int>(C), acc, ext, ext + C);
    } else {
      for (std::size_t k = 0; k < nr * C; ++k) {
        const std::uint32_t m = kernels::magnitude(acc[k]);
        maxabs = m > maxabs ? m : maxabs;
      }
    }
  }
  int base = ex + l.exponent;
  if (l.norm) {  // x̂ is monotone in y: its largest |x̂| is at a channel's extremes
    kernels::batchnorm_finish(rows, static_cast<int>(C), sums, sums + C, nrm);
    for (std::size_t c = 0; c < C; ++c)
      maxabs = std::max({maxabs, kernels::magnitude(kernels::batchnorm_apply(ext[c], nrm[c])),
                         kernels::magnitude(kernels::batchnorm_apply(ext[C + c], nrm[c]))});
    base = -kernels::kNormFracBits;
  }
  const int b = kernels::bitlen(maxabs);
  const int shift = b > kernels::kInt8Bits ? b - kernels::kInt8Bits : 0;
  // Pass 2: each chunk again, normalised and requantised with the tensor's shift.
  for (std::size_t r0 = 0; r0 < rows; r0 += step)
    point_rows(i, r0, std::min(step, rows - r0), shift, acc, y + r0 * C);
  if (l.norm) l.norm_exp = base + shift;
  return base + shift;
}

void Int8PointStackStreamer::point_rows(int i, std::size_t r0, std::size_t nr, int shift,
                             std::int32_t* prod, std::int8_t* out) {
  const nn::Int8Layer& l = net_.layer(i);
  const std::size_t C = static_cast<std::size_t>(l.out.dims.at(1));
  net_.point_product(i, nr, input_rows(i, r0, nr), prod);
  if (l.norm) kernels::batchnorm_apply_rows(nr, static_cast<int>(C), prod, l.norm_state.data());
  round_shift_s8(prod, nr * C, shift, out);
}

void Int8PointStackStreamer::backward_tail(int n, const std::int8_t* e_pool, std::int8_t* e_in,
                                           int b_bp) {
  const int tail = plan_.tail;
  const nn::Int8Layer& l = net_.layer(tail);
  const PointDims dims = point_dims(l, n);
  const std::size_t N = dims.N, K = dims.K, C = dims.C, rows = dims.rows;
  const std::int8_t* pooled = act(tail + 2);
  std::int8_t* y = plan_.tail_chunk_output();
  std::int8_t* e = plan_.tail_chunk_error();
  // Per (sample, channel): the point whose ReLU output the pool took (its first maximum), −1
  // until found. Where the pooled value is 0, ReLU's backward zeroes the error at any point.
  std::int32_t* first = plan_.tail_max();
  std::fill(first, first + static_cast<std::size_t>(n) * C, -1);
  // The error of the product's output at row r = (sample, point), channel c: the pool's error
  // at its point, through ReLU. bc0 = sample · C, pt = point.
  auto err_at = [&](std::size_t bc0, std::int32_t pt, std::size_t c) -> std::int8_t {
    return first[bc0 + c] == pt ? e_pool[bc0 + c] : std::int8_t{0};
  };
  // Pass 1: find the points; with BatchNorm also the largest |dy| for the requantisation.
  std::optional<kernels::BatchNormBackward> bn;
  std::uint64_t largest = 0;
  if (l.norm) {
    std::int64_t* sums = plan_.tail_norm_sums();  // Σe, Σe·x̂: only the pooled points count
    std::fill(sums, sums + 2 * C, std::int64_t{0});
    for (std::size_t bc = 0; bc < static_cast<std::size_t>(n) * C; ++bc)
      if (pooled[bc] > 0) {
        sums[bc % C] += e_pool[bc];
        sums[C + bc % C] += static_cast<std::int64_t>(e_pool[bc]) * pooled[bc];
      }
    bn.emplace(rows, static_cast<int>(C), l.norm_exp, l.norm_state.data(), sums,
               plan_.tail_norm_coef());
  }
  for (std::size_t r0 = 0; r0 < rows; r0 += plan_.tail_rows) {
    const std::size_t nr = std::min(plan_.tail_rows, rows - r0);
    point_rows(tail, r0, nr, tail_shift_, plan_.tail_chunk_product(), y);
    for (std::size_t r = r0; r < r0 + nr; ++r) {
      const std::size_t bc0 = (r / N) * C;
      const auto pt = static_cast<std::int32_t>(r % N);
      const std::int8_t* yr = y + (r - r0) * C;
      for (std::size_t c = 0; c < C; ++c) {
        const std::size_t bc = bc0 + c;
        if (first[bc] < 0 && pooled[bc] > 0 && yr[c] == pooled[bc]) first[bc] = pt;
      }
      if (bn) {  // the row's error of x̂ into e's row (free until pass 2), then its largest |dy|
        for (std::size_t c = 0; c < C; ++c) e[c] = err_at(bc0, pt, c);
        const std::uint64_t m = bn->row_largest(e, yr);
        largest = m > largest ? m : largest;
      }
    }
  }
  const int s = kernels::BatchNormBackward::shift(largest);
  // Rows [r0, r0 + nr) of the error of the product into e (with BatchNorm x̂ is formed again).
  auto chunk_error = [&](std::size_t r0, std::size_t nr) {
    if (bn) point_rows(tail, r0, nr, tail_shift_, plan_.tail_chunk_product(), y);
    for (std::size_t r = r0; r < r0 + nr; ++r) {
      const std::size_t bc0 = (r / N) * C;
      const auto pt = static_cast<std::int32_t>(r % N);
      std::int8_t* er = e + (r - r0) * C;
      const std::int8_t* yr = y + (r - r0) * C;
      for (std::size_t c = 0; c < C; ++c) er[c] = err_at(bc0, pt, c);
      if (bn) bn->row_errors(er, yr, s, er);
    }
  };
  // Pass 2: each chunk's error of the product, its input error rows and weight gradient. The
  // input error is kept whole in int32, or (deep) only its largest magnitude is.
  std::int32_t* acc = plan_.acc();
  std::int32_t* grad = plan_.grad();
  std::int64_t* total = plan_.grad_sum();
  std::fill(total, total + l.weight_count, std::int64_t{0});
  std::uint32_t maxabs = 0;
  for (std::size_t r0 = 0; r0 < rows; r0 += plan_.tail_rows) {
    const std::size_t nr = std::min(plan_.tail_rows, rows - r0);
    chunk_error(r0, nr);
    if (e_in != nullptr && !plan_.deep) net_.point_backward_input(tail, nr, e, acc + r0 * K);
    if (e_in != nullptr && plan_.deep) {
      net_.point_backward_input(tail, nr, e, acc);
      for (std::size_t k = 0; k < nr * K; ++k) maxabs = std::max(maxabs, kernels::magnitude(acc[k]));
    }
    net_.point_backward_weights(tail, nr, e, input_rows(tail, r0, nr), grad);
    for (std::size_t i = 0; i < l.weight_count; ++i) total[i] += grad[i];
  }
  if (e_in != nullptr && !plan_.deep) net_.requantize(acc, rows * K, e_in);
  if (e_in != nullptr && plan_.deep) {  // pass 3: the input error again, requantised
    const int b = kernels::bitlen(maxabs);
    const int shift = b > kernels::kInt8Bits ? b - kernels::kInt8Bits : 0;
    for (std::size_t r0 = 0; r0 < rows; r0 += plan_.tail_rows) {
      const std::size_t nr = std::min(plan_.tail_rows, rows - r0);
      chunk_error(r0, nr);
      net_.point_backward_input(tail, nr, e, acc);
      round_shift_s8(acc, nr * K, shift, e_in + r0 * K);
    }
  }
  saturate_grad(total, l.weight_count, grad);
  net_.update(tail, grad, b_bp);
}

void Int8PointStackStreamer::backward_points(int i, int n, std::int8_t* e_out, std::int8_t* e_in,
                                             int b_bp) {
  const nn::Int8Layer& l = net_.layer(i);
  const std::size_t K = static_cast<std::size_t>(l.in.dims.at(1));
  const std::size_t C = static_cast<std::size_t>(l.out.dims.at(1));
  const std::size_t rows = static_cast<std::size_t>(n) * static_cast<std::size_t>(l.in.dims.at(0));
  const std::size_t step = plan_.chunk_rows[static_cast<std::size_t>(i)];
  if (l.norm) net_.point_backward_norm(i, rows, plan_.output(i), e_out);  // in place, as backward()
  std::int32_t* acc = plan_.acc();
  if (e_in != nullptr) {  // two passes: the largest magnitude, then the requantised rows
    std::uint32_t maxabs = 0;
    for (std::size_t r0 = 0; r0 < rows; r0 += step) {
      const std::size_t nr = std::min(step, rows - r0);
      net_.point_backward_input(i, nr, e_out + r0 * C, acc);
      for (std::size_t k = 0; k < nr * K; ++k) maxabs = std::max(maxabs, kernels::magnitude(acc[k]));
    }
    const int b = kernels::bitlen(maxabs);
    const int shift = b > kernels::kInt8Bits ? b - kernels::kInt8Bits : 0;
    for (std::size_t r0 = 0; r0 < rows; r0 += step) {
      const std::size_t nr = std::min(step, rows - r0);
      net_.point_backward_input(i, nr, e_out + r0 * C, acc);
      round_shift_s8(acc, nr * K, shift, e_in + r0 * K);
    }
  }
  std::int32_t* grad = plan_.grad();
  std::int64_t* total = plan_.grad_sum();
  std::fill(total, total + l.weight_count, std::int64_t{0});
  for (std::size_t r0 = 0; r0 < rows; r0 += step) {
    const std::size_t nr = std::min(step, rows - r0);
    net_.point_backward_weights(i, nr, e_out + r0 * C, input_rows(i, r0, nr), grad);
    for (std::size_t k = 0; k < l.weight_count; ++k) total[k] += grad[k];
  }
  saturate_grad(total, l.weight_count, grad);
  net_.update(i, grad, b_bp);
}

}  // namespace zt::train
