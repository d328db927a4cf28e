// The ZO estimator seam: the registry, the exact probe plan of two_sided for one and for
// several queries (what a ZoExecutor is asked, in order), and what the estimate is worth on a
// quadratic, where the two-sided difference is exact: unbiased for every perturbation source,
// with the second moment the theory gives.
#include "zotrain/train/zo_estimator.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "zotrain/core/error.hpp"
#include "zotrain/kernels/perturb.hpp"

namespace zt::train {
namespace {

// Records the calls; g_i = 10·(i + 1).
class Recorder final : public ZoExecutor {
 public:
  void perturb(int q, int k) override {
    log.push_back("perturb " + std::to_string(q) + " " + std::to_string(k));
  }
  void probe(int q, ProbeSide s) override {
    log.push_back("probe " + std::to_string(q) + (s == ProbeSide::kPlus ? " +" : " -"));
  }
  double estimate(int q, int span) override {
    log.push_back("estimate " + std::to_string(q) + " " + std::to_string(span));
    return 10.0 * (q + 1);
  }
  void update(std::span<const double> g, int restore) override {
    std::string s = "update";
    for (double v : g) s += " " + std::to_string(static_cast<int>(v));
    log.push_back(s + " restore " + std::to_string(restore));
  }
  std::vector<std::string> log;
};

TEST(ZoEstimator, TwoSidedOneQueryIsThePapersStep) {
  const auto e = make_estimator(config::Estimator::kTwoSided, 1);
  Recorder r;
  std::array<double, kMaxQueries> g{};
  e->step(r, g);
  EXPECT_EQ(r.log, (std::vector<std::string>{"perturb 0 1", "probe 0 +", "perturb 0 -2",
                                             "probe 0 -", "estimate 0 2", "update 10 restore 1"}));
  EXPECT_EQ(g[0], 10.0);
}

TEST(ZoEstimator, TwoSidedRestoresEveryQueryButTheLast) {
  const auto e = make_estimator(config::Estimator::kTwoSided, 3);
  EXPECT_EQ(e->queries(), 3);
  Recorder r;
  std::array<double, kMaxQueries> g{};
  e->step(r, g);
  const std::vector<std::string> want = {
      "perturb 0 1", "probe 0 +", "perturb 0 -2", "probe 0 -", "estimate 0 2", "perturb 0 1",
      "perturb 1 1", "probe 1 +", "perturb 1 -2", "probe 1 -", "estimate 1 2", "perturb 1 1",
      "perturb 2 1", "probe 2 +", "perturb 2 -2", "probe 2 -", "estimate 2 2",
      "update 10 20 30 restore 1"};
  EXPECT_EQ(r.log, want);
}

// One-sided: the clean pass last for one query (a trainer's backprop reads the last − probe),
// first and once for several.
TEST(ZoEstimator, OneSidedProbesTheCleanLossOnce) {
  Recorder r1;
  std::array<double, kMaxQueries> g{};
  make_estimator(config::Estimator::kOneSided, 1)->step(r1, g);
  EXPECT_EQ(r1.log, (std::vector<std::string>{"perturb 0 1", "probe 0 +", "perturb 0 -1",
                                              "probe 0 -", "estimate 0 1", "update 10 restore 0"}));
  Recorder r3;
  make_estimator(config::Estimator::kOneSided, 3)->step(r3, g);
  EXPECT_EQ(r3.log, (std::vector<std::string>{
                        "probe 0 -", "perturb 0 1", "probe 0 +", "estimate 0 1", "perturb 0 -1",
                        "perturb 1 1", "probe 1 +", "estimate 1 1", "perturb 1 -1", "perturb 2 1",
                        "probe 2 +", "estimate 2 1", "update 10 20 30 restore -1"}));
}

TEST(ZoEstimator, RegistryNamesTheChoices) {
  for (const config::EstimatorInfo& i : config::estimators()) EXPECT_EQ(make_estimator(i.id, 2)->queries(), 2);
  EXPECT_THROW(make_estimator(config::Estimator::kTwoSided, 0), Error);
  EXPECT_THROW(make_estimator(config::Estimator::kTwoSided, kMaxQueries + 1), Error);
  try {
    (void)config::estimator("one_sided_typo");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("two_sided"), std::string::npos) << e.what();
  }
}

// Every registry entry of zo.perturbation has its kernel source, under the same name.
TEST(ZoEstimator, EveryPerturbationEntryMapsToItsKernelSource) {
  for (const config::PerturbationInfo& p : config::perturbations()) {
    EXPECT_STREQ(kernels::perturb_source_name(perturb_source(p.id)), p.name);
    if (p.signs && p.precisions.int8) {
      EXPECT_EQ(sign_source(p.id), p.id == config::Perturbation::kXorshift
                                       ? kernels::SignSource::kXorshift
                                       : kernels::SignSource::kRademacher);
    }
  }
}

// f(θ) = ½ Σ a_j θ_j² + Σ b_j θ_j, ∇f = a∘θ + b. The executor perturbs θ by ε·z_i with the
// directions set before the step, and its update records ĝ = (1/q) Σ g_i z_i (merging the last
// restore, so θ is back where it was).
class Quadratic final : public ZoExecutor {
 public:
  static constexpr double kEps = 1e-3;
  explicit Quadratic(int d) : a(d), b(d), theta(d) {
    for (int j = 0; j < d; ++j) {
      a[j] = 1.0 + 0.5 * j;
      b[j] = 0.3 * (j % 3) - 0.4;
      theta[j] = 0.1 * j - 0.25;
    }
  }
  std::vector<double> grad() const {
    std::vector<double> g(a.size());
    for (std::size_t j = 0; j < a.size(); ++j) g[j] = a[j] * theta[j] + b[j];
    return g;
  }
  double f() const {
    double v = 0;
    for (std::size_t j = 0; j < a.size(); ++j) v += 0.5 * a[j] * theta[j] * theta[j] + b[j] * theta[j];
    return v;
  }
  void perturb(int q, int k) override {
    for (std::size_t j = 0; j < a.size(); ++j) theta[j] += k * kEps * z[q][j];
  }
  void probe(int, ProbeSide side) override { (side == ProbeSide::kPlus ? f_plus : f_minus) = f(); }
  double estimate(int, int span) override { return (f_plus - f_minus) / (span * kEps); }
  void update(std::span<const double> g, int restore) override {
    perturb(static_cast<int>(g.size()) - 1, restore);
    ghat.assign(a.size(), 0.0);
    for (std::size_t i = 0; i < g.size(); ++i)
      for (std::size_t j = 0; j < a.size(); ++j) ghat[j] += g[i] * z[i][j] / g.size();
  }
  std::vector<double> a, b, theta, ghat;
  std::vector<std::vector<double>> z;
  double f_plus = 0, f_minus = 0;
};

double norm2(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return s;
}

std::vector<double> signs(int d, unsigned pattern) {
  std::vector<double> z(static_cast<std::size_t>(d));
  for (int j = 0; j < d; ++j) z[static_cast<std::size_t>(j)] = (pattern >> j) & 1 ? -1.0 : 1.0;
  return z;
}

// Over all 2^d Rademacher directions the estimate averages to the gradient exactly, and its
// second moment is (d + q − 1)/q · ‖∇f‖² for q = 1 and q = 2 (all pairs of directions). The
// one-sided difference adds the curvature term c = (ε/2) zᵀAz = (ε/2) tr A (the same for every
// sign vector, A diagonal): still unbiased, second moment + d c²/q.
TEST(ZoEstimator, RademacherEnumerationIsUnbiasedWithTheTheorysSecondMoment) {
  constexpr int d = 6;
  Quadratic quad(d);
  const std::vector<double> grad = quad.grad(), theta0 = quad.theta;
  std::array<double, kMaxQueries> g{};
  for (const char* name : {"two_sided", "one_sided"})
  for (int q : {1, 2}) {
    SCOPED_TRACE(name);
    const auto est = make_estimator(config::estimator(name).id, q);
    std::vector<double> mean(d, 0.0);
    double second = 0;
    const unsigned patterns = 1u << (d * q);
    for (unsigned p = 0; p < patterns; ++p) {
      quad.z.clear();
      for (int i = 0; i < q; ++i) quad.z.push_back(signs(d, (p >> (d * i)) & ((1u << d) - 1)));
      est->step(quad, g);
      for (int j = 0; j < d; ++j) mean[j] += quad.ghat[j] / patterns;
      second += norm2(quad.ghat) / patterns;
      for (int j = 0; j < d; ++j) ASSERT_NEAR(quad.theta[j], theta0[j], 1e-12) << "restored";
    }
    double trace = 0;
    for (double a : quad.a) trace += a;
    const double c = std::string(name) == "one_sided" ? Quadratic::kEps / 2 * trace : 0.0;
    for (int j = 0; j < d; ++j) EXPECT_NEAR(mean[j], grad[j], 1e-7) << "q " << q << " j " << j;
    EXPECT_NEAR(second, (d + q - 1.0) / q * norm2(grad) + d * c * c / q, 1e-6 * norm2(grad))
        << "q " << q;
  }
}

// Each perturbation source, drawn by its kernel from the step seed: the mean of many one-query
// estimates approaches the gradient (a source whose variance were not 1 would scale it).
TEST(ZoEstimator, EverySourceIsUnbiasedOnAQuadratic) {
  constexpr int d = 8, kSteps = 20000;
  const auto est = make_estimator(config::Estimator::kTwoSided, 1);
  std::array<double, kMaxQueries> g{};
  for (auto s : {kernels::PerturbSource::kGaussian, kernels::PerturbSource::kRademacher,
                 kernels::PerturbSource::kUniform, kernels::PerturbSource::kXorshift}) {
    Quadratic quad(d);
    const std::vector<double> grad = quad.grad();
    const auto fill = kernels::select_fill_f32(s, kernels::best_isa());
    std::vector<double> sum(d, 0.0), sum2(d, 0.0);
    std::vector<float> z(d);
    for (int step = 0; step < kSteps; ++step) {
      fill(z.data(), d, 1000 + static_cast<std::uint64_t>(step), 0, 0);
      quad.z.assign(1, std::vector<double>(z.begin(), z.end()));
      est->step(quad, g);
      for (int j = 0; j < d; ++j) {
        sum[j] += quad.ghat[j];
        sum2[j] += quad.ghat[j] * quad.ghat[j];
      }
    }
    for (int j = 0; j < d; ++j) {
      const double mean = sum[j] / kSteps;
      const double sd = std::sqrt(sum2[j] / kSteps - mean * mean);
      EXPECT_NEAR(mean, grad[j], 5 * sd / std::sqrt(double(kSteps)))
          << kernels::perturb_source_name(s) << " j " << j;
    }
  }
}

// ---- layer-wise (Poor Man's Training) ------------------------------------------------------

// The quadratic above in two blocks, θ_0..θ_1 and θ_2..θ_5: perturb and update act on the
// selected block only; update records ĝ_b = (1/q) Σ g_i z_{i,b} on that block.
class BlockedQuadratic final : public ZoExecutor {
 public:
  explicit BlockedQuadratic(Quadratic& q) : quad(q), ghat(q.a.size(), 0.0) {}
  int blocks() const override { return 2; }
  std::size_t block_size(int b) const override { return b == 0 ? 2 : 4; }
  void select_block(int b) override {
    log.push_back("select " + std::to_string(b));
    if (b < 0) {
      lo = 0, hi = quad.a.size();
    } else {
      lo = b == 0 ? 0 : 2, hi = b == 0 ? 2 : quad.a.size();
    }
  }
  void perturb(int q, int k) override {
    for (std::size_t j = lo; j < hi; ++j) quad.theta[j] += k * Quadratic::kEps * quad.z[q][j];
  }
  void probe(int, ProbeSide side) override {
    log.push_back(side == ProbeSide::kPlus ? "probe +" : "probe -");
    (side == ProbeSide::kPlus ? quad.f_plus : quad.f_minus) = quad.f();
  }
  double estimate(int, int span) override {
    return (quad.f_plus - quad.f_minus) / (span * Quadratic::kEps);
  }
  void update(std::span<const double> g, int restore) override {
    log.push_back("update restore " + std::to_string(restore));
    for (std::size_t i = 0; i < g.size(); ++i)
      for (std::size_t j = lo; j < hi; ++j) ghat[j] += g[i] * quad.z[i][j] / g.size();
  }
  Quadratic& quad;
  std::vector<double> ghat;
  std::vector<std::string> log;
  std::size_t lo = 0, hi = 0;
};

// Over all sign vectors the layer-wise estimate of block b averages to K/(K + d_b − 1) times
// the gradient on b (K = q; the one-sided curvature term cancels for symmetric directions), the
// weights come back exactly, and the step is one clean probe, then q + probes per block, then
// the updates of both blocks.
TEST(ZoEstimator, LayerwiseIsTheGradientScaledPerBlock) {
  constexpr int d = 6;
  for (int q : {1, 2}) {
    Quadratic quad(d);
    const std::vector<double> grad = quad.grad(), theta0 = quad.theta;
    const auto est = make_estimator(config::Estimator::kLayerwise, q);
    std::array<double, kMaxQueries> g{};
    std::vector<double> mean(d, 0.0);
    const unsigned patterns = 1u << (d * q);
    for (unsigned p = 0; p < patterns; ++p) {
      quad.z.clear();
      for (int i = 0; i < q; ++i) quad.z.push_back(signs(d, (p >> (d * i)) & ((1u << d) - 1)));
      BlockedQuadratic ex(quad);
      est->step(ex, g);
      for (int j = 0; j < d; ++j) mean[j] += ex.ghat[j] / patterns;
      for (int j = 0; j < d; ++j) ASSERT_NEAR(quad.theta[j], theta0[j], 1e-12) << "restored";
      if (p == 0) {
        std::vector<std::string> want = {"probe -"};
        for (int b = 0; b < 2; ++b) {
          want.push_back("select " + std::to_string(b));
          for (int i = 0; i < q; ++i) want.push_back("probe +");
        }
        for (const char* b : {"select 0", "update restore 0", "select 1", "update restore 0",
                              "select -1"})
          want.push_back(b);
        EXPECT_EQ(ex.log, want) << "q " << q;
      }
    }
    for (int j = 0; j < d; ++j) {
      const double db = j < 2 ? 2.0 : 4.0;
      EXPECT_NEAR(mean[j], q / (q + db - 1.0) * grad[j], 1e-7) << "q " << q << " j " << j;
    }
  }
}

}  // namespace
}  // namespace zt::train
