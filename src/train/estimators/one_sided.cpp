// One-sided randomized gradient estimate against the clean loss (Poor Man's Training's
// estimator): for each query, θ + ε z_i against θ, g_i = (L(θ + ε z_i) − L(θ)) / ε. One clean
// pass serves every query; the backprop part takes its activations from it. Half the variance
// budget of the two-sided estimate per forward pass in exchange for an O(ε) bias from the
// curvature.
//   q = 1: +z, probe +, −z, probe clean, update (the executor restores nothing: r = 0)
//   q > 1: probe clean, then per query +z, probe +, estimate, −z; the last −z is merged into
//          the update, unless the executor needs the clean pass last (a backprop part after
//          the step): then the last −z, a second clean probe, and the update
#include <memory>

#include "zotrain/train/zo_estimator.hpp"

namespace zt::train {
namespace {

class OneSided final : public ZoEstimator {
 public:
  explicit OneSided(int queries) : queries_(queries) {}
  int queries() const override { return queries_; }
  void step(ZoExecutor& ex, std::span<double> g) const override {
    if (queries_ == 1) {  // the clean pass last, where a trainer's backprop reads it
      ex.perturb(0, +1);
      ex.probe(0, ProbeSide::kPlus);
      ex.perturb(0, -1);
      ex.probe(0, ProbeSide::kMinus);
      g[0] = ex.estimate(0, 1);
      ex.update(g.first(1), 0);
      return;
    }
    ex.probe(0, ProbeSide::kMinus);
    for (int i = 0; i < queries_; ++i) {
      ex.perturb(i, +1);
      ex.probe(i, ProbeSide::kPlus);
      g[static_cast<std::size_t>(i)] = ex.estimate(i, 1);
      if (i + 1 < queries_) ex.perturb(i, -1);
    }
    const auto gs = g.first(static_cast<std::size_t>(queries_));
    if (!ex.clean_pass_last()) return ex.update(gs, -1);
    ex.perturb(queries_ - 1, -1);
    ex.probe(0, ProbeSide::kMinus);
    ex.update(gs, 0);
  }

 private:
  int queries_;
};

}  // namespace

std::unique_ptr<ZoEstimator> make_one_sided(int queries) {
  return std::make_unique<OneSided>(queries);
}

}  // namespace zt::train
