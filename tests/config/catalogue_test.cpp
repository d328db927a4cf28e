// The data-set and architecture registries: names, what the config derives from them (choices,
// compatibility, default batch), and the image sets' normalisation constants.
#include "zotrain/config/catalogue.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "zotrain/config/config.hpp"
#include "zotrain/config/methods.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/kernels/isa.hpp"
#include "zotrain/nn/architectures.hpp"
#include "zotrain/nn/lenet5.hpp"

namespace zt::config {
namespace {

TEST(Catalogue, NamesAreUniqueAndEveryArchitectureHasADataSet) {
  std::set<std::string> names;
  for (const DatasetInfo& d : datasets()) EXPECT_TRUE(names.insert(d.name).second) << d.name;
  for (const ArchInfo& a : architectures()) {
    EXPECT_TRUE(names.insert(a.name).second) << a.name;
    bool fits = false;
    for (const DatasetInfo& d : datasets()) fits = fits || d.input == a.input;
    EXPECT_TRUE(fits) << a.name;
  }
}

TEST(Catalogue, ImageSetsCarryTheirNormalisation) {
  EXPECT_FLOAT_EQ(dataset("mnist").mean, 0.1307f);
  EXPECT_FLOAT_EQ(dataset("mnist").std, 0.3081f);
  EXPECT_FLOAT_EQ(dataset("fashion_mnist").mean, 0.2860f);
  EXPECT_FLOAT_EQ(dataset("fashion_mnist").std, 0.3530f);
  try {
    dataset("cifar10");
    FAIL() << "no error for an unknown data set";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mnist, fashion_mnist, modelnet40"), std::string::npos)
        << e.what();
  }
}

// Every architecture with every data set: the config accepts exactly the pairs whose input kinds
// match, and the default batch is the registry's for each precision.
TEST(Catalogue, ConfigAcceptsMatchingPairsAndTakesTheDefaultBatch) {
  for (const ArchInfo& a : architectures()) {
    for (const DatasetInfo& d : datasets()) {
      for (const char* precision : {"fp32", "int8"}) {
        const std::string json = std::string(R"({"model": {"arch": ")") + a.name +
                                 R"(", "precision": ")" + precision +
                                 R"("}, "data": {"dataset": ")" + d.name +
                                 R"("}, "optimizer": {"name": "sgd"}})";
        if (a.input == d.input) {
          const ExperimentConfig c = parse_config(json, "test", {});
          EXPECT_EQ(resolve_batch_size(c),
                    std::string(precision) == "fp32" ? a.fp32_batch : a.int8_batch)
              << a.name << " " << precision;
        } else {
          EXPECT_THROW(parse_config(json, "test", {}), Error) << a.name << " on " << d.name;
        }
      }
    }
  }
}

// The network factories (nn/architectures.hpp) are the config registry's architectures, in its
// order, and each builds a model with the input its registry entry names.
TEST(Catalogue, EveryArchitectureBuildsWithItsInputKind) {
  ASSERT_EQ(nn::arch_factories().size(), architectures().size());
  for (std::size_t i = 0; i < architectures().size(); ++i)
    EXPECT_EQ(nn::arch_factories()[i].id, architectures()[i].id);
  for (const ArchInfo& a : architectures()) {
    const auto m = nn::make_model(a.id, kernels::Isa::kReference, 64);
    const std::vector<int> want = a.input == InputKind::kImages ? std::vector<int>{1, 28, 28}
                                                                : std::vector<int>{64, 3};
    EXPECT_EQ(m->input_shape().dims, want) << a.name;
  }
}

// Each registry entry sits at its enum's position, so the config's enum and the registry's text
// agree; a named setting's partition obeys its method's rule.
TEST(Catalogue, RegistriesAreInEnumOrderAndNamedSettingsFollowTheirRule) {
  for (const MethodInfo& m : methods()) {
    EXPECT_EQ(&method(m.id), &m);
    EXPECT_EQ(name(m.id), m.name);
  }
  for (const DatasetInfo& d : datasets()) EXPECT_EQ(&dataset(d.id), &d);
  for (const ArchInfo& a : architectures()) EXPECT_EQ(&architecture(a.id), &a);
  for (const NamedSetting& s : named_settings()) {
    const int L = 5, c = s.partition(L);
    switch (method(s.method).rule) {
      case PartitionRule::kNone: EXPECT_EQ(c, 0) << s.key; break;
      case PartitionRule::kAll: EXPECT_EQ(c, L) << s.key; break;
      case PartitionRule::kBetween:
        EXPECT_GT(c, 0) << s.key;
        EXPECT_LT(c, L) << s.key;
        break;
    }
  }
  EXPECT_EQ(find_named_setting("sgd"), nullptr);
  EXPECT_EQ(named_setting_keys(), "full_bp, full_zo, cls1, cls2");
}

}  // namespace
}  // namespace zt::config
