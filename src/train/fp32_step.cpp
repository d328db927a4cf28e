// One training step of the FP32 trainer (train/fp32_trainer.hpp): the ZoExecutor that strings
// the components together for the ZO estimator, then the backprop part and the optimizer.
#include <algorithm>
#include <array>
#include <cstring>
#include <span>

#include "zotrain/core/seeds.hpp"
#include "zotrain/kernels/softmax_xent.hpp"
#include "zotrain/train/fp32_trainer.hpp"

namespace zt::train {

using telemetry::Phase;
using telemetry::ScopedPhase;

std::uint64_t Fp32Trainer::draw_seed(std::uint64_t step_seed, int query) const {
  if (!opt_.pezo.stream_offsets) return step_seed;
  return step_number_ * static_cast<std::uint64_t>(opt_.queries) + static_cast<std::uint64_t>(query);
}

// The FP32 ZoExecutor of one step: θ_{1..C} perturbed in place by the ε-scaled Gaussian z_i
// (stream fp32_perturbation_stream(i) of the step seed), probes that keep the loss (and, for
// backprop, the error signal of the last pass), g_i the clipped finite difference, and the
// update merged with the last query's restore.
// Each primitive is one component's: perturb / update / blocks the ZO direction's, probe_all the
// replicas', the node primitives node perturbation's; the passes are the trainer's.
class Fp32Trainer::ZoStep final : public ZoExecutor {
 public:
  ZoStep(Fp32Trainer& t, const float* x, const std::uint8_t* labels, int n,
         std::uint64_t step_seed, float lr_zo, bool bp, telemetry::PhaseTimes& times)
      : t_(t), x_(x), labels_(labels), n_(n), seed_(step_seed), lr_(lr_zo), bp_(bp),
        times_(times) {}

  void perturb(int query, int k) override {
    telemetry::ScopedPhase p(times_, telemetry::Phase::kZoPerturb);
    t_.direction_.perturb(t_.draw_seed(seed_, query), seeds::fp32_perturbation_stream(query),
                          static_cast<float>(k) * t_.opt_.eps);
  }

  bool probe_all(int queries) override {
    if (!t_.opt_.batched) return false;
    std::array<std::uint64_t, kMaxQueries> draws;  // each query's draw seed
    for (int i = 0; i < queries; ++i) draws[static_cast<std::size_t>(i)] = t_.draw_seed(seed_, i);
    t_.direction_.sync();
    const float* logits = t_.replicas_.forward(
        x_, n_, std::span(draws.data(), static_cast<std::size_t>(queries)), bp_, times_);
    if (bp_) t_.input_ = x_;
    telemetry::ScopedPhase p(times_, telemetry::Phase::kLoss);
    const int classes = t_.model_.num_classes();
    const std::size_t rows = static_cast<std::size_t>(n_) * static_cast<std::size_t>(classes);
    for (int i = 0; i < queries; ++i) {
      const bool last = i == queries - 1;  // its − replica feeds backprop (+ too with two sets)
      float* d_plus = bp_ && last && t_.plan_.sets == 2 ? t_.plan_.dlogits(1) : nullptr;
      float* d_minus = bp_ && last ? t_.plan_.dlogits(0) : nullptr;
      const auto at = [&](int r) { return logits + static_cast<std::size_t>(r) * rows; };
      batch_plus_[i] = kernels::softmax_xent_f32(n_, classes, at(2 * i), labels_, d_plus, nullptr);
      batch_minus_[i] = kernels::softmax_xent_f32(n_, classes, at(2 * i + 1), labels_, d_minus,
                                                  last ? &correct_ : nullptr);
    }
    batched_ = true;
    return true;
  }

  void probe(int, ProbeSide side) override {
    const int classes = t_.model_.num_classes();
    const float* logits;
    if (side == ProbeSide::kPlus) {
      // BatchNorm running statistics move once per step, from the − pass (the one backprop
      // uses); both passes normalise with their batch statistics.
      {
        telemetry::ScopedPhase p(times_, telemetry::Phase::kForward);
        t_.model_.set_update_running_stats(false);
        logits = t_.forward(x_, n_, t_.plan_.sets == 2 ? 1 : 0, /*shard=*/true);
        t_.model_.set_update_running_stats(true);
      }
      telemetry::ScopedPhase p(times_, telemetry::Phase::kLoss);
      float* dlogits_plus = t_.plan_.sets == 2 ? t_.plan_.dlogits(1) : nullptr;
      loss_plus_ = kernels::softmax_xent_f32(n_, classes, logits, labels_, dlogits_plus, nullptr);
    } else {
      {
        telemetry::ScopedPhase p(times_, telemetry::Phase::kForward);
        // Node perturbation keeps the first clean pass's inputs and outputs; a second clean
        // pass (for backprop) runs at the same θ and would copy the same values again.
        t_.nodes_.set_capturing(t_.nodes_.enabled() && !nodes_captured_);
        logits = t_.forward(x_, n_, 0, /*shard=*/true);
        t_.nodes_.set_capturing(false);
      }
      telemetry::ScopedPhase p(times_, telemetry::Phase::kLoss);
      loss_minus_ = kernels::softmax_xent_f32(n_, classes, logits, labels_,
                                              bp_ ? t_.plan_.dlogits(0) : nullptr,
                                              &correct_);
      if (t_.nodes_.enabled() && !nodes_captured_) t_.nodes_.keep_clean_losses(logits, labels_, n_);
      nodes_captured_ = true;
    }
  }

