// Poor Man's Training's layer-wise estimate with weight perturbation: one clean pass, then for
// each ZO layer b alone q one-sided probes θ + ε z_{i,b} (z_i restricted to layer b, the other
// layers clean), g_{b,i} = (L(θ + ε z_{i,b}) − L(θ)) / ε. All layers are estimated at the same
// θ and updated together at the end (PMT's "global update", not block-coordinate descent), each
// with its gradient-norm scaling K / (K + d_b − 1), K = q, d_b = the layer's weights: the ratio
// of E‖∇‖² to E‖ĝ‖² that keeps a large layer's noisy estimate from taking an outsized step.
// 1 + L·q forward passes per step (full passes: no partial forward from layer b yet). The clean
// pass comes first; when a backprop part follows, a second clean pass before the update gives
// it the clean activations (2 + L·q passes).
// With node perturbation (where the executor offers it: ZoExecutor::block_nodes), a block with
// fewer outputs per sample than weights is probed through its outputs instead, q passes from
// the layer after it on, and updated through the local chain rule with K = n·q independent
// directions and d = its active outputs per sample in the scaling K / (K + d − 1).
#include <algorithm>
#include <array>
#include <memory>

#include "zotrain/core/error.hpp"
#include "zotrain/train/zo_estimator.hpp"

namespace zt::train {
namespace {

// The blocks' estimates live on the stack (a step allocates nothing): at most this many ZO
// layers (LeNet-5 has 5 parametric layers, PointNet 8).
constexpr int kMaxBlocks = 32;

class Layerwise final : public ZoEstimator {
 public:
  explicit Layerwise(int queries) : queries_(queries) {}
  int queries() const override { return queries_; }

  void step(ZoExecutor& ex, std::span<double> g) const override {
    const int blocks = ex.blocks();
    const auto q = static_cast<std::size_t>(queries_);
    ZT_CHECK_MSG(blocks <= kMaxBlocks, "the layer-wise estimator takes at most 32 ZO layers");
    std::array<double, static_cast<std::size_t>(kMaxBlocks) * kMaxQueries> gb;
    ex.probe(0, ProbeSide::kMinus);
    // Node perturbation where the executor offers it and the block has fewer outputs per sample
    // than weights (PMT's adaptive rule), weight perturbation elsewhere.
    const auto nodes = [&](int b) {
      const std::size_t d = ex.block_nodes(b);
      return d > 0 && d < ex.block_size(b);
    };
    for (int b = 0; b < blocks; ++b) {
      if (nodes(b)) {
        for (int i = 0; i < queries_; ++i) ex.probe_nodes(b, i);
        continue;
      }
      ex.select_block(b);
      for (int i = 0; i < queries_; ++i) {
        ex.perturb(i, +1);
        ex.probe(i, ProbeSide::kPlus);
        gb[static_cast<std::size_t>(b) * q + static_cast<std::size_t>(i)] = ex.estimate(i, 1);
        ex.perturb(i, -1);
      }
    }
    if (ex.clean_pass_last()) ex.probe(0, ProbeSide::kMinus);
    std::fill(g.begin(), g.begin() + static_cast<std::ptrdiff_t>(q), 0.0);
    std::array<double, kMaxQueries> scaled;
    int weight_blocks = 0;
    for (int b = 0; b < blocks; ++b) weight_blocks += nodes(b) ? 0 : 1;
    for (int b = 0; b < blocks; ++b) {
      if (nodes(b)) {  // K = n·q independent directions (one per sample and query), d active
        const double K = static_cast<double>(ex.samples()) * static_cast<double>(q);
        const double d = std::max(ex.active_nodes(b), 1.0);
        ex.update_nodes(b, queries_, K / (K + d - 1.0));
        continue;
      }
      ex.select_block(b);
      const double d = static_cast<double>(std::max<std::size_t>(ex.block_size(b), 1));
      const double gns = static_cast<double>(q) / (static_cast<double>(q) + d - 1.0);
      for (std::size_t i = 0; i < q; ++i) {
        const double gi = gb[static_cast<std::size_t>(b) * q + i];
        scaled[i] = gns * gi;
        g[i] += gi / weight_blocks;
      }
      ex.update(std::span<const double>(scaled.data(), q), 0);
    }
    ex.select_block(-1);
  }

 private:
  int queries_;
};

}  // namespace

std::unique_ptr<ZoEstimator> make_layerwise(int queries) {
  return std::make_unique<Layerwise>(queries);
}

}  // namespace zt::train
