// The zo.* section (src/config/schema.hpp says what lives where): its keys, zo.preset's
// expansion, and the compatibility checks of the zo.* choices, each generated from what the
// registries state an estimator, perturbation source, preset or architecture supports
// (config/methods.hpp, config/catalogue.hpp).
#include <algorithm>

#include "schema.hpp"
#include "zotrain/config/catalogue.hpp"
#include "zotrain/config/methods.hpp"

namespace zt::config::detail {
namespace {

// zo.eps: below kMinEps, eps z is below a float's resolution of the weights (about 1e-7 of
// their size), so theta + eps z == theta and every estimate is noise or 0; above kMaxEps the
// perturbation dwarfs the weights (LeNet-5's are about 0.1) and the float rounding of
// theta + eps z - eps z no longer gives back theta (at 1e30 it gives 0).
constexpr double kMinEps = 1e-9, kMaxEps = 1;

std::string why(const char* reason) { return *reason ? std::string(": ") + reason : ""; }

// Checks that involve more than one zo.* key (single keys are checked as they are applied).
void check_zo(const ExperimentConfig& cfg, const std::string& origin) {
  const Precision p = cfg.model.precision;
  const std::string prec = "model.precision " + std::string(name(p));
  const PresetInfo& pre = preset(cfg.zo.preset);
  const EstimatorInfo& est = estimator(cfg.zo.estimator);
  const EstimatorSupport& on = est.on(p);
  const PerturbationInfo& src = perturbation(cfg.zo.perturbation);
  const ArchInfo& arch = architecture(cfg.model.arch);
  const std::string with_est = prec + " and zo.estimator " + est.name;

  if (!pre.precisions.has(p)) {
    incompatible(cfg, origin, "zo.preset", pre.name, prec,
                 "model.precision " + std::string(name(p)) + " offers zo.preset " +
                     names_where(presets(), [&](const PresetInfo& i) {
                       return i.precisions.has(p);
                     }, " or "));
  }
  if (!on.available) {
    incompatible(cfg, origin, "zo.estimator", est.name, prec,
                 "model.precision " + std::string(name(p)) + " offers zo.estimator " +
                     names_where(estimators(), [&](const EstimatorInfo& i) {
                       return i.on(p).available;
                     }, " or "));
  }
  if (cfg.zo.queries > on.max_queries) {
    incompatible(cfg, origin, "zo.queries", std::to_string(cfg.zo.queries), with_est,
                 std::string(est.name) + " on " + std::string(name(p)) + " takes at most " +
                     std::to_string(on.max_queries) +
                     (on.max_queries == 1 ? " query" : " queries") +
                     " per step" + why(on.why_queries));
  }
  const bool default_source = cfg.zo.perturbation == ZoConfig{}.perturbation;
  switch (on.source) {
    case SourceNeed::kAny:
      if (!src.precisions.has(p)) {
        incompatible(cfg, origin, "zo.perturbation", src.name, with_est,
                     "it needs a source of " + std::string(name(p)) + ": " +
                         names_where(perturbations(), [&](const PerturbationInfo& i) {
                           return i.precisions.has(p);
                         }) + why(on.why_source));
      }
      break;
    case SourceNeed::kSigns:
      if (!src.signs || !src.precisions.has(p)) {
        incompatible(cfg, origin, "zo.perturbation", src.name, with_est,
                     "it needs a +-1 source: zo.perturbation " +
                         names_where(perturbations(), [&](const PerturbationInfo& i) {
                           return i.signs && i.precisions.has(p);
                         }, " or ") + why(on.why_source));
      }
      break;
    case SourceNeed::kOwn:
      if (!default_source) {
        incompatible(cfg, origin, "zo.perturbation", src.name, with_est,
                     std::string(est.name) + " on " + std::string(name(p)) +
                         " takes no zo.perturbation (leave it at its default " +
                         std::string(name(ZoConfig{}.perturbation)) + ")" + why(on.why_source));
      }
      break;
  }
  if (cfg.zo.batched && (!on.batched || arch.batchnorm)) {
    // Only what this config lacks: the estimator and precision, the model, or both.
    std::string fits;
    for (const EstimatorInfo& e : estimators())
      for (const Precision q : {Precision::kFp32, Precision::kInt8})
        if (e.on(q).batched)
          fits += (fits.empty() ? "" : " or ") + std::string("zo.estimator ") + e.name +
                  " with model.precision " + std::string(name(q));
    std::string needs;
    if (!on.batched)
      needs = fits + " (not zo.estimator " + est.name + " with model.precision " +
              std::string(name(p)) + ")";
    if (arch.batchnorm)
      needs += (needs.empty() ? "" : ", and ") + std::string("a model without BatchNorm (") +
               names_where(architectures(), [](const ArchInfo& a) { return !a.batchnorm; },
                           " or ") +
               "; not model.arch " + arch.name + "), whose batch statistics would mix the 2q "
               "replicas";
    incompatible(cfg, origin, "zo.batched", "true",
                 with_est + " and model.arch " + arch.name + (arch.batchnorm ? " (BatchNorm)" : ""),
                 "batched probes need " + needs);
  }
  if (cfg.zo.node_perturbation && !est.node_perturbation) {
    incompatible(cfg, origin, "zo.node_perturbation", "true", "zo.estimator " + std::string(est.name),
                 "it needs zo.estimator " +
                     names_where(estimators(), [](const EstimatorInfo& e) {
                       return e.node_perturbation;
                     }, " or "));
  }
  if (cfg.zo.node_perturbation && !src.per_element) {
    incompatible(cfg, origin, "zo.node_perturbation", "true",
                 "zo.perturbation " + std::string(src.name),
                 "it needs a per-element source (zo.perturbation " +
                     names_where(perturbations(), [](const PerturbationInfo& i) {
                       return i.per_element;
                     }) + ")");
  }
}

// P-RGE keeps q x batch at the 32 of the paper's batch (docs/guide/methods.md).
constexpr std::int64_t kPrgeSamples = 32;
// FP32 layer-wise steps are scaled by q / (q + d_layer - 1): below this η they barely move
// (docs/guide/defaults.md: η 10-30 chosen on validation, docs/results/tuning/pmt-lr.md).
constexpr double kPmtFp32MinLr = 1;

// Preset settings that run but train badly: a warning each.
void warn_zo(ExperimentConfig& cfg) {
  if (cfg.method.name == Method::kFullBp) return;
  if (cfg.zo.preset == Preset::kPrge) {
    const std::int64_t batch = resolve_batch_size(cfg);
    if (batch * cfg.zo.queries != kPrgeSamples && kPrgeSamples % cfg.zo.queries == 0) {
      cfg.warnings.push_back(
          "zo.preset prge with train.batch_size " + std::to_string(batch) + " and zo.queries " +
          std::to_string(cfg.zo.queries) + ": P-RGE keeps q x batch at " +
          std::to_string(kPrgeSamples) + "; pair it with train.batch_size " +
          std::to_string(kPrgeSamples / cfg.zo.queries));
    }
  }
  // Node perturbation trains at η 0.1-3 (chosen on validation; scripts/zo-tradeoffs).
  if (cfg.model.precision == Precision::kFp32 && cfg.zo.estimator == Estimator::kLayerwise &&
      !cfg.zo.node_perturbation && (!cfg.optimizer.lr || *cfg.optimizer.lr < kPmtFp32MinLr)) {
    const std::string lr = cfg.optimizer.lr ? Json(*cfg.optimizer.lr).dump() : "\"auto\"";
    cfg.warnings.push_back(
        "zo.estimator layerwise (zo.preset pmt) on model.precision fp32 with optimizer.lr " + lr +
        " trains the ZO layers next to nothing (its steps are scaled by q / (q + d_layer - 1)); "
        "give optimizer.lr 10 to 30 (docs/guide/defaults.md)");
  }
}

bool no_pool(const ExperimentConfig& c) { return c.zo.perturbation != Perturbation::kPezoPool; }
bool no_onthefly(const ExperimentConfig& c) {
  return c.zo.perturbation != Perturbation::kPezoOnTheFly;
}
bool no_pezo(const ExperimentConfig& c) { return no_pool(c) && no_onthefly(c); }

std::vector<Key> keys() {
  return {
      {"zo.eps", Type::kNumber, ZT_FIELD(zo.eps), closed(kMinEps, kMaxEps), {},
       "FP32 ZO perturbation size epsilon (theta +- eps z); outside [1e-6, 0.1] a warning",
       {}, closed(1e-6, 0.1)},
      {"zo.grad_clip", Type::kNumber, ZT_FIELD(zo.grad_clip), above(0, kMaxNumber), {},
       "clip the projected ZO gradient to [-grad_clip, grad_clip]"},
      {"zo.estimator", Type::kEnum, ZT_ENUM(zo.estimator), {}, names_of(estimators()),
       "ZO estimator (the Estimators list of --help); two_sided is the paper's"},
      {"zo.queries", Type::kInt, ZT_FIELD(zo.queries), closed(1, kMaxZoQueries), {},
       "directions probed per ZO step (q); the update averages their estimates; int8: 1, "
       "except with zo.estimator layerwise"},
      {"zo.batched", Type::kBool, ZT_FIELD(zo.batched), {}, {},
       "P-RGE: run the + and - passes of all queries as one forward over 2q replicas of the "
       "batch, the weights untouched (two_sided, FP32, models without BatchNorm: LeNet-5)"},
      {"zo.cache_direction", Type::kBool, ZT_FIELD(zo.cache_direction), {}, {},
       "draw each step's direction z once into a buffer (FP32: 4 bytes per ZO weight, int8: 1) "
       "and read it back for the - pass and the update instead of regenerating it: the same "
       "bits, z computed once per step instead of three times"},
      {"zo.node_perturbation", Type::kBool, ZT_FIELD(zo.node_perturbation), {}, {},
       "layerwise: estimate a fully connected ZO layer with fewer outputs than weights "
       "by perturbing its outputs, per sample, instead of its weights (Poor Man's Training's "
       "node perturbation; q passes from the next layer on, no extra memory beyond the layer's "
       "input and output of the batch)"},
      {"zo.preset", Type::kEnum, ZT_ENUM(zo.preset), {}, names_of(presets()),
       "named zo.* settings (the Presets list of --help); keys given explicitly override it"},
      {"zo.perturbation", Type::kEnum, ZT_ENUM(zo.perturbation), {}, names_of(perturbations()),
       "where the FP32 direction z comes from: gaussian (the paper's), rademacher (+-1), "
       "uniform (sqrt(3) U(-1, 1)), xorshift (+-1 from Poor Man's Training's xorshift32), "
       "pezo_pool (PeZO's pool of zo.pool_size numbers) or pezo_onthefly (PeZO's zo.rngs "
       "rotated zo.rng_bits-bit generators); int8 draws its own sparse uniform integers, "
       "except with zo.estimator layerwise (rademacher or xorshift: +-1 weight probes)"},
      {"zo.pool_size", Type::kInt, ZT_FIELD(zo.pool_size), closed(1, 1 << 24), {},
       "pezo_pool: numbers in the pool (N; 2^k - 1 as PeZO advises); updates stay in a "
       "subspace (N-periodic within each tensor)"},
      {"zo.pezo_pow2", Type::kBool, ZT_FIELD(zo.pezo_pow2), {}, {},
       "pezo_pool, pezo_onthefly: scale by the power of two nearest the norm-matching factor"},
      {"zo.pezo_offset", Type::kEnum, ZT_ENUM(zo.pezo_offset), {}, names_of<PezoOffset>(),
       "pezo_pool, pezo_onthefly: where a perturbation starts: seeded (a hash of the step seed "
       "and query picks the pool window or the generators' phases) or stream (PeZO read "
       "literally: each perturbation continues the run-long stream where the last one stopped; "
       "the pool then repeats after N / gcd(D, N) perturbations)"},
      {"zo.rngs", Type::kInt, ZT_FIELD(zo.rngs), closed(2, 64), {},
       "pezo_onthefly: generators, each giving one number per cycle (n; 31 is PeZO's best)"},
      {"zo.rng_bits", Type::kInt, ZT_FIELD(zo.rng_bits), closed(4, 16), {},
       "pezo_onthefly: bits per generator (b); each repeats after 2^b - 1 numbers"},
  };
}

std::vector<InertRule> inert_rules() {
  return {
      {"zo.cache_direction", false, int8_pmt,
       "int8's zo.estimator layerwise perturbs one layer at a time from a saved copy"},
      {"zo.eps", false, int8,
       "int8 perturbs by integers (in [-int8.r_max, int8.r_max]; layerwise: +-1)"},
      {"zo.grad_clip", false, int8, "int8 steps by the sign of the estimate or, layerwise, by "
       "the estimate scaled by K / (K + d - 1)"},
      {"zo.pool_size", false, no_pool, "it sizes the pool of zo.perturbation pezo_pool"},
      {"zo.pezo_pow2", false, no_pezo, "it scales PeZO's sources (pezo_pool, pezo_onthefly)"},
      {"zo.pezo_offset", false, no_pezo, "it places PeZO's sources (pezo_pool, pezo_onthefly)"},
      {"zo.rngs", false, no_onthefly, "it applies to zo.perturbation pezo_onthefly"},
      {"zo.rng_bits", false, no_onthefly, "it applies to zo.perturbation pezo_onthefly"},
      {"zo.", false, no_zo, "full_bp has no zeroth-order part"},
  };
}

}  // namespace

const Section& zo_section() {
  static const Section s{keys(), inert_rules(), &check_zo, &warn_zo};
  return s;
}

// zo.preset: its values go to the zo.* keys the file and --set did not give.
void expand_zo_preset(ExperimentConfig& cfg, const std::string& origin) {
  const PresetInfo& p = preset(cfg.zo.preset);
  std::vector<std::string> given = cfg.given;
  const std::string from = origin_of(cfg, "zo.preset", origin) + ": zo.preset '" + std::string(p.name) + "'";
  for (const auto& [key, value] : p.values) {
    if (std::find(given.begin(), given.end(), key) == given.end())
      apply_value(cfg, from, std::string(key), Json::parse(value));
  }
  cfg.given = std::move(given);
}

}  // namespace zt::config::detail
