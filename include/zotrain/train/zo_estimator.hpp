// The zeroth-order estimator seam: every ZO step, FP32 and int8, in training and in
// `zotrain bench`, runs as ZoEstimator::step() over a ZoExecutor (docs/design.md §4, §6).
//
// The executor owns θ_{1..C}, the perturbation source and the forward passes:
//   perturb(i, k)   θ_{1..C} += k · z_i, z_i regenerated from the step seed and query i
//                   (FP32: ε-scaled Gaussian or another source; int8: sparse uniform integers,
//                   or ±1 of one layer restored from its copy in Poor Man's Training's int8
//                   executor), k ∈ {+1, −1, −2, …}
//   probe(i, side)  a forward pass at the current θ, keeping what estimate(i) needs; the backprop
//                   part takes its activations from the last kMinus probe
//   estimate(i, s)  the projected gradient g_i of query i from its last kPlus and kMinus probes,
//                   taken s·ε apart (FP32: the clipped finite difference / (s·ε); int8: the
//                   sign, float or integer-only; int8 layer-wise: the loss difference, μ = 1)
//   update(g, r)    the update θ_{1..C} −= η · (1/q) Σ_i g_i z_i, with r · z_{q−1} merged into it
//                   (the restore of the last query, as ElasticZO merges restore and update)
//   probe_all(q)    P-RGE's batched probes, when the run asks for them (zo.batched): the + and
//                   − passes of queries 0..q−1 as one forward over 2q replicas, θ untouched;
//                   estimate(i, 2) then reads query i's pair and the backprop part the last
//                   query's − replica. Returns false (nothing done) otherwise.
//   blocks(), block_size(b), select_block(b)   layer-wise estimation: θ_{1..C} as blocks (one
//                   per ZO layer); after select_block(b) perturb and update act on block b
//                   alone (z_i restricted to it), select_block(−1) on all of θ_{1..C} again.
//                   An executor without blocks is one block.
//   block_nodes(b), active_nodes(b), samples(), probe_nodes(b, i), update_nodes(b, q, s)
//                   node perturbation, where the executor offers it for block b (block_nodes(b)
//                   > 0: its outputs per sample; 0: weights only): probe_nodes runs a pass whose
//                   block-b outputs are perturbed by ε ξ_{i,n}, independently per sample n (the
//                   inactive nodes left alone; active_nodes(b) counts the others per sample,
//                   after the clean probe), keeping each sample's loss; update_nodes forms the
//                   node gradient (1/(n q)) Σ_i Σ_n (ℓ_{i,n} − ℓ_n)/ε ξ_{i,n} against the clean
//                   probe's per-sample losses ℓ_n, maps it to the block's weights by the local
//                   chain rule and steps θ_b −= η · s · ĝ_b.
//   clean_pass_last()  true when a backprop part follows the step and reads the activations of
//                   the step's last forward pass: an estimator whose clean (kMinus) probe is not
//                   its last pass then probes clean once more, at the unperturbed θ, before the
//                   update.
// The estimator decides which probes a step takes, in which order, and with how many queries q.
// A new estimator is one file in src/train/estimators/, one entry in config::estimators() (what
// it supports) and one line in make_estimator (src/train/zo_estimator.cpp).
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "zotrain/config/methods.hpp"
#include "zotrain/kernels/perturb.hpp"
#include "zotrain/kernels/perturb_s8.hpp"

namespace zt::train {

inline constexpr int kMaxQueries = config::kMaxZoQueries;

enum class ProbeSide { kPlus, kMinus };

class ZoExecutor {
 public:
  virtual ~ZoExecutor() = default;
  virtual void perturb(int query, int k) = 0;
  virtual void probe(int query, ProbeSide side) = 0;
  virtual double estimate(int query, int span) = 0;
  virtual void update(std::span<const double> g, int restore) = 0;  // g.size() = queries
  virtual bool probe_all(int /*queries*/) { return false; }
  virtual int blocks() const { return 1; }
  virtual std::size_t block_size(int /*b*/) const { return 0; }  // parameters; 0 = unknown
  virtual void select_block(int /*b*/) {}
  virtual bool clean_pass_last() const { return false; }
  virtual std::size_t block_nodes(int /*b*/) const { return 0; }
  virtual double active_nodes(int /*b*/) const { return 0; }
  virtual int samples() const { return 1; }
  virtual void probe_nodes(int /*b*/, int /*query*/) {}
  virtual void update_nodes(int /*b*/, int /*queries*/, double /*scale*/) {}
};

class ZoEstimator {
 public:
  virtual ~ZoEstimator() = default;
  virtual int queries() const = 0;
  // One ZO step; writes g_i of each query into g (g.size() ≥ queries()).
  virtual void step(ZoExecutor& ex, std::span<double> g) const = 0;
};

// The estimator of zo.estimator (its capabilities: config::estimators()). Throws zt::Error for
// queries outside [1, kMaxQueries].
std::unique_ptr<ZoEstimator> make_estimator(config::Estimator estimator, int queries);

// The kernels behind zo.perturbation: the FP32 source, and int8 layer-wise ±1 signs (a source
// without signs, config::PerturbationInfo::signs, maps to Rademacher there).
kernels::PerturbSource perturb_source(config::Perturbation p);
kernels::SignSource sign_source(config::Perturbation p);

}  // namespace zt::train
