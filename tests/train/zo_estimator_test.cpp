// The ZO estimator seam: the registry, and the exact probe plan of two_sided for one and for
// several queries (what a ZoExecutor is asked, in order).
#include "zotrain/train/zo_estimator.hpp"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "zotrain/core/error.hpp"

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
  double estimate(int q) override {
    log.push_back("estimate " + std::to_string(q));
    return 10.0 * (q + 1);
  }
  void update(std::span<const double> g) override {
    std::string s = "update";
    for (double v : g) s += " " + std::to_string(static_cast<int>(v));
    log.push_back(s);
  }
  std::vector<std::string> log;
};

TEST(ZoEstimator, TwoSidedOneQueryIsThePapersStep) {
  const auto e = make_estimator("two_sided", 1);
  Recorder r;
  std::array<double, kMaxQueries> g{};
  e->step(r, g);
  EXPECT_EQ(r.log, (std::vector<std::string>{"perturb 0 1", "probe 0 +", "perturb 0 -2",
                                             "probe 0 -", "estimate 0", "update 10"}));
  EXPECT_EQ(g[0], 10.0);
}

TEST(ZoEstimator, TwoSidedRestoresEveryQueryButTheLast) {
  const auto e = make_estimator("two_sided", 3);
  EXPECT_EQ(e->queries(), 3);
  Recorder r;
  std::array<double, kMaxQueries> g{};
  e->step(r, g);
  const std::vector<std::string> want = {
      "perturb 0 1", "probe 0 +", "perturb 0 -2", "probe 0 -", "estimate 0", "perturb 0 1",
      "perturb 1 1", "probe 1 +", "perturb 1 -2", "probe 1 -", "estimate 1", "perturb 1 1",
      "perturb 2 1", "probe 2 +", "perturb 2 -2", "probe 2 -", "estimate 2", "update 10 20 30"};
  EXPECT_EQ(r.log, want);
}

TEST(ZoEstimator, RegistryNamesTheChoices) {
  for (const EstimatorInfo& i : estimators()) EXPECT_EQ(make_estimator(i.name, 2)->queries(), 2);
  EXPECT_THROW(make_estimator("two_sided", 0), Error);
  EXPECT_THROW(make_estimator("two_sided", kMaxQueries + 1), Error);
  try {
    make_estimator("one_sided_typo", 1);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("two_sided"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace zt::train
