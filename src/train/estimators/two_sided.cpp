// Two-sided SPSA / randomized gradient estimate (MeZO's and ElasticZO's), q queries: for each
// query, θ + z_i and θ − z_i (by +1, then −2), g_i from the two losses; the query is restored
// (+1) before the next one, except the last, whose restore the executor merges into the update.
// With q = 1 this is the paper's step exactly: +ε, −2ε, then ε − η·g in one pass. When the
// executor batches (zo.batched), all 2q probes are one forward and the update restores nothing.
#include <memory>

#include "zotrain/train/zo_estimator.hpp"

namespace zt::train {
namespace {

class TwoSided final : public ZoEstimator {
 public:
  explicit TwoSided(int queries) : queries_(queries) {}
  int queries() const override { return queries_; }
  void step(ZoExecutor& ex, std::span<double> g) const override {
    if (ex.probe_all(queries_)) {  // batched (P-RGE): θ was never moved, nothing to restore
      for (int i = 0; i < queries_; ++i) g[static_cast<std::size_t>(i)] = ex.estimate(i, 2);
      ex.update(g.first(static_cast<std::size_t>(queries_)), 0);
      return;
    }
    for (int i = 0; i < queries_; ++i) {
      ex.perturb(i, +1);
      ex.probe(i, ProbeSide::kPlus);
      ex.perturb(i, -2);
      ex.probe(i, ProbeSide::kMinus);
      g[static_cast<std::size_t>(i)] = ex.estimate(i, 2);
      if (i + 1 < queries_) ex.perturb(i, +1);
    }
    ex.update(g.first(static_cast<std::size_t>(queries_)), +1);
  }

 private:
  int queries_;
};

}  // namespace

std::unique_ptr<ZoEstimator> make_two_sided(int queries) {
  return std::make_unique<TwoSided>(queries);
}

}  // namespace zt::train
