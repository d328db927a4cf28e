// The registries of training methods and of the zo.* choices (estimator, perturbation source,
// preset): one list each drives the config's choices, its cross-key compatibility errors
// (src/config/config_zo.cpp generates them from the capabilities stated here), the CLI's help
// text, `zotrain bench` and the parametrised tests. They live in the config layer (below
// everything that trains) because the config validates these names; they hold no code, only
// what each entry is and supports. The code behind an entry is selected by its enum
// (train/zo_estimator.hpp: make_estimator, perturb_source).
#pragma once

#include <string>
#include <string_view>
#include <utility>
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

// ---- zo.estimator ----------------------------------------------------------------------------

// Which zo.perturbation sources an estimator takes on one precision.
enum class SourceNeed {
  kAny,    // any source available on the precision (PerturbationInfo::precisions)
  kSigns,  // a ±1 source available on the precision (PerturbationInfo::signs)
  kOwn,    // none: the precision draws its own direction, zo.perturbation stays at its default
};
// What an estimator supports on one precision.
struct EstimatorSupport {
  bool available;    // the estimator exists on this precision
  int max_queries;   // zo.queries in [1, max_queries]
  bool batched;      // zo.batched: all 2q probes as one forward (P-RGE)
  SourceNeed source;
  const char* why_queries;  // the reasons behind max_queries and source, for errors ("" = none)
  const char* why_source;
};
struct EstimatorInfo {
  Estimator id;             // its position in estimators()
  const char* name;         // config value of zo.estimator
  const char* summary;      // for --help
  EstimatorSupport fp32, int8;
  bool node_perturbation;   // zo.node_perturbation possible (layer-wise blocks)
  const EstimatorSupport& on(Precision p) const { return p == Precision::kInt8 ? int8 : fp32; }
};
const std::vector<EstimatorInfo>& estimators();  // in Estimator order
const EstimatorInfo& estimator(Estimator e);
const EstimatorInfo& estimator(std::string_view name);  // throws zt::Error naming the choices
// One line of what it supports per precision, for --help.
std::string supports_text(const EstimatorInfo& e);

// ---- zo.perturbation --------------------------------------------------------------------------

struct PerturbationInfo {
  Perturbation id;        // its position in perturbations()
  const char* name;       // config value of zo.perturbation
  const char* summary;    // for --help
  Precisions precisions;  // where it can be the direction z
  bool per_element;       // z_i depends on (seed, stream, i) alone: node perturbation can use it
  bool signs;             // its values are ±1
};
const std::vector<PerturbationInfo>& perturbations();  // in Perturbation order
const PerturbationInfo& perturbation(Perturbation p);
const PerturbationInfo& perturbation(std::string_view name);  // throws zt::Error naming the choices

// ---- zo.preset --------------------------------------------------------------------------------

// A named set of zo.* values (the method of one paper). The loader applies them to the keys the
// file and --set did not give, so explicit keys override a preset.
struct PresetInfo {
  Preset id;              // its position in presets()
  const char* name;       // config value of zo.preset
  const char* summary;    // for --help
  Precisions precisions;  // where the preset applies
  std::vector<std::pair<std::string_view, std::string_view>> values;  // key, JSON value
};
const std::vector<PresetInfo>& presets();  // in Preset order
const PresetInfo& preset(Preset p);
std::string supports_text(const PresetInfo& p);  // its precisions, for --help

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
