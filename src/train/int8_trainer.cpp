// Integer-only (compiled with -mgeneral-regs-only in the aarch64 check build).
#include "zotrain/train/int8_trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "zotrain/core/error.hpp"
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

constexpr int kMaxBlockQueries = 64;  // update_signs_s8's limit

}  // namespace

Int8Trainer::Int8Trainer(nn::Int8Net& net, const Int8TrainerOptions& options)
    : net_(net),
      opt_(options),
      zo_weights_(net.num_weights_of_range(0, options.partition)),
      plan_(net, {options.partition, options.batch_size, options.threads, options.lean,
                  options.tail_chunk_elems, options.deep_stream_bytes, options.layerwise}),
      points_(net, plan_),
      nodes_(net, plan_, plan_.arena(),
             {options.node_perturbation, options.partition, options.batch_size, options.queries,
              options.signs}),
      directions_(net, plan_, options.partition, options.cache_direction, options.signs,
                  options.isa, plan_.arena()) {
  ZT_CHECK(!opt_.node_perturbation || opt_.layerwise);
  plan_.allocate();
  directions_.bind(plan_.arena());
  plus_logits_ = plan_.plus_logits();

  // Data-parallel probes (docs/design.md §15): the layers before the backprop segment (all of
  // them for Full ZO) on this rank's rows, unless a layer there is normalised by the batch's
  // statistics or streamed by points.
  ranks_ = opt_.ranks != nullptr ? opt_.ranks : &single_rank();
  if (!ranks_->single()) {
    shard_until_ = opt_.node_perturbation ? 0 : plan_.seg;
    for (int i = 0; i < shard_until_; ++i) {
      const std::size_t k = static_cast<std::size_t>(i);
      if (net_.layer(i).norm || plan_.chunk_rows[k] > 0 || plan_.relu_on_read[k] != 0 ||
          i == plan_.tail)
        shard_until_ = 0;
    }
    shard_begin_.resize(static_cast<std::size_t>(ranks_->size()) + 1);
  }
}

const std::int8_t* Int8Trainer::act(int i) const {
  return const_cast<Int8Trainer*>(this)->act(i);
}

std::int8_t* Int8Trainer::act(int i) {
  if (i < 0) return const_cast<std::int8_t*>(input_);  // read only
  return plan_.output(i);
}

void Int8Trainer::forward(int n, int from, bool shard) {
  std::int32_t* acc = plan_.acc();
  void* scratch = plan_.scratch();
  int ex = from == 0 ? input_exp_ : last_exp_;  // from > 0: act(from − 1) with exponent last_exp_
  // Layers [from, S) on this rank's rows [lo, hi) only, then their output gathered.
  const int S = shard && from < shard_until_ ? shard_until_ : from;
  if (S > from) {
    const auto rank = static_cast<std::size_t>(ranks_->rank());
    shard_rows(n, kShardChunk, ranks_->size(), shard_begin_.data());
    const int lo = shard_begin_[rank], rows = shard_begin_[rank + 1] - lo;
    ZT_CHECK_MSG(rows > 0, "a rank without rows of the batch");
    for (int i = from; i < S; ++i) {
      const nn::Int8Layer& l = net_.layer(i);
      const std::size_t r0 = static_cast<std::size_t>(lo);
      ex = net_.forward(i, rows, act(i - 1) + r0 * l.in.numel(), ex, act(i) + r0 * l.out.numel(),
                        acc, scratch, ranks_);
    }
    ranks_->gather_rows(act(S - 1), net_.layer(S - 1).out.numel(), shard_begin_.data(),
                        Exchange::kActivations);
  }
  for (int i = S; i < net_.size(); ++i) {
    if (i == plan_.tail) {
      ex = points_.forward_tail(n, ex);
      i += 2;
      continue;
    }
    if (plan_.relu_on_read[static_cast<std::size_t>(i)]) continue;  // formed when read
    if (plan_.chunk_rows[static_cast<std::size_t>(i)] > 0)
      ex = points_.forward_points(i, n, ex);
    else {
      const int in_ex = ex;
      ex = net_.forward(i, n, act(i - 1), ex, act(i), acc, scratch);
      if (capture_) nodes_.capture(i, n, act(i - 1), act(i), in_ex, ex);
    }
  }
  last_exp_ = ex;
}

void Int8Trainer::begin(const std::int8_t* x, int exponent, int n) {
  ZT_CHECK(n > 0 && n <= opt_.batch_size);
  n_ = n;
  input_ = x;
  input_exp_ = exponent;
  points_.set_input(x);
}

void Int8Trainer::perturb(std::uint64_t step_seed, int query, int k, const Int8Hyper& h) {
  ZT_CHECK(zo_weights_ > 0);
  Timed t(ns_, Phase::kZoPerturb);
  directions_.perturb(perturbation(step_seed, query, h), k);
}

void Int8Trainer::probe(bool plus) {
  Timed t(ns_, Phase::kForward);
  capture_ = !plus && opt_.node_perturbation;
  forward(n_, 0, /*shard=*/true);
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
  directions_.update(perturbation(step_seed, query, h), g, h.b_zo);
}

void Int8Trainer::perturb_block(int b, std::uint64_t step_seed, int query) {
  ZT_CHECK(opt_.layerwise && b >= 0 && b < opt_.partition);
  Timed t(ns_, Phase::kZoPerturb);
  directions_.perturb_block(b, seeds::int8_perturbation(step_seed, query));
}

void Int8Trainer::restore_block(int b) {
  ZT_CHECK(opt_.layerwise && b >= 0 && b < opt_.partition);
  Timed t(ns_, Phase::kZoPerturb);
  directions_.restore_block(b);
}

void Int8Trainer::update_block(int b, std::uint64_t step_seed, const std::int32_t* coef,
                               int queries, int frac) {
  ZT_CHECK(opt_.layerwise && b >= 0 && b < opt_.partition && queries <= kMaxBlockQueries);
  Timed t(ns_, Phase::kZoUpdate);
  std::uint64_t keys[kMaxBlockQueries];
  for (int q = 0; q < queries; ++q) keys[q] = seeds::int8_perturbation(step_seed, q);
  directions_.update_block(b, keys, coef, queries, frac, seeds::int8_update_rounding(step_seed));
}

void Int8Trainer::probe_nodes(int b, std::uint64_t step_seed, int query) {
  const int layer = nodes_.layer(b);
  {
    Timed t(ns_, Phase::kZoPerturb);
    nodes_.perturb(b, step_seed, query, n_, act(layer));
  }
  Timed t(ns_, Phase::kForward);
  last_exp_ = nodes_.out_exp(b);
  forward(n_, layer + 1);
}

void Int8Trainer::update_nodes(int b, int frac, std::uint64_t step_seed) {
  ZT_CHECK(block_nodes(b) > 0);
  Timed t(ns_, Phase::kZoUpdate);
  nodes_.update(b, frac, step_seed, n_);
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
      points_.backward_tail(n_, err[cur], i > seg ? err[1 - cur] : nullptr, h.b_bp);
    } else if (plan_.deep && plan_.chunk_rows[static_cast<std::size_t>(i)] > 0) {
      points_.backward_points(i, n_, err[cur], i > seg ? err[1 - cur] : nullptr, h.b_bp);
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
  points_.set_input(x);
  forward(n);
  return {last_logits(), last_exp_};
}

std::array<std::int64_t, telemetry::kNumPhases> Int8Trainer::take_phase_ns() {
  auto r = ns_;
  ns_.fill(0);
  return r;
}

}  // namespace zt::train
