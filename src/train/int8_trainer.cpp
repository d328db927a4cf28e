// Integer-only (compiled with -mgeneral-regs-only in the aarch64 check build).
#include "zotrain/train/int8_trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

#include "zotrain/core/error.hpp"
#include "zotrain/core/rng.hpp"
#include "zotrain/core/seeds.hpp"
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

}  // namespace

Int8Trainer::Int8Trainer(nn::Int8Net& net, const Int8TrainerOptions& options)
    : net_(net), opt_(options) {
  const int L = net_.num_parametric();
  ZT_CHECK(opt_.partition >= 0 && opt_.partition <= L);
  ZT_CHECK(opt_.batch_size > 0 && opt_.threads > 0);
  seg_ = net_.bp_segment_start(opt_.partition);
  keep_from_ = seg_ > 0 ? seg_ - 1 : 0;
  zo_weights_ = net_.num_weights_of_range(0, opt_.partition);
  const auto B = static_cast<std::size_t>(opt_.batch_size);
  const int layers = net_.size();

  // Lean tail: the per-point stack (nn/network_desc.hpp) ends PointLinear → ReLU → max over
  // points, all before the backprop segment.
  if (opt_.lean) {
    const nn::PointStack stack = nn::find_point_stack(net_.describe());
    if (stack.found() && stack.pool < seg_ && stack.between == std::vector{nn::LayerOp::kRelu})
      tail_ = stack.tail;
  }
  std::size_t pingpong = 0, acc = 0, scratch = 0, err = 0;
  h_kept_.assign(static_cast<std::size_t>(layers), -1);
  for (int i = 0; i < layers; ++i) {
    const nn::Int8Layer& l = net_.layer(i);
    const std::size_t out = B * l.out.numel();
    if (tail_ >= 0 && i >= tail_ && i < tail_ + 2) {  // streamed: a chunk of the product only
      const std::size_t width = static_cast<std::size_t>(l.out.dims.back());
      const std::size_t rows = B * static_cast<std::size_t>(l.out.dims.at(0));
      if (i == tail_) {
        tail_rows_ = std::min(rows, std::max<std::size_t>(1, kTailChunkElems / width));
        acc = std::max(acc, tail_rows_ * width);
      }
      continue;
    }
    if (i < keep_from_)
      pingpong = std::max(pingpong, out);
    else
      h_kept_[static_cast<std::size_t>(i)] = arena_.reserve<std::int8_t>(l.name + " output (int8)", out);
    acc = std::max(acc, net_.acc_elems(i, opt_.batch_size));
    scratch = std::max(scratch, net_.scratch_bytes(i, opt_.batch_size, opt_.threads));
    if (i >= seg_) err = std::max({err, B * l.in.numel(), out});
  }
  if (pingpong > 0)
    for (int k = 0; k < 2; ++k)
      h_pingpong_[k] =
          arena_.reserve<std::int8_t>("ZO ping-pong " + std::to_string(k) + " (int8)", pingpong);
  h_acc_ = arena_.reserve<std::int32_t>("accumulator (int32)", acc);
  if (tail_ >= 0)
    h_tail_max_ = arena_.reserve<std::int32_t>("pool running max (int32)",
                                                B * net_.layer(tail_ + 2).out.numel());
  if (scratch > 0) h_scratch_ = arena_.reserve<std::int8_t>("conv scratch", scratch);  // bytes
  if (opt_.partition > 0)
    h_plus_ = arena_.reserve<std::int8_t>("+ pass logits (int8)", B * static_cast<std::size_t>(net_.num_classes()));
  if (seg_ < layers) {
    std::size_t grad = 0;
    for (int i = seg_; i < layers; ++i) grad = std::max(grad, net_.layer(i).weight_count);
    h_grad_ = arena_.reserve<std::int32_t>("weight gradient (int32)", grad);
    for (int k = 0; k < 2; ++k)
      h_err_[k] = arena_.reserve<std::int8_t>("error " + std::to_string(k) + " (int8)", err);
  }
  arena_.allocate();
  if (h_plus_ >= 0) plus_logits_ = arena_.get<std::int8_t>(h_plus_);
  perturb_ = kernels::select_perturb_s8(opt_.isa);
  zo_update_ = kernels::select_zo_update_s8(opt_.isa);
}

const std::int8_t* Int8Trainer::act(int i) const {
  return const_cast<Int8Trainer*>(this)->act(i);
}

std::int8_t* Int8Trainer::act(int i) {
  if (i < 0) return const_cast<std::int8_t*>(input_);  // read only
  const int h = i < keep_from_ ? h_pingpong_[i % 2] : h_kept_[static_cast<std::size_t>(i)];
  return arena_.get<std::int8_t>(h);
}

