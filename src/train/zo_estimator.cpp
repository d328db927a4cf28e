#include "zotrain/train/zo_estimator.hpp"

#include <string>

#include "zotrain/core/error.hpp"

namespace zt::train {

// Each estimator's factory (src/train/estimators/<name>.cpp).
std::unique_ptr<ZoEstimator> make_two_sided(int queries);
std::unique_ptr<ZoEstimator> make_one_sided(int queries);
std::unique_ptr<ZoEstimator> make_layerwise(int queries);

const std::vector<EstimatorInfo>& estimators() {
  static const std::vector<EstimatorInfo> kEstimators = {
      {"two_sided",
       "two-sided SPSA: L(theta + eps z) and L(theta - eps z) per query, g = their difference / "
       "(2 eps) (the paper's)",
       &make_two_sided},
      {"one_sided",
       "one-sided: L(theta + eps z) per query against one clean L(theta), g = their difference / "
       "eps (Poor Man's Training's)",
       &make_one_sided},
      {"layerwise",
       "Poor Man's Training's layer-wise one-sided estimate: each ZO layer probed alone with q "
       "directions against one clean pass, all updated together, each step scaled by q / (q + "
       "d_layer - 1); with zo.node_perturbation, fully connected layers through their outputs "
       "(FP32)",
       &make_layerwise},
  };
  return kEstimators;
}

std::unique_ptr<ZoEstimator> make_estimator(std::string_view name, int queries) {
  if (queries < 1 || queries > kMaxQueries) {
    throw Error("zo.queries: " + std::to_string(queries) + ", expected 1.." +
                std::to_string(kMaxQueries));
  }
  std::string names;
  for (const EstimatorInfo& e : estimators()) {
    if (name == e.name) return e.make(queries);
    names += (names.empty() ? "" : ", ") + std::string(e.name);
  }
  throw Error("zo.estimator: unknown estimator '" + std::string(name) + "', expected one of " +
              names);
}

}  // namespace zt::train
