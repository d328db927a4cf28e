// Integer-only (compiled with -mgeneral-regs-only in the aarch64 check build).
#include "zotrain/train/int8_trainer.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <optional>
#include <string>

#include "zotrain/core/error.hpp"
#include "zotrain/core/rng.hpp"
#include "zotrain/core/seeds.hpp"
#include "zotrain/kernels/batchnorm_s8.hpp"
#include "zotrain/kernels/niti_loss.hpp"
#include "zotrain/kernels/quant.hpp"

namespace zt::train {
namespace {

using telemetry::Phase;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Adds the time of its scope to one phase.
class Timed {
 public:
  Timed(std::array<std::int64_t, telemetry::kNumPhases>& ns, Phase p)
      : ns_(ns), p_(static_cast<int>(p)), t0_(now_ns()) {}
  ~Timed() { ns_[static_cast<std::size_t>(p_)] += now_ns() - t0_; }
  Timed(const Timed&) = delete;
  Timed& operator=(const Timed&) = delete;

 private:
  std::array<std::int64_t, telemetry::kNumPhases>& ns_;
  int p_;
  std::int64_t t0_;
};

kernels::PerturbS8Params perturbation(std::uint64_t step_seed, int query, const Int8Hyper& h) {
  return {seeds::int8_perturbation(step_seed, query), h.zero_threshold, h.r_max};
}

constexpr int kMaxBlockQueries = 64;  // update_signs_s8's limit

}  // namespace

Int8Trainer::Int8Trainer(nn::Int8Net& net, const Int8TrainerOptions& options)
    : net_(net),
      opt_(options),
      plan_(net, {options.partition, options.batch_size, options.threads, options.lean,
                  options.tail_chunk_elems, options.deep_stream_bytes, options.layerwise}) {
  zo_weights_ = net_.num_weights_of_range(0, opt_.partition);
  plus_logits_ = plan_.plus_logits();
  perturb_ = kernels::select_perturb_s8(opt_.isa);
  zo_update_ = kernels::select_zo_update_s8(opt_.isa);
  if (opt_.cache_direction && zo_weights_ > 0) {
    z_cache_.resize(zo_weights_);
    fill_z_ = kernels::select_fill_perturbation_s8(opt_.isa);
    perturb_cached_ = kernels::select_perturb_cached_s8(opt_.isa);
    zo_update_cached_ = kernels::select_zo_update_cached_s8(opt_.isa);
  }
  init_nodes();
}

const std::int8_t* Int8Trainer::cached_direction(const kernels::PerturbS8Params& p) {
  if (z_cache_.empty()) return nullptr;
  if (!z_cached_ || p.seed != z_key_.seed || p.zero_threshold != z_key_.zero_threshold ||
      p.r_max != z_key_.r_max) {
    fill_z_(p, 0, zo_weights_, z_cache_.data());
    z_key_ = p;
    z_cached_ = true;
  }
  return z_cache_.data();
}

const std::int8_t* Int8Trainer::act(int i) const {
  return const_cast<Int8Trainer*>(this)->act(i);
}

std::int8_t* Int8Trainer::act(int i) {
  if (i < 0) return const_cast<std::int8_t*>(input_);  // read only
  return plan_.output(i);
}

const std::int8_t* Int8Trainer::input_rows(int i, std::size_t r0, std::size_t nr) {
  const std::size_t K = static_cast<std::size_t>(net_.layer(i).in.dims.back());
  if (i == 0 || !plan_.relu_on_read[static_cast<std::size_t>(i - 1)]) return act(i - 1) + r0 * K;
  const std::int8_t* x = act(i - 2) + r0 * K;  // the ReLU's input
  std::int8_t* y = plan_.relu_chunk();
  for (std::size_t k = 0; k < nr * K; ++k) y[k] = x[k] > 0 ? x[k] : std::int8_t{0};
  return y;
}

void Int8Trainer::forward(int n, int from) {
  std::int32_t* acc = plan_.acc();
  void* scratch = plan_.scratch();
  int ex = from == 0 ? input_exp_ : last_exp_;  // from > 0: act(from − 1) with exponent last_exp_
  for (int i = from; i < net_.size(); ++i) {
    if (i == plan_.tail) {
      ex = forward_tail(n, ex);
      i += 2;
      continue;
    }
    if (plan_.relu_on_read[static_cast<std::size_t>(i)]) continue;  // formed when read
    if (plan_.chunk_rows[static_cast<std::size_t>(i)] > 0)
      ex = forward_points_streamed(i, n, ex);
    else {
      const int in_ex = ex;
      ex = net_.forward(i, n, act(i - 1), ex, act(i), acc, scratch);
      if (capture_) capture_node(i, n, in_ex, ex);
    }
  }
  last_exp_ = ex;
}

namespace {
// y = clamp_s8(round_shift(x, shift)) elementwise, in a loop that vectorises: the streamed point
// layers requantise every chunk (outputs and input errors) with the tensor's one shift.
void round_shift_s8(const std::int32_t* x, std::size_t n, int shift, std::int8_t* y) {
  for (std::size_t i = 0; i < n; ++i) y[i] = kernels::round_shift_clamp_s8(x[i], shift);
}
}  // namespace

int Int8Trainer::forward_tail(int n, int ex) {
  const int tail = plan_.tail;
  const nn::Int8Layer& l = net_.layer(tail);
  const std::size_t N = static_cast<std::size_t>(l.in.dims.at(0));
  const std::size_t K = static_cast<std::size_t>(l.in.dims.at(1));
  const std::size_t C = static_cast<std::size_t>(l.out.dims.at(1));
  const std::size_t rows = static_cast<std::size_t>(n) * N;
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
  std::int8_t* pooled = act(tail + 2);
  round_shift_s8(mx, static_cast<std::size_t>(n) * C, shift, pooled);
  for (std::size_t i = 0; i < static_cast<std::size_t>(n) * C; ++i) pooled[i] = pooled[i] > 0 ? pooled[i] : 0;
  if (l.norm) l.norm_exp = base + shift;
  tail_shift_ = shift;
  return base + shift;
}

int Int8Trainer::forward_points_streamed(int i, int n, int ex) {
  const nn::Int8Layer& l = net_.layer(i);
  const std::size_t N = static_cast<std::size_t>(l.in.dims.at(0));
  const std::size_t K = static_cast<std::size_t>(l.in.dims.at(1));
  const std::size_t C = static_cast<std::size_t>(l.out.dims.at(1));
  const std::size_t rows = static_cast<std::size_t>(n) * N;
  const std::size_t step = plan_.chunk_rows[static_cast<std::size_t>(i)];
  std::int8_t* y = act(i);
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

void Int8Trainer::point_rows(int i, std::size_t r0, std::size_t nr, int shift,
                             std::int32_t* prod, std::int8_t* out) {
  const nn::Int8Layer& l = net_.layer(i);
  const std::size_t C = static_cast<std::size_t>(l.out.dims.at(1));
  net_.point_product(i, nr, input_rows(i, r0, nr), prod);
  if (l.norm) kernels::batchnorm_apply_rows(nr, static_cast<int>(C), prod, l.norm_state.data());
  round_shift_s8(prod, nr * C, shift, out);
}

// The weight gradient of a streamed product is summed over its chunks in int64 (a chunk's int32
// sum is exact: at most kTailMaxRows rows) and saturated once, as the whole-batch kernel does.
namespace {
void saturate_grad(const std::int64_t* total, std::size_t n, std::int32_t* grad) {
  for (std::size_t i = 0; i < n; ++i)
    grad[i] = static_cast<std::int32_t>(std::clamp<std::int64_t>(total[i], INT32_MIN, INT32_MAX));
}
}  // namespace

void Int8Trainer::backward_tail(const std::int8_t* e_pool, std::int8_t* e_in, int b_bp) {
  const int tail = plan_.tail;
  const nn::Int8Layer& l = net_.layer(tail);
  const std::size_t N = static_cast<std::size_t>(l.in.dims.at(0));
  const std::size_t K = static_cast<std::size_t>(l.in.dims.at(1));
  const std::size_t C = static_cast<std::size_t>(l.out.dims.at(1));
  const std::size_t rows = static_cast<std::size_t>(n_) * N;
  const std::int8_t* pooled = act(tail + 2);
  std::int8_t* y = plan_.tail_chunk_output();
  std::int8_t* e = plan_.tail_chunk_error();
  // Per (sample, channel): the point whose ReLU output the pool took (its first maximum), −1
  // until found. Where the pooled value is 0, ReLU's backward zeroes the error at any point.
  std::int32_t* first = plan_.tail_max();
  std::fill(first, first + static_cast<std::size_t>(n_) * C, -1);
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
    for (std::size_t bc = 0; bc < static_cast<std::size_t>(n_) * C; ++bc)
      if (pooled[bc] > 0) {
        sums[bc % C] += e_pool[bc];
        sums[C + bc % C] += static_cast<std::int64_t>(e_pool[bc]) * pooled[bc];
      }
    bn.emplace(rows, static_cast<int>(C), l.norm_exp, l.norm_state.data(), sums);
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

void Int8Trainer::backward_points_streamed(int i, std::int8_t* e_out, std::int8_t* e_in,
                                           int b_bp) {
  const nn::Int8Layer& l = net_.layer(i);
  const std::size_t K = static_cast<std::size_t>(l.in.dims.at(1));
  const std::size_t C = static_cast<std::size_t>(l.out.dims.at(1));
  const std::size_t rows = static_cast<std::size_t>(n_) * static_cast<std::size_t>(l.in.dims.at(0));
  const std::size_t step = plan_.chunk_rows[static_cast<std::size_t>(i)];
  if (l.norm) net_.point_backward_norm(i, rows, act(i), e_out);  // in place, as backward()
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

void Int8Trainer::begin(const std::int8_t* x, int exponent, int n) {
  ZT_CHECK(n > 0 && n <= opt_.batch_size);
  n_ = n;
  input_ = x;
  input_exp_ = exponent;
}

void Int8Trainer::perturb(std::uint64_t step_seed, int query, int k, const Int8Hyper& h) {
  ZT_CHECK(zo_weights_ > 0);
  Timed t(ns_, Phase::kZoPerturb);
  const kernels::PerturbS8Params p = perturbation(step_seed, query, h);
  if (const std::int8_t* z = cached_direction(p)) return perturb_cached_(net_.weights(), z, zo_weights_, k);
  perturb_(net_.weights(), zo_weights_, 0, p, k);
}

void Int8Trainer::probe(bool plus) {
  Timed t(ns_, Phase::kForward);
  capture_ = !plus && opt_.node_perturbation;
  forward(n_);
  capture_ = false;
  if (plus) {
    std::memcpy(plus_logits_, last_logits(),
                static_cast<std::size_t>(n_) * static_cast<std::size_t>(net_.num_classes()));
    plus_exp_ = last_exp_;
  }
}

void Int8Trainer::zo_update(std::uint64_t step_seed, int query, int g, const Int8Hyper& h) {
  ZT_CHECK(zo_weights_ > 0);
  Timed t(ns_, Phase::kZoUpdate);
  const kernels::PerturbS8Params p = perturbation(step_seed, query, h);
  if (const std::int8_t* z = cached_direction(p)) return zo_update_cached_(net_.weights(), z, zo_weights_, p, g, h.b_zo);
  zo_update_(net_.weights(), zo_weights_, 0, p, g, h.b_zo);
}

void Int8Trainer::perturb_block(int b, std::uint64_t step_seed, int query) {
  ZT_CHECK(opt_.layerwise && b >= 0 && b < opt_.partition);
  Timed t(ns_, Phase::kZoPerturb);
  const nn::Int8Layer& l = net_.layer(net_.parametric_layer(b));
  std::int8_t* w = net_.weights() + l.weight_offset;
  std::int8_t* saved = plan_.layer_backup();
  std::memcpy(saved, w, l.weight_count);
  kernels::perturb_signs_s8(opt_.signs, saved, w, l.weight_count,
                            static_cast<std::uint32_t>(l.weight_offset),
                            seeds::int8_perturbation(step_seed, query));
}

void Int8Trainer::restore_block(int b) {
  ZT_CHECK(opt_.layerwise && b >= 0 && b < opt_.partition);
  Timed t(ns_, Phase::kZoPerturb);
  const nn::Int8Layer& l = net_.layer(net_.parametric_layer(b));
  std::memcpy(net_.weights() + l.weight_offset, plan_.layer_backup(), l.weight_count);
}

void Int8Trainer::update_block(int b, std::uint64_t step_seed, const std::int32_t* coef,
                               int queries, int frac) {
  ZT_CHECK(opt_.layerwise && b >= 0 && b < opt_.partition && queries <= kMaxBlockQueries);
  Timed t(ns_, Phase::kZoUpdate);
  const nn::Int8Layer& l = net_.layer(net_.parametric_layer(b));
  std::uint64_t keys[kMaxBlockQueries];
  for (int q = 0; q < queries; ++q) keys[q] = seeds::int8_perturbation(step_seed, q);
  kernels::update_signs_s8(opt_.signs, net_.weights() + l.weight_offset, l.weight_count,
                           static_cast<std::uint32_t>(l.weight_offset), keys, coef, queries, frac,
                           seeds::int8_update_rounding(step_seed));
}

// Node perturbation: a Linear block outside the streamed per-point stack, so that a pass can
// restart from its output buffer (LeNet-5: fc1, fc2, fc3; PointNet: the head after the pool).
void Int8Trainer::init_nodes() {
  if (!opt_.node_perturbation) return;
  ZT_CHECK(opt_.layerwise);
  const auto B = static_cast<std::size_t>(opt_.batch_size);
  std::size_t widest = 0, widest_in = 0;
  nodes_.resize(static_cast<std::size_t>(opt_.partition));
  for (int b = 0; b < opt_.partition; ++b) {
    const int li = net_.parametric_layer(b);
    const nn::Int8Layer& l = net_.layer(li);
    const bool streamed = (plan_.tail >= 0 && li <= plan_.tail + 2) ||
                          plan_.chunk_rows[static_cast<std::size_t>(li)] > 0;
    if (l.op != nn::LayerOp::kLinear || l.norm || li == 0 || streamed) continue;
    NodeBlock& nb = nodes_[static_cast<std::size_t>(b)];
    nb.layer = li;
    nb.in = l.in.numel();
    nb.out = l.out.numel();
    nb.relu_after = li + 1 < net_.size() && net_.layer(li + 1).op == nn::LayerOp::kRelu;
    nb.input.resize(B * nb.in);
    nb.clean.resize(B * nb.out);
    widest = std::max(widest, nb.out);
    widest_in = std::max(widest_in, nb.in);
  }
  ZT_CHECK(opt_.queries >= 1);
  node_grad_.resize(B * widest);
  node_losses_n_ = B * (1 + static_cast<std::size_t>(opt_.partition) *
                               static_cast<std::size_t>(opt_.queries));
  node_work_n_ = B * widest;
  node_f64_.reset(new std::byte[(node_losses_n_ + node_work_n_) * kF64Bytes]);
  node_xi_.resize(B * widest);
  node_row_.resize(widest_in);
}

std::size_t Int8Trainer::node_bytes() const {
  std::size_t bytes = node_grad_.size() * sizeof(std::int32_t) +
                      (node_losses_n_ + node_work_n_) * kF64Bytes +
                      node_xi_.size() + node_row_.size() * sizeof(std::int64_t);
  for (const NodeBlock& nb : nodes_) bytes += nb.input.size() + nb.clean.size();
  return bytes;
}

void Int8Trainer::capture_node(int i, int n, int in_exp, int out_exp) {
  for (NodeBlock& nb : nodes_) {
    if (nb.layer != i) continue;
    const auto rows = static_cast<std::size_t>(n);
    std::memcpy(nb.input.data(), act(i - 1), rows * nb.in);
    std::memcpy(nb.clean.data(), act(i), rows * nb.out);
    nb.in_exp = in_exp;
    nb.out_exp = out_exp;
  }
}

std::size_t Int8Trainer::block_nodes(int b) const {
  return b < static_cast<int>(nodes_.size()) && nodes_[static_cast<std::size_t>(b)].layer >= 0
             ? nodes_[static_cast<std::size_t>(b)].out
             : 0;
}

const std::int8_t* Int8Trainer::node_clean(int b) const {
  ZT_CHECK(block_nodes(b) > 0);
  return nodes_[static_cast<std::size_t>(b)].clean.data();
}

const std::int8_t* Int8Trainer::node_input(int b) const {
  ZT_CHECK(block_nodes(b) > 0);
  return nodes_[static_cast<std::size_t>(b)].input.data();
}

int Int8Trainer::node_scale_exp(int b) const {
  ZT_CHECK(block_nodes(b) > 0);
  const NodeBlock& nb = nodes_[static_cast<std::size_t>(b)];
  return nb.in_exp - nb.out_exp - net_.layer(nb.layer).exponent;
}

bool Int8Trainer::node_relu_after(int b) const {
  ZT_CHECK(block_nodes(b) > 0);
  return nodes_[static_cast<std::size_t>(b)].relu_after;
}

void Int8Trainer::node_directions(std::uint64_t step_seed, int b, int query,
                                  std::int8_t* xi) const {
  kernels::signs_s8(opt_.signs, seeds::int8_node_perturbation(step_seed, b, query), 0,
                    static_cast<std::size_t>(n_) * block_nodes(b), xi);
}

void Int8Trainer::probe_nodes(int b, std::uint64_t step_seed, int query) {
  ZT_CHECK(block_nodes(b) > 0);
  const NodeBlock& nb = nodes_[static_cast<std::size_t>(b)];
  {
    Timed t(ns_, Phase::kZoPerturb);
    const std::size_t count = static_cast<std::size_t>(n_) * nb.out;
    std::int8_t* y = act(nb.layer);
    node_directions(step_seed, b, query, y);  // ξ, then ȳ + ξ in place
    for (std::size_t k = 0; k < count; ++k) {
      const std::int8_t c = nb.clean[k];
      y[k] = nb.relu_after && c <= 0 ? c : kernels::clamp_s8(std::int64_t{c} + y[k]);
    }
  }
  Timed t(ns_, Phase::kForward);
  last_exp_ = nb.out_exp;
  forward(n_, nb.layer + 1);
}

void Int8Trainer::update_nodes(int b, int frac, std::uint64_t step_seed) {
  ZT_CHECK(block_nodes(b) > 0);
  Timed t(ns_, Phase::kZoUpdate);
  const NodeBlock& nb = nodes_[static_cast<std::size_t>(b)];
  const nn::Int8Layer& l = net_.layer(nb.layer);
  kernels::update_nodes_s8(net_.weights() + l.weight_offset, nb.out, nb.in, node_grad_.data(),
                           nb.input.data(), static_cast<std::size_t>(n_), frac, node_row_.data(),
                           static_cast<std::uint32_t>(l.weight_offset),
                           seeds::int8_update_rounding(step_seed));
}

int Int8Trainer::integer_sign(const std::uint8_t* labels, bool eq12) const {
  ZT_CHECK(zo_weights_ > 0);
  return (eq12 ? kernels::zo_sign_s8_eq12 : kernels::zo_sign_s8)(
      n_, net_.num_classes(), plus_logits_, plus_exp_, last_logits(), last_exp_, labels);
}

void Int8Trainer::backprop(const std::uint8_t* labels, std::uint64_t step_seed,
                           const Int8Hyper& h) {
  const int layers = net_.size();
  const int seg = plan_.seg;
  if (seg == layers) return;
  std::int8_t* err[2] = {plan_.error(0), plan_.error(1)};
  {
    Timed t(ns_, Phase::kLoss);
    kernels::xent_error_s8(n_, net_.num_classes(), last_logits(), last_exp_, labels,
                           seeds::int8_loss_rounding(step_seed), err[0]);
  }
  Timed t(ns_, Phase::kBackward);
  std::int32_t* acc = plan_.acc();
  std::int32_t* grad = plan_.grad();
  void* scratch = plan_.scratch();
  int cur = 0;
  for (int i = layers - 1; i >= seg; --i) {
    if (plan_.tail_bp && i == plan_.tail + 2) {  // pool, ReLU and the product, streamed
      i = plan_.tail;
      backward_tail(err[cur], i > seg ? err[1 - cur] : nullptr, h.b_bp);
    } else if (plan_.deep && plan_.chunk_rows[static_cast<std::size_t>(i)] > 0) {
      backward_points_streamed(i, err[cur], i > seg ? err[1 - cur] : nullptr, h.b_bp);
    } else {
      net_.backward(i, n_, act(i - 1), act(i), err[cur], i > seg ? err[1 - cur] : nullptr, acc,
                    grad, h.b_bp, scratch);
    }
    cur = 1 - cur;
  }
}

Int8Logits Int8Trainer::infer(const std::int8_t* x, int exponent, int n) {
  ZT_CHECK(n > 0 && n <= opt_.batch_size);
  input_ = x;
  input_exp_ = exponent;
  forward(n);
  return {last_logits(), last_exp_};
}

std::array<std::int64_t, telemetry::kNumPhases> Int8Trainer::take_phase_ns() {
  auto r = ns_;
  ns_.fill(0);
  return r;
}

}  // namespace zt::train