void Int8Trainer::forward(int n) {
  auto* acc = arena_.get<std::int32_t>(h_acc_);
  void* scratch = h_scratch_ >= 0 ? arena_.get<std::int8_t>(h_scratch_) : nullptr;
  int ex = input_exp_;
  for (int i = 0; i < net_.size(); ++i) {
    if (i == tail_) {
      ex = forward_tail(n, ex);
      i += 2;
      continue;
    }
    ex = net_.forward(i, n, act(i - 1), ex, act(i), acc, scratch);
  }
  last_exp_ = ex;
}

int Int8Trainer::forward_tail(int n, int ex) {
  const nn::Int8Layer& l = net_.layer(tail_);
  const std::size_t N = static_cast<std::size_t>(l.in.dims.at(0));
  const std::size_t K = static_cast<std::size_t>(l.in.dims.at(1));
  const std::size_t C = static_cast<std::size_t>(l.out.dims.at(1));
  const std::size_t rows = static_cast<std::size_t>(n) * N;
  const std::int8_t* x = act(tail_ - 1);
  auto* acc = arena_.get<std::int32_t>(h_acc_);
  auto* mx = arena_.get<std::int32_t>(h_tail_max_);
  std::uint32_t maxabs = 0;
  for (std::size_t r0 = 0; r0 < rows; r0 += tail_rows_) {
    const std::size_t nr = std::min(tail_rows_, rows - r0);
    net_.point_product(tail_, nr, x + r0 * K, acc);
    for (std::size_t r = r0; r < r0 + nr; ++r) {
      const std::int32_t* a = acc + (r - r0) * C;
      std::int32_t* m = mx + (r / N) * C;
      const bool first = r % N == 0;
      for (std::size_t c = 0; c < C; ++c) {
        const std::uint32_t mag = kernels::magnitude(a[c]);
        maxabs = mag > maxabs ? mag : maxabs;
        m[c] = first || a[c] > m[c] ? a[c] : m[c];
      }
    }
  }
  // requantize_s32_s8's shift for the whole tensor, then ReLU of each pooled value.
  const int b = kernels::bitlen(maxabs);
  const int shift = b > kernels::kInt8Bits ? b - kernels::kInt8Bits : 0;
  std::int8_t* pooled = act(tail_ + 2);
  for (std::size_t i = 0; i < static_cast<std::size_t>(n) * C; ++i) {
    const std::int8_t v = kernels::clamp_s8(kernels::round_shift(mx[i], shift));
    pooled[i] = v > 0 ? v : 0;
  }
  return ex + l.exponent + shift;
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
  perturb_(net_.weights(), zo_weights_, 0, perturbation(step_seed, query, h), k);
}

void Int8Trainer::probe(bool plus) {
  Timed t(ns_, Phase::kForward);
  forward(n_);
  if (plus) {
    std::memcpy(plus_logits_, last_logits(),
                static_cast<std::size_t>(n_) * static_cast<std::size_t>(net_.num_classes()));
    plus_exp_ = last_exp_;
  }
}

void Int8Trainer::zo_update(std::uint64_t step_seed, int query, int g, const Int8Hyper& h) {
  ZT_CHECK(zo_weights_ > 0);
  Timed t(ns_, Phase::kZoUpdate);
  zo_update_(net_.weights(), zo_weights_, 0, perturbation(step_seed, query, h), g, h.b_zo);
}

int Int8Trainer::integer_sign(const std::uint8_t* labels) const {
  ZT_CHECK(zo_weights_ > 0);
  return kernels::zo_sign_s8(n_, net_.num_classes(), plus_logits_, plus_exp_, last_logits(),
                             last_exp_, labels);
}

void Int8Trainer::backprop(const std::uint8_t* labels, std::uint64_t step_seed,
                           const Int8Hyper& h) {
  const int layers = net_.size();
  if (seg_ == layers) return;
  std::int8_t* err[2] = {arena_.get<std::int8_t>(h_err_[0]),
                         arena_.get<std::int8_t>(h_err_[1])};
  {
    Timed t(ns_, Phase::kLoss);
    kernels::xent_error_s8(n_, net_.num_classes(), last_logits(), last_exp_, labels,
                           seeds::int8_loss_rounding(step_seed), err[0]);
  }
  Timed t(ns_, Phase::kBackward);
  auto* acc = arena_.get<std::int32_t>(h_acc_);
  auto* grad = arena_.get<std::int32_t>(h_grad_);
  void* scratch = h_scratch_ >= 0 ? arena_.get<std::int8_t>(h_scratch_) : nullptr;
  int cur = 0;
  for (int i = layers - 1; i >= seg_; --i) {
    std::int8_t* e_in = i > seg_ ? err[1 - cur] : nullptr;
    net_.backward(i, n_, act(i - 1), err[cur], e_in, acc, grad, h.b_bp, scratch);
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
