#include "zotrain/config/methods.hpp"

#include "registry.hpp"

namespace zt::config {

using detail::find_named;

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

// ---- zo.* registries ----------------------------------------------------------------------------

namespace {
// ElasticZO-INT8's limits, shared by the estimators that run on its executor.
constexpr EstimatorSupport kInt8Own{
    true, 1, false, SourceNeed::kOwn,
    "ElasticZO-INT8 takes 1 query per step (its rounded update cannot restore earlier queries "
    "exactly); zo.estimator layerwise (zo.preset pmt) takes any number",
    "ElasticZO-INT8 draws its own sparse uniform integer perturbation (int8.r_max, int8.p_zero), "
    "so zo.perturbation applies to FP32 and to zo.estimator layerwise (rademacher, xorshift)"};
constexpr EstimatorSupport kFp32Any{true, kMaxZoQueries, false, SourceNeed::kAny, "", ""};
}  // namespace

const std::vector<EstimatorInfo>& estimators() {
  static const std::vector<EstimatorInfo> kEstimators = {
      {Estimator::kTwoSided, "two_sided",
       "two-sided SPSA: L(theta + eps z) and L(theta - eps z) per query, g = their difference / "
       "(2 eps) (the paper's)",
       {true, kMaxZoQueries, true, SourceNeed::kAny, "", ""}, kInt8Own, false},
      {Estimator::kOneSided, "one_sided",
       "one-sided: L(theta + eps z) per query against one clean L(theta), g = their difference / "
       "eps (Poor Man's Training's)",
       kFp32Any, kInt8Own, false},
      {Estimator::kLayerwise, "layerwise",
       "Poor Man's Training's layer-wise one-sided estimate: each ZO layer probed alone with q "
       "directions against one clean pass, all updated together, each step scaled by q / (q + "
       "d_layer - 1); with zo.node_perturbation, fully connected layers through their outputs "
       "(FP32)",
       kFp32Any,
       {true, kMaxZoQueries, false, SourceNeed::kSigns, "",
        "int8 layer-wise estimation perturbs int8 weights by +-1 (zo.preset pmt sets rademacher; "
        "xorshift is Poor Man's Training's generator)"},
       true},
  };
  return kEstimators;
}
const EstimatorInfo& estimator(Estimator e) { return estimators()[static_cast<std::size_t>(e)]; }
std::string_view name(Estimator e) { return estimator(e).name; }
const EstimatorInfo& estimator(std::string_view name) {
  return find_named(estimators(), name, "zo.estimator");
}

const std::vector<PerturbationInfo>& perturbations() {
  static const std::vector<PerturbationInfo> kPerturbations = {
      {Perturbation::kGaussian, "gaussian", "N(0, 1) (the paper's)", kFp32Only, true, false},
      {Perturbation::kRademacher, "rademacher", "+-1", kBothPrecisions, true, true},
      {Perturbation::kUniform, "uniform", "sqrt(3) U(-1, 1)", kFp32Only, true, false},
      {Perturbation::kXorshift, "xorshift", "+-1 from Poor Man's Training's xorshift32",
       kBothPrecisions, true, true},
      {Perturbation::kPezoPool, "pezo_pool", "PeZO's pool of zo.pool_size numbers", kFp32Only,
       false, false},
      {Perturbation::kPezoOnTheFly, "pezo_onthefly",
       "PeZO's zo.rngs rotated zo.rng_bits-bit generators", kFp32Only, false, false},
  };
  return kPerturbations;
}
const PerturbationInfo& perturbation(Perturbation p) {
  return perturbations()[static_cast<std::size_t>(p)];
}
std::string_view name(Perturbation p) { return perturbation(p).name; }
const PerturbationInfo& perturbation(std::string_view name) {
  return find_named(perturbations(), name, "zo.perturbation");
}

namespace {
std::string precisions_text(Precisions p) {
  return p.fp32 && p.int8 ? "fp32 and int8" : p.fp32 ? "fp32" : "int8";
}
std::string support_text(const EstimatorSupport& s, const char* precision) {
  if (!s.available) return "no";
  std::string t = s.max_queries == 1 ? "q = 1" : "q <= " + std::to_string(s.max_queries);
  if (s.batched) t += ", batched probes";
  switch (s.source) {
    case SourceNeed::kAny: t += std::string(", any ") + precision + " source"; break;
    case SourceNeed::kSigns: t += ", +-1 sources"; break;
    case SourceNeed::kOwn: t += ", its own perturbation"; break;
  }
  return t;
}
}  // namespace

std::string supports_text(const EstimatorInfo& e) {
  return "fp32: " + support_text(e.fp32, "fp32") + "; int8: " + support_text(e.int8, "int8") +
         (e.node_perturbation ? "; zo.node_perturbation" : "");
}
std::string supports_text(const PresetInfo& p) { return precisions_text(p.precisions); }

const std::vector<PresetInfo>& presets() {
  static const std::vector<PresetInfo> kPresets = {
      {Preset::kMezo, "mezo",
       "MeZO's and ElasticZO's: two-sided, one Gaussian direction per step (default)",
       kBothPrecisions,
       {{"zo.estimator", "\"two_sided\""}, {"zo.queries", "1"}, {"zo.perturbation", "\"gaussian\""},
        {"zo.batched", "false"}}},
      {Preset::kPezoPool, "pezo_pool",
       "PeZO, pre-generated: directions read from a pool of 4095 norm-matched numbers", kFp32Only,
       {{"zo.estimator", "\"two_sided\""}, {"zo.queries", "1"},
        {"zo.perturbation", "\"pezo_pool\""}, {"zo.pool_size", "4095"}, {"zo.pezo_pow2", "false"}}},
      {Preset::kPezoOnTheFly, "pezo_onthefly",
       "PeZO, on the fly: 31 rotated 8-bit generators, chunks scaled by a power of two", kFp32Only,
       {{"zo.estimator", "\"two_sided\""}, {"zo.queries", "1"},
        {"zo.perturbation", "\"pezo_onthefly\""}, {"zo.rngs", "31"}, {"zo.rng_bits", "8"},
        {"zo.pezo_pow2", "true"}}},
      {Preset::kPrge, "prge",
       "P-RGE: 4 Gaussian queries per step, their 8 passes as one batched forward (P-RGE keeps "
       "q x batch fixed: pair it with train.batch_size = 32 / 4)",
       kFp32Only,
       {{"zo.estimator", "\"two_sided\""}, {"zo.queries", "4"}, {"zo.perturbation", "\"gaussian\""},
        {"zo.batched", "true"}}},
      {Preset::kPmt, "pmt",
       "Poor Man's Training (weight perturbation): each ZO layer probed alone with 4 "
       "Rademacher directions against one clean pass, updates scaled by q / (q + d_layer - 1); "
       "int8: +-1 probes of the int8 weights and the quantisation-aware step eta / s^2 (default "
       "eta 1 Full ZO, 0.3 with backprop)",
       kBothPrecisions,
       {{"zo.estimator", "\"layerwise\""}, {"zo.queries", "4"},
        {"zo.perturbation", "\"rademacher\""}, {"zo.batched", "false"}}},
  };
  return kPresets;
}
const PresetInfo& preset(Preset p) { return presets()[static_cast<std::size_t>(p)]; }
std::string_view name(Preset p) { return preset(p).name; }

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