  std::size_t block_nodes(int b) const override { return t_.nodes_.block_nodes(b); }
  double active_nodes(int b) const override { return t_.nodes_.active_nodes(b); }
  int samples() const override { return n_; }

  void probe_nodes(int b, int query) override {
    double lp;
    {
      telemetry::ScopedPhase p(times_, telemetry::Phase::kForward);
      t_.direction_.sync();
      lp = t_.nodes_.probe(b, query, seed_, x_, labels_, n_);
    }
    // Reported like a one-sided query: the mean loss and the batch loss's finite difference.
    loss_sum_ += 0.5 * (lp + loss_minus_);
    g_sum_ += (lp - loss_minus_) / static_cast<double>(t_.opt_.eps);
    ++queries_;
  }

  void update_nodes(int b, int queries, double scale) override {
    telemetry::ScopedPhase p(times_, telemetry::Phase::kZoUpdate);
    t_.direction_.sync();
    t_.nodes_.update(b, queries, seed_, n_, static_cast<float>(lr_ * scale));
  }

  double estimate(int query, int span) override {
    telemetry::ScopedPhase p(times_, telemetry::Phase::kLoss);
    // Sequential: the last + and − probes; batched: the query's replicas.
    const double lp = batched_ ? batch_plus_[query] : loss_plus_;
    const double lm = batched_ ? batch_minus_[query] : loss_minus_;
    const double g = (lp - lm) / (span * static_cast<double>(t_.opt_.eps));
    const double clip = t_.opt_.grad_clip;
    clipped_ = clipped_ || g > clip || g < -clip;
    loss_sum_ += 0.5 * (lp + lm);
    ++queries_;
    return std::clamp(g, -clip, clip);
  }

  void update(std::span<const double> g, int restore_k) override {
    telemetry::ScopedPhase p(times_, telemetry::Phase::kZoUpdate);
    const int q = static_cast<int>(g.size());
    for (int i = 0; i < q; ++i) {
      const float restore = i == q - 1 ? static_cast<float>(restore_k) * t_.opt_.eps : 0.0f;
      const double gi = g[static_cast<std::size_t>(i)] / q;  // exact for q = 1
      t_.direction_.perturb(t_.draw_seed(seed_, i), seeds::fp32_perturbation_stream(i),
                            restore - lr_ * static_cast<float>(gi), i == q - 1);
      g_sum_ += g[static_cast<std::size_t>(i)];
    }
  }

  int blocks() const override { return t_.direction_.blocks(); }
  std::size_t block_size(int b) const override { return t_.direction_.block_size(b); }
  void select_block(int b) override { t_.direction_.select_block(b); }

  // The backprop part reads the kept activations of set 0, which every probe writes unless
  // the + probes have a set of their own.
  bool clean_pass_last() const override { return bp_ && t_.plan_.sets == 1; }

  void finish(StepStats& st) const {
    st.loss = loss_sum_ / queries_;
    st.g = g_sum_ / queries_;
    st.clipped = clipped_;
    st.correct = correct_;
  }

 private:
  Fp32Trainer& t_;
  const float* x_;
  const std::uint8_t* labels_;
  int n_;
  std::uint64_t seed_;
  float lr_;
  bool bp_;
  telemetry::PhaseTimes& times_;
  double loss_plus_ = 0, loss_minus_ = 0, loss_sum_ = 0, g_sum_ = 0;
  std::array<double, kMaxQueries> batch_plus_{}, batch_minus_{};  // probe_all's, per query
  bool batched_ = false, nodes_captured_ = false;
  int queries_ = 0, correct_ = 0;
  bool clipped_ = false;
};

StepStats Fp32Trainer::step(const float* x, const std::uint8_t* labels, int n,
                            std::uint64_t step_seed, float lr_zo, float lr_bp,
                            telemetry::PhaseTimes& times) {
  StepStats st;
  const int L = model_.num_parametric();
  const bool zo = opt_.partition > 0, bp = opt_.partition < L;
  const int classes = model_.num_classes();
  float* dlogits = plan_.dlogits(0);
  if (bp) std::memset(plan_.grad(), 0, bp_params_ * sizeof(float));

  if (!zo) {
    const float* logits;
    {
      ScopedPhase t(times, Phase::kForward);
      logits = forward(x, n, 0);
    }
    {
      ScopedPhase t(times, Phase::kLoss);
      st.loss = kernels::softmax_xent_f32(n, classes, logits, labels, dlogits, &st.correct);
    }
  } else {
    ZoStep zo_step(*this, x, labels, n, step_seed, lr_zo, bp, times);
    std::array<double, kMaxQueries> g{};
    estimator_->step(zo_step, g);
    zo_step.finish(st);
    if (bp && plan_.sets == 2) {
      float* dlogits_plus = plan_.dlogits(1);
      // Average of both passes' gradients: halve both error signals and accumulate.
      ScopedPhase t(times, Phase::kBackward);
      const std::size_t m = static_cast<std::size_t>(n) * static_cast<std::size_t>(classes);
      for (std::size_t i = 0; i < m; ++i) {
        dlogits_plus[i] *= 0.5f;
        dlogits[i] *= 0.5f;
      }
      backward(n, 1, dlogits_plus);
    }
  }
  if (bp) {
    ScopedPhase t(times, Phase::kBackward);
    backward(n, 0, dlogits);
    optimizer_.apply(bp_theta_, plan_.grad(), lr_bp);
  }
  ++step_number_;
  return st;
}

}  // namespace zt::train
