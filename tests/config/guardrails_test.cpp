// Messages a user meets on likely mistakes: which --set gave a refused value, did-you-mean for
// values and for other tools' key names, and warnings for presets off their settings and for a
// data.root that names another data set than data.dataset.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../support.hpp"
#include "zotrain/config/config.hpp"
#include "zotrain/core/error.hpp"

namespace zt::config {
namespace {

using zt::test::expect_error;

ExperimentConfig parse(const std::string& text, std::vector<std::string> ov = {}) {
  return parse_config(text, "config.json", ov);
}

// The one warning containing `text`, or a failure listing them all.
void expect_warning(const ExperimentConfig& c, const std::vector<std::string>& texts) {
  for (const std::string& w : c.warnings) {
    bool all = true;
    for (const std::string& t : texts) all = all && w.find(t) != std::string::npos;
    if (all) return;
  }
  std::string got;
  for (const std::string& w : c.warnings) got += "\n  " + w;
  ADD_FAILURE() << "no warning with " << texts.front() << "; warnings:" << got;
}

bool warns(const ExperimentConfig& c, const std::string& text) {
  for (const std::string& w : c.warnings)
    if (w.find(text) != std::string::npos) return true;
  return false;
}

// A combination refused by a cross-key check names the --set that gave the key, not the file.
TEST(ConfigGuardrails, SetErrorsNameTheFlag) {
  try {
    parse("{}", {"model.precision=int8", "zo.batched=true"});
    FAIL() << "accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("--set zo.batched=true: zo.batched", 0), 0u) << m;
  }
  try {
    parse(R"({"zo": {"batched": true}})", {"model.precision=int8"});
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("config.json: zo.batched", 0), 0u) << e.what();
  }
  // A key's own type or range error names --set, the key and the value.
  expect_error([] { parse("{}", {"train.epochs=0"}); }, {"--set: key 'train.epochs'", "got 0"});
}

// The batched-probes refusal names what this config lacks, never the value it already has.
TEST(ConfigGuardrails, BatchedRefusalNamesTheMissingPiece) {
  try {
    parse("{}", {"model.precision=int8", "zo.batched=true"});
    FAIL() << "accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("(not zo.estimator two_sided with model.precision int8)"), std::string::npos) << m;
    EXPECT_EQ(m.find("BatchNorm ("), std::string::npos) << m;  // LeNet-5 has none
  }
  try {
    parse(R"({"model": {"arch": "pointnet"}, "data": {"dataset": "modelnet40"}})",
          {"zo.batched=true"});
    FAIL() << "accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("not model.arch pointnet"), std::string::npos) << m;
    EXPECT_EQ(m.find("need zo.estimator"), std::string::npos) << m;  // two_sided FP32 is right
  }
}

TEST(ConfigGuardrails, DidYouMeanForValuesAndForeignNames) {
  expect_error([] { parse("{}", {"method.name=elasticzo"}); },
               {"key 'method.name'", "got \"elasticzo\"", "did you mean 'elastic_zo'?"});
  expect_error([] { parse("{}", {"zo.preset=p-rge"}); }, {"did you mean 'prge'?"});
  expect_error([] { parse(R"({"optimizer": {"learning_rate": 0.1}})"); },
               {"unknown key 'optimizer.learning_rate'", "did you mean 'optimizer.lr'?"});
  expect_error([] { parse("{}", {"train.num_epochs=3"}); }, {"did you mean 'train.epochs'?"});
  expect_error([] { parse("{}", {"epoch=3"}); }, {"did you mean 'train.epochs'?"});
  expect_error([] { parse("{}", {"batch-size=8"}); }, {"did you mean 'train.batch_size'?"});
  // Far from every choice: the list only.
  try {
    parse("{}", {"method.name=xyzzyplugh"});
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("did you mean"), std::string::npos) << e.what();
  }
}

TEST(ConfigGuardrails, PresetsOffTheirSettingsWarn) {
  expect_warning(parse("{}", {"zo.preset=pmt"}),
                 {"zo.estimator layerwise (zo.preset pmt)", "optimizer.lr \"auto\"", "10 to 30"});
  expect_warning(parse("{}", {"zo.preset=pmt", "optimizer.lr=0.01"}), {"optimizer.lr 0.01"});
  EXPECT_FALSE(warns(parse("{}", {"zo.preset=pmt", "optimizer.lr=20"}), "layerwise"));
  EXPECT_FALSE(warns(parse("{}", {"zo.preset=pmt", "zo.node_perturbation=true", "optimizer.lr=0.1"}),
                     "layerwise"));
  EXPECT_FALSE(warns(parse(R"({"model": {"precision": "int8"}})", {"zo.preset=pmt"}), "layerwise"));
  // P-RGE keeps q x batch at 32: batch 8 with its 4 queries.
  expect_warning(parse("{}", {"zo.preset=prge", "train.batch_size=32"}),
                 {"zo.preset prge with train.batch_size 32", "pair it with train.batch_size 8"});
  EXPECT_FALSE(warns(parse("{}", {"zo.preset=prge", "train.batch_size=8"}), "prge"));
  EXPECT_FALSE(warns(parse("{}", {"zo.preset=prge", "train.batch_size=8", "method.name=full_bp"}),
                     "prge"));
}

TEST(ConfigGuardrails, DataRootNamingAnotherDataSetWarns) {
  expect_warning(parse("{}", {"data.root=data/fashion-mnist"}),
                 {"data.root 'data/fashion-mnist' names fashion_mnist", "data.dataset is mnist"});
  expect_warning(parse("{}", {"data.root=/x/mnist/", "data.dataset=fashion_mnist"}),
                 {"names mnist", "data.dataset is fashion_mnist"});
  EXPECT_FALSE(warns(parse("{}", {"data.root=data/fashion-mnist", "data.dataset=fashion_mnist"}),
                     "data.root"));
  EXPECT_FALSE(warns(parse("{}", {"data.root=/home/mnist-work/digits"}), "data.root"));
  EXPECT_FALSE(warns(parse("{}"), "data.root"));
}

}  // namespace
}  // namespace zt::config
