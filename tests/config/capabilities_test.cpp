// The zo.* registries' statements (config/methods.hpp) are what the config enforces: for every
// preset, estimator, source and precision, a config is accepted exactly when the registry says
// the combination is supported, and otherwise the error names the key and the value.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "../support.hpp"
#include "zotrain/config/catalogue.hpp"
#include "zotrain/config/config.hpp"
#include "zotrain/config/methods.hpp"
#include "zotrain/core/error.hpp"

namespace zt::config {
namespace {

// parse_config's error text, or "" when it accepts the settings.
std::string error_of(const std::vector<std::string>& sets) {
  try {
    (void)parse_config("{}", "t", sets);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

const Precision kPrecisions[] = {Precision::kFp32, Precision::kInt8};

TEST(ConfigCapabilities, RegistriesAreInEnumOrderWithUniqueNames) {
  std::set<std::string> names;
  for (std::size_t i = 0; i < estimators().size(); ++i) {
    EXPECT_EQ(static_cast<std::size_t>(estimators()[i].id), i);
    EXPECT_TRUE(names.insert(estimators()[i].name).second);
  }
  names.clear();
  for (std::size_t i = 0; i < perturbations().size(); ++i) {
    EXPECT_EQ(static_cast<std::size_t>(perturbations()[i].id), i);
    EXPECT_TRUE(names.insert(perturbations()[i].name).second);
  }
  names.clear();
  for (std::size_t i = 0; i < presets().size(); ++i) {
    EXPECT_EQ(static_cast<std::size_t>(presets()[i].id), i);
    EXPECT_TRUE(names.insert(presets()[i].name).second);
  }
}

TEST(ConfigCapabilities, PresetsFollowTheirPrecisions) {
  for (const PresetInfo& p : presets())
    for (Precision q : kPrecisions) {
      const std::string err = error_of({"model.precision=" + std::string(name(q)),
                                        "zo.preset=" + std::string(p.name)});
      SCOPED_TRACE(std::string(p.name) + " " + std::string(name(q)) + ": " + err);
      EXPECT_EQ(err.empty(), p.precisions.has(q));
      if (!err.empty()) {
        EXPECT_NE(err.find("zo.preset: '" + std::string(p.name) + "'"), std::string::npos);
      }
    }
}

TEST(ConfigCapabilities, EstimatorsTakeTheSourcesAndQueriesTheyState) {
  for (const EstimatorInfo& e : estimators())
    for (Precision q : kPrecisions) {
      const EstimatorSupport& on = e.on(q);
      const std::string base = "model.precision=" + std::string(name(q));
      const std::string est = "zo.estimator=" + std::string(e.name);
      for (const PerturbationInfo& s : perturbations()) {
        bool ok = on.available;
        switch (on.source) {
          case SourceNeed::kAny: ok = ok && s.precisions.has(q); break;
          case SourceNeed::kSigns: ok = ok && s.signs && s.precisions.has(q); break;
          case SourceNeed::kOwn: ok = ok && s.id == ZoConfig{}.perturbation; break;
        }
        const std::string err = error_of({base, est, "zo.perturbation=" + std::string(s.name)});
        SCOPED_TRACE(std::string(e.name) + " " + std::string(name(q)) + " " + s.name + ": " + err);
        EXPECT_EQ(err.empty(), ok);
        if (!err.empty() && on.available) {
          EXPECT_NE(err.find("zo.perturbation: '" + std::string(s.name) + "'"), std::string::npos);
        }
      }
      // A source it takes, then the q range.
      std::string source;
      for (const PerturbationInfo& s : perturbations())
        if (source.empty() && error_of({base, est, "zo.perturbation=" + std::string(s.name)}).empty())
          source = "zo.perturbation=" + std::string(s.name);
      ASSERT_FALSE(source.empty()) << e.name;
      EXPECT_TRUE(error_of({base, est, source, "zo.queries=" + std::to_string(on.max_queries)}).empty());
      if (on.max_queries < kMaxZoQueries) {
        const std::string err = error_of(
            {base, est, source, "zo.queries=" + std::to_string(on.max_queries + 1)});
        EXPECT_NE(err.find("zo.queries"), std::string::npos) << err;
      }
      // Batched probes on LeNet-5 (no BatchNorm).
      const std::string batched = error_of({base, est, source, "zo.batched=true"});
      EXPECT_EQ(batched.empty(), on.batched) << batched;
    }
}

TEST(ConfigCapabilities, NodePerturbationNeedsItsEstimatorAndAPerElementSource) {
  for (const EstimatorInfo& e : estimators())
    for (const PerturbationInfo& s : perturbations()) {
      const std::string err = error_of({"zo.estimator=" + std::string(e.name),
                                        "zo.perturbation=" + std::string(s.name),
                                        "zo.node_perturbation=true"});
      SCOPED_TRACE(std::string(e.name) + " " + s.name + ": " + err);
      EXPECT_EQ(err.empty(), e.node_perturbation && s.per_element);
      if (!err.empty()) {
        EXPECT_NE(err.find("zo.node_perturbation"), std::string::npos);
      }
    }
}

TEST(ConfigCapabilities, BatchNormRulesOutBatchedProbes) {
  for (const ArchInfo& a : architectures()) {
    std::string data;
    for (const DatasetInfo& d : datasets())
      if (d.input == a.input && data.empty()) data = d.name;
    const std::string err = error_of({"model.arch=" + std::string(a.name), "data.dataset=" + data,
                                      "zo.batched=true"});
    SCOPED_TRACE(std::string(a.name) + ": " + err);
    EXPECT_EQ(err.empty(), !a.batchnorm);
    if (!err.empty()) {
      EXPECT_NE(err.find("BatchNorm"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace zt::config
