// The registry of training methods: one list drives the config's choices for method.name, the
// partition rule, the CLI's help text, `zotrain bench --method` and the parametrised tests.
// It lives in the config layer (below everything that trains) because the config validates
// method names; it holds no code, only what each method is.
#pragma once

#include <string>
#include <vector>

#include "zotrain/config/options.hpp"

namespace zt::config {

// Which partition points C a method allows, for a network with L parametric layers.
enum class PartitionRule {
  kNone,     // C = 0: everything by backprop
  kAll,      // C = L: everything by ZO
  kBetween,  // 0 < C < L, from method.partition
};

struct MethodInfo {
  Method id;            // its position in methods()
  const char* name;     // config value of method.name
  const char* summary;  // one line for --help
  PartitionRule rule;
};

const std::vector<MethodInfo>& methods();  // in Method order
const MethodInfo& method(Method m);

// The most directions a ZO step may probe (zo.queries; train/zo_estimator.hpp).
inline constexpr int kMaxZoQueries = 64;

// The paper's four settings by short key (zotrain bench, the digest tests): a method with its
// partition point, C = partition(L).
struct NamedSetting {
  const char* key;    // full_bp, full_zo, cls1, cls2
  const char* label;  // as in the paper's tables
  Method method;
  int (*partition)(int L);
};
const std::vector<NamedSetting>& named_settings();
const NamedSetting* find_named_setting(const std::string& key);  // nullptr if unknown
std::string named_setting_keys();                                 // "full_bp, full_zo, cls1, cls2"

}  // namespace zt::config
