#include "zotrain/train/zo_estimator.hpp"

#include <string>

#include "zotrain/core/error.hpp"

namespace zt::train {

// Each estimator's factory (src/train/estimators/<name>.cpp).
std::unique_ptr<ZoEstimator> make_two_sided(int queries);
std::unique_ptr<ZoEstimator> make_one_sided(int queries);
std::unique_ptr<ZoEstimator> make_layerwise(int queries);

std::unique_ptr<ZoEstimator> make_estimator(config::Estimator estimator, int queries) {
  if (queries < 1 || queries > kMaxQueries) {
    throw Error("zo.queries: " + std::to_string(queries) + ", expected 1.." +
                std::to_string(kMaxQueries));
  }
  switch (estimator) {
    case config::Estimator::kTwoSided: return make_two_sided(queries);
    case config::Estimator::kOneSided: return make_one_sided(queries);
    case config::Estimator::kLayerwise: return make_layerwise(queries);
  }
  ZT_CHECK(false);
  return nullptr;
}

kernels::PerturbSource perturb_source(config::Perturbation p) {
  using S = kernels::PerturbSource;
  switch (p) {
    case config::Perturbation::kGaussian: return S::kGaussian;
    case config::Perturbation::kRademacher: return S::kRademacher;
    case config::Perturbation::kUniform: return S::kUniform;
    case config::Perturbation::kXorshift: return S::kXorshift;
    case config::Perturbation::kPezoPool: return S::kPezoPool;
    case config::Perturbation::kPezoOnTheFly: return S::kPezoOnTheFly;
  }
  ZT_CHECK(false);
  return S::kGaussian;
}

kernels::SignSource sign_source(config::Perturbation p) {
  return p == config::Perturbation::kXorshift ? kernels::SignSource::kXorshift
                                              : kernels::SignSource::kRademacher;
}

}  // namespace zt::train
