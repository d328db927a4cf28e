#include "zotrain/train/method.hpp"

namespace zt::train {

const std::vector<MethodInfo>& methods() {
  static const std::vector<MethodInfo> kMethods = {
      {"full_bp", "Full BP: every layer by backprop + SGD/Adam (the baseline; C = 0)", "0"},
      {"full_zo", "Full ZO: every layer by zeroth-order SPSA with the seed trick (C = L)", "L"},
      {"elastic_zo",
       "ElasticZO: first C parametric layers by ZO, the last L-C by backprop (0 < C < L)",
       "0<C<L"},
  };
  return kMethods;
}

const MethodInfo* find_method(const std::string& name) {
  for (const MethodInfo& m : methods())
    if (name == m.name) return &m;
  return nullptr;
}

}  // namespace zt::train
