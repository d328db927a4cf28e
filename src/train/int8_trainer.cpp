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
    : net_(net),
      opt_(options),
      plan_(net, {options.partition, options.batch_size, options.threads, options.lean}) {
  zo_weights_ = net_.num_weights_of_range(0, opt_.partition);
  plus_logits_ = plan_.plus_logits();
  perturb_ = kernels::select_perturb_s8(opt_.isa);
  zo_update_ = kernels::select_zo_update_s8(opt_.isa);
}

const std::int8_t* Int8Trainer::act(int i) const {
  return const_cast<Int8Trainer*>(this)->act(i);
}

std::int8_t* Int8Trainer::act(int i) {
  if (i < 0) return const_cast<std::int8_t*>(input_);  // read only
  return plan_.output(i);
}

void Int8Trainer::forward(int n) {
  std::int32_t* acc = plan_.acc();
  void* scratch = plan_.scratch();
  int ex = input_exp_;
  for (int i = 0; i < net_.size(); ++i) {
    if (i == plan_.tail) {
      ex = forward_tail(n, ex);
      i += 2;
      continue;
    }
    ex = net_.forward(i, n, act(i - 1), ex, act(i), acc, scratch);
  }
  last_exp_ = ex;
}

int Int8Trainer::forward_tail(int n, int ex) {
  const int tail = plan_.tail;
  const nn::Int8Layer& l = net_.layer(tail);
  const std::size_t N = static_cast<std::size_t>(l.in.dims.at(0));
  const std::size_t K = static_cast<std::size_t>(l.in.dims.at(1));
  const std::size_t C = static_cast<std::size_t>(l.out.dims.at(1));
  const std::size_t rows = static_cast<std::size_t>(n) * N;
  const std::int8_t* x = act(tail - 1);
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
  }
  for (std::size_t r0 = 0; r0 < rows; r0 += plan_.tail_rows) {
    const std::size_t nr = std::min(plan_.tail_rows, rows - r0);
    net_.point_product(tail, nr, x + r0 * K, acc);
    if (l.norm) kernels::batchnorm_accumulate(nr, static_cast<int>(C), acc, sums, sums + C);
    for (std::size_t r = r0; r < r0 + nr; ++r) {
      const std::int32_t* a = acc + (r - r0) * C;
      std::int32_t* m = mx + (r / N) * C;
      const bool first = r % N == 0;
      for (std::size_t c = 0; c < C; ++c) {
        const std::uint32_t mag = kernels::magnitude(a[c]);
        maxabs = mag > maxabs ? mag : maxabs;
        m[c] = first || a[c] > m[c] ? a[c] : m[c];
        if (l.norm) {
          ext[c] = r == 0 || a[c] < ext[c] ? a[c] : ext[c];
          ext[C + c] = r == 0 || a[c] > ext[C + c] ? a[c] : ext[C + c];
        }
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
  for (std::size_t i = 0; i < static_cast<std::size_t>(n) * C; ++i) {
    const std::int8_t v = kernels::clamp_s8(kernels::round_shift(mx[i], shift));
    pooled[i] = v > 0 ? v : 0;
  }
  if (l.norm) l.norm_exp = base + shift;
  return base + shift;
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
    std::int8_t* e_in = i > seg ? err[1 - cur] : nullptr;
    net_.backward(i, n_, act(i - 1), act(i), err[cur], e_in, acc, grad, h.b_bp, scratch);
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
