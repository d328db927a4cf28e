#include "zotrain/config/methods.hpp"

namespace zt::config {

const std::vector<MethodInfo>& methods() {
  static const std::vector<MethodInfo> kMethods = {
      {Method::kFullBp, "full_bp", "Full BP: every layer by backprop + SGD/Adam (the baseline; C = 0)",
       PartitionRule::kNone},
      {Method::kFullZo, "full_zo", "Full ZO: every layer by zeroth-order SPSA with the seed trick (C = L)",
       PartitionRule::kAll},
      {Method::kElasticZo, "elastic_zo",
       "ElasticZO: first C parametric layers by ZO, the last L-C by backprop (C = 0 / L: Full BP / ZO)",
       PartitionRule::kBetween},
  };
  return kMethods;
}

const MethodInfo& method(Method m) { return methods()[static_cast<std::size_t>(m)]; }
std::string_view name(Method m) { return method(m).name; }

const std::vector<NamedSetting>& named_settings() {
  static const std::vector<NamedSetting> kSettings = {
      {"full_bp", "Full BP", Method::kFullBp, [](int) { return 0; }},
      {"full_zo", "Full ZO", Method::kFullZo, [](int L) { return L; }},
      {"cls1", "ElasticZO Cls1", Method::kElasticZo, [](int L) { return L - 2; }},  // ZO-Feat-Cls1
      {"cls2", "ElasticZO Cls2", Method::kElasticZo, [](int L) { return L - 1; }},  // ZO-Feat-Cls2
  };
  return kSettings;
}

const NamedSetting* find_named_setting(const std::string& key) {
  for (const NamedSetting& s : named_settings())
    if (key == s.key) return &s;
  return nullptr;
}

std::string named_setting_keys() {
  std::string s;
  for (const NamedSetting& n : named_settings()) s += (s.empty() ? "" : ", ") + std::string(n.key);
  return s;
}

}  // namespace zt::config
