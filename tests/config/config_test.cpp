#include "zotrain/config/config.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../support.hpp"
#include "zotrain/core/error.hpp"

namespace zt::config {
namespace {

using zt::test::expect_error;

Partition layers(int c) { return {Partition::Rule::kLayers, c}; }

ExperimentConfig parse(const std::string& text, std::initializer_list<std::string> ov = {}) {
  return parse_config(text, "config.json", std::vector<std::string>(ov));
}

// A config parse() refuses: its JSON, the key the message names and a text it contains.
struct KeyErrorCase {
  const char* json;
  const char* key;
  const char* text;
};
// Expects every case refused with a message naming `where` + "key 'KEY'" and its text.
void expect_key_errors(std::span<const KeyErrorCase> cases, const std::string& where) {
  for (const KeyErrorCase& c : cases) {
    SCOPED_TRACE(c.json);
    expect_error([&] { parse(c.json); }, {where + "key '" + std::string(c.key) + "'", c.text});
  }
}

void expect_same(const ExperimentConfig& a, const ExperimentConfig& b) {
  EXPECT_EQ(to_json_text(a), to_json_text(b));
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.data.dataset, b.data.dataset);
  EXPECT_EQ(a.data.root, b.data.root);
  EXPECT_EQ(a.data.train_limit, b.data.train_limit);
  EXPECT_EQ(a.data.test_limit, b.data.test_limit);
  EXPECT_EQ(a.model.arch, b.model.arch);
  EXPECT_EQ(a.model.precision, b.model.precision);
  EXPECT_EQ(a.method.name, b.method.name);
  EXPECT_EQ(a.method.partition, b.method.partition);
  EXPECT_EQ(a.method.bp_activations, b.method.bp_activations);
  EXPECT_EQ(a.optimizer.name, b.optimizer.name);
  EXPECT_EQ(a.optimizer.lr, b.optimizer.lr);
  EXPECT_EQ(a.optimizer.bp_lr, b.optimizer.bp_lr);
  EXPECT_EQ(a.optimizer.decay.factor, b.optimizer.decay.factor);
  EXPECT_EQ(a.optimizer.decay.every_epochs, b.optimizer.decay.every_epochs);
  EXPECT_EQ(a.zo.eps, b.zo.eps);
  EXPECT_EQ(a.zo.grad_clip, b.zo.grad_clip);
  EXPECT_EQ(a.zo.estimator, b.zo.estimator);
  EXPECT_EQ(a.zo.queries, b.zo.queries);
  EXPECT_EQ(a.zo.perturbation, b.zo.perturbation);
  EXPECT_EQ(a.zo.pool_size, b.zo.pool_size);
  EXPECT_EQ(a.zo.pezo_pow2, b.zo.pezo_pow2);
  EXPECT_EQ(a.zo.pezo_offset, b.zo.pezo_offset);
  EXPECT_EQ(a.zo.preset, b.zo.preset);
  EXPECT_EQ(a.zo.batched, b.zo.batched);
  EXPECT_EQ(a.zo.cache_direction, b.zo.cache_direction);
  EXPECT_EQ(a.zo.rngs, b.zo.rngs);
  EXPECT_EQ(a.zo.rng_bits, b.zo.rng_bits);
  EXPECT_EQ(a.train.epochs, b.train.epochs);
  EXPECT_EQ(a.train.batch_size, b.train.batch_size);
  EXPECT_EQ(a.train.threads, b.train.threads);
  EXPECT_EQ(a.train.max_steps, b.train.max_steps);
  EXPECT_EQ(a.train.eval_at_start, b.train.eval_at_start);
  EXPECT_EQ(a.train.log_every, b.train.log_every);
  EXPECT_EQ(a.train.eval_every, b.train.eval_every);
  EXPECT_EQ(a.train.memory_plan, b.train.memory_plan);
  EXPECT_EQ(a.int8.r_max, b.int8.r_max);
  EXPECT_EQ(a.int8.b_zo, b.int8.b_zo);
  EXPECT_EQ(a.int8.b_bp, b.int8.b_bp);
  EXPECT_EQ(a.int8.p_zero, b.int8.p_zero);
  EXPECT_EQ(a.int8.sign, b.int8.sign);
  EXPECT_EQ(a.int8.dead_zone, b.int8.dead_zone);
  EXPECT_EQ(a.output.dir, b.output.dir);
  EXPECT_EQ(a.output.checkpoint_every, b.output.checkpoint_every);
}

TEST(ConfigTest, EmptyObjectGivesDefaults) {
  const ExperimentConfig d;
  expect_same(parse("{}"), d);
  expect_same(load_config("", {}), d);
  EXPECT_EQ(parse("{}").optimizer.bp_lr, std::nullopt);
}

TEST(ConfigTest, ParsesEveryKind) {
  const ExperimentConfig c = parse(R"({
    // comments are allowed
    "name": "x", "seed": 18446744073709551615,
    "data": {"dataset": "Fashion_MNIST", "train_limit": 100},
    "method": {"name": "full_zo", "partition": 3, "bp_activations": "average"},
    "optimizer": {"name": "adam", "lr": 0.002, "bp_lr": 0.1, "decay": {"factor": 1, "every_epochs": 0}},
    "zo": {"eps": 1e-2},
    "train": {"epochs": 2.0, "batch_size": 64}
  })");
  EXPECT_EQ(c.name, "x");
  EXPECT_EQ(c.seed, 18446744073709551615ull);
  EXPECT_EQ(name(c.data.dataset), "fashion_mnist");  // enums are case-insensitive, stored canonical
  EXPECT_EQ(c.data.train_limit, 100);
  EXPECT_EQ(name(c.method.name), "full_zo");
  EXPECT_EQ(c.method.partition, layers(3));
  EXPECT_EQ(name(c.method.bp_activations), "average");
  EXPECT_EQ(name(c.optimizer.name), "adam");
  EXPECT_EQ(c.optimizer.lr, 0.002);
  EXPECT_EQ(c.optimizer.bp_lr, 0.1);
  EXPECT_EQ(c.optimizer.decay.factor, 1.0);
  EXPECT_EQ(c.optimizer.decay.every_epochs, 0);
  EXPECT_EQ(c.zo.eps, 0.01);
  EXPECT_EQ(c.train.epochs, 2);
  EXPECT_EQ(c.train.batch_size, 64);
  EXPECT_EQ(c.train.threads, std::nullopt);  // untouched keys keep defaults (auto)
}

TEST(ConfigTest, UnknownKeySuggestsNearest) {
  expect_error([] { parse(R"({"optimizer": {"lrr": 0.01}})"); },
               {"config.json: unknown key 'optimizer.lrr' (did you mean 'optimizer.lr'?)"});
  expect_error([] { parse(R"({"train": {"batchsize": 3}})"); },
               {"'train.batchsize'", "did you mean 'train.batch_size'"});
  expect_error([] { parse(R"({"optimiser": {"lr": 0.01}})"); },
               {"'optimiser'", "did you mean 'optimizer'"});
  expect_error([] { parse(R"({"zzzzzzzzzzzzzzzzzzzzzzzz": 1})"); },
               {"unknown key 'zzzzzzzzzzzzzzzzzzzzzzzz'", "--help"});
  expect_error([] { parse(R"({"source_dir": "/"})"); }, {"unknown key 'source_dir'"});
}

TEST(ConfigTest, WrongTypes) {
  expect_error([] { parse(R"({"train": {"batch_size": "abc"}})"); },
               {"config.json: key 'train.batch_size' must be an integer in [1, 16777216] or \"auto\", "
                "got \"abc\""});
  expect_error([] { parse(R"({"train": {"epochs": 2.5}})"); },
               {"'train.epochs'", "must be an integer", "2.5"});
  expect_error([] { parse(R"({"optimizer": {"lr": "fast"}})"); },
               {"'optimizer.lr'", "must be a number"});
  expect_error([] { parse(R"({"name": 5})"); }, {"'name'", "must be a string, got 5"});
  expect_error([] { parse(R"({"seed": -1})"); }, {"'seed'", "non-negative integer"});
  expect_error([] { parse(R"({"train": 3})"); }, {"'train'", "section", "object"});
  expect_error([] { parse(R"({"train": {"epochs": {"x": 1}}})"); },
               {"'train.epochs'", "must be an integer"});
  expect_error([] { parse(R"([1, 2])"); }, {"config.json", "top level", "object"});
}

TEST(ConfigTest, OutOfRange) {
  const KeyErrorCase cases[] = {
      {R"({"train": {"batch_size": 0}})", "train.batch_size", "in [1, 16777216] or \"auto\""},
      {R"({"train": {"batch_size": 1000000000}})", "train.batch_size", "in [1, 16777216]"},
      {R"({"train": {"epochs": 0}})", "train.epochs", "in [1, 2147483647]"},
      {R"({"train": {"threads": 0}})", "train.threads", "in [1, 1024] or \"auto\""},
      {R"({"train": {"max_steps": 0}})", "train.max_steps", "in [1, 2147483647] or null"},
      {R"({"train": {"eval_every": 0}})", "train.eval_every", "in [1, 2147483647]"},
      {R"({"data": {"train_limit": 0}})", "data.train_limit", "in [1, 2147483647] or null"},
      {R"({"data": {"test_limit": -5}})", "data.test_limit", "in [1, 2147483647] or null"},
      {R"({"optimizer": {"lr": -0.1}})", "optimizer.lr", "in [0, 1e+10]"},
      {R"({"optimizer": {"bp_lr": -1}})", "optimizer.bp_lr", "in [0, 1e+10] or null"},
      {R"({"zo": {"eps": 0}})", "zo.eps", "in [1e-09, 1]"},
      {R"({"zo": {"grad_clip": 0}})", "zo.grad_clip", "in (0, 1e+30]"},
      {R"({"optimizer": {"decay": {"factor": 0}}})", "optimizer.decay.factor", "in (0, 1]"},
      {R"({"optimizer": {"decay": {"factor": 1.5}}})", "optimizer.decay.factor", "in (0, 1]"},
      {R"({"optimizer": {"decay": {"every_epochs": -1}}})", "optimizer.decay.every_epochs",
       "in [0, 2147483647]"},
      {R"({"output": {"checkpoint_every": -1}})", "output.checkpoint_every", "in [0, 2147483647]"},
      {R"({"output": {"checkpoint_minutes": -1}})", "output.checkpoint_minutes", "in [0, 525600]"},
      {R"({"int8": {"r_max": 0}})", "int8.r_max", "in [1, 127]"},
      {R"({"int8": {"r_max": 128}})", "int8.r_max", "in [1, 127]"},
      {R"({"int8": {"b_zo": 0}})", "int8.b_zo", "in [1, 7]"},
      {R"({"int8": {"b_zo": 8}})", "int8.b_zo", "in [1, 7]"},
      {R"({"int8": {"b_bp": 16}})", "int8.b_bp", "in [0, 15]"},
      {R"({"int8": {"b_bp": -1}})", "int8.b_bp", "in [0, 15]"},
      {R"({"int8": {"p_zero": 1.01}})", "int8.p_zero", "in [0, 1]"},
      {R"({"int8": {"p_zero": -0.1}})", "int8.p_zero", "in [0, 1]"},
  };
  expect_key_errors(cases, "config.json: ");
}

TEST(ConfigTest, BpLrSentinel) {
  // Defaults are spelled null or "auto", never 0: 0 means 0.
  EXPECT_EQ(parse(R"({"optimizer": {"bp_lr": null}})").optimizer.bp_lr, std::nullopt);
  EXPECT_EQ(parse(R"({"optimizer": {"bp_lr": 0}})").optimizer.bp_lr, 0.0);
  EXPECT_EQ(parse(R"({"optimizer": {"lr": 0}})").optimizer.lr, 0.0);
  EXPECT_EQ(parse(R"({"optimizer": {"lr": "auto"}})").optimizer.lr, std::nullopt);
  EXPECT_EQ(parse("{}", {"train.batch_size=auto", "train.threads=AUTO"}).train.threads, std::nullopt);
  EXPECT_EQ(parse("{}", {"train.max_steps=null"}).train.max_steps, std::nullopt);
  const std::string dump = to_json_text(parse("{}"));
  for (const char* spelled : {"\"bp_lr\": null", "\"lr\": \"auto\"", "\"batch_size\": \"auto\"",
                              "\"threads\": \"auto\"", "\"max_steps\": null",
                              "\"train_limit\": null"})
    EXPECT_NE(dump.find(spelled), std::string::npos) << spelled;
}

TEST(ConfigTest, Enums) {
  const KeyErrorCase cases[] = {  // the text: the values allowed
      {R"({"data": {"dataset": "cifar10"}})", "data.dataset", "mnist, fashion_mnist"},
      {R"({"model": {"arch": "resnet"}})", "model.arch", "lenet5"},
      {R"({"model": {"precision": "int4"}})", "model.precision", "fp32, int8"},
      {R"({"int8": {"sign": "exact"}})", "int8.sign", "float, integer"},
      {R"({"method": {"name": "mezo"}})", "method.name", "full_bp, full_zo, elastic_zo"},
      {R"({"optimizer": {"name": "rmsprop"}})", "optimizer.name", "sgd, adam"},
      {R"({"method": {"bp_activations": "plus"}})", "method.bp_activations", "minus, average"},
      {R"({"train": {"memory_plan": "tiny"}})", "train.memory_plan", "lean, whole_batch"},
      {R"({"data": {"dataset": 3}})", "data.dataset", "mnist, fashion_mnist"},
  };
  expect_key_errors(cases, "");
}

TEST(ConfigTest, PartitionForms) {
  EXPECT_EQ(parse(R"({"method": {"partition": 2}})").method.partition, layers(2));
  EXPECT_EQ(parse(R"({"method": {"partition": "004"}})").method.partition, layers(4));
  EXPECT_EQ(parse(R"({"method": {"partition": "ZO-Feat-Cls2"}})").method.partition.rule,
            Partition::Rule::kCls2);
  EXPECT_EQ(parse(R"({"method": {"partition": "zo-feat-cls1"}})").method.partition.rule,
            Partition::Rule::kCls1);
  for (const char* bad : {R"("abc")", "-1", "1.5", R"("")", "true", R"("-2")"}) {
    SCOPED_TRACE(bad);
    expect_error([&] { parse(std::string(R"({"method": {"partition": )") + bad + "}}"); },
                 {"'method.partition'", "zo-feat-cls1"});
  }
}

TEST(ConfigTest, MalformedJsonGivesPosition) {
  expect_error([] { parse("{\n  \"name\": \"x\",\n  \"seed\": ,\n}"); },
               {"config.json: malformed JSON at line 3, column"});
  expect_error([] { parse(""); }, {"config.json: malformed JSON at line 1"});
  expect_error([] { parse("{\"a\": 1"); }, {"config.json", "malformed JSON"});
  // A number beyond a double is nlohmann's out_of_range, not a parse_error
  // (tests/fuzz/regressions/config).
  expect_error([] { parse("{\"seed\": 1e999}"); },
               {"config.json: key 'seed': the number 1e999 is beyond the range of a double"});
  // --set text that is not UTF-8 (a config file's is refused by the JSON parser) could be
  // neither shown in an error nor written to config.json (tests/fuzz/regressions/config).
  expect_error([] { parse("{}", {"name=run\x91"}); }, {"--set name", "not valid UTF-8"});
  expect_error([] { parse("{}", {"zo={\"eps\":0.\x91}"}); }, {"--set zo", "not valid UTF-8"});
}

TEST(ConfigTest, Overrides) {
  const ExperimentConfig c = parse("{}", {"train.epochs=3", "optimizer.lr=0.002", "name=run7",
                                          "data.dataset=fashion_mnist", "seed=9",
                                          "method.partition=zo-feat-cls2", "output.dir=",
                                          R"(zo={"eps": 0.05})", "name=123"});
  EXPECT_EQ(c.train.epochs, 3);
  EXPECT_EQ(c.optimizer.lr, 0.002);
  EXPECT_EQ(c.name, "123");  // later overrides win; a string key takes the text verbatim
  EXPECT_EQ(name(c.data.dataset), "fashion_mnist");
  EXPECT_EQ(c.seed, 9u);
  EXPECT_EQ(c.method.partition.rule, Partition::Rule::kCls2);
  EXPECT_EQ(c.output.dir, "");
  EXPECT_EQ(c.zo.eps, 0.05);
  EXPECT_EQ(parse("{}", {R"(name="quoted")"}).name, "quoted");
  // Overrides apply after the file.
  EXPECT_EQ(parse(R"({"train": {"epochs": 9}})", {"train.epochs=4"}).train.epochs, 4);
}

TEST(ConfigTest, OverrideErrors) {
  expect_error([] { parse("{}", {"optimizer.lrr=0.1"}); },
               {"--set", "unknown key 'optimizer.lrr' (did you mean 'optimizer.lr'?)"});
  expect_error([] { parse("{}", {"train.batch_size=abc"}); },
               {"--set", "key 'train.batch_size' must be an integer in [1, 16777216] or \"auto\", got "
                "\"abc\""});
  expect_error([] { parse("{}", {"train.epochs"}); }, {"--set", "train.epochs", "missing '='"});
  expect_error([] { parse("{}", {"=3"}); }, {"--set", "empty key"});
  expect_error([] { parse("{}", {"train.epochs=0"}); },
               {"--set", "'train.epochs'", "in [1, 2147483647]"});
}

TEST(ConfigTest, RoundTrip) {
  ExperimentConfig c = parse(R"({"name": "rt", "seed": 12345678901234,
    "data": {"dataset": "fashion_mnist", "root": "/x/y", "train_limit": 7, "test_limit": 8},
    "method": {"name": "elastic_zo", "partition": 3, "bp_activations": "average"},
    "optimizer": {"name": "adam", "lr": 0.1234567890123, "bp_lr": 3e-5,
                  "decay": {"factor": 0.35, "every_epochs": 4}},
    "zo": {"eps": 1.5e-4, "grad_clip": 7.25},
    "train": {"epochs": 11, "batch_size": 16, "threads": 2, "max_steps": 99, "eval_every": 3,
              "memory_plan": "whole_batch"},
    "int8": {"r_max": 15, "b_zo": {"0": 2, "7": 1}, "b_bp": 6,
             "p_zero": {"0": 0.125, "3": 0.3333333333333333, "40": 0.99}, "sign": "integer"},
    "output": {"dir": "out", "checkpoint_every": 0}})");
  expect_same(parse_config(to_json_text(c), "dump", {}), c);
  const ExperimentConfig d;
  expect_same(parse_config(to_json_text(d), "dump", {}), d);
  const ExperimentConfig named = parse(R"({"method": {"partition": "zo-feat-cls2"}})");
  expect_same(parse_config(to_json_text(named), "dump", {}), named);
}

TEST(ConfigTest, DumpAndHelpListEveryKey) {
  const std::string dump = to_json_text(ExperimentConfig{});
  const std::string help = keys_help();
  ASSERT_EQ(key_names().size(), 57u);
  for (const std::string& k : key_names()) {
    const std::string leaf = k.substr(k.rfind('.') + 1);
    EXPECT_NE(dump.find("\"" + leaf + "\""), std::string::npos) << k;
    EXPECT_NE(help.find("  " + k + " ("), std::string::npos) << k;
  }
  EXPECT_NE(help.find("train.batch_size (integer in [1, 16777216] or auto, default \"auto\"): minibatch size "
                      "(auto = the paper's: 32; 256 for int8 LeNet-5)"),
            std::string::npos)
      << help;
  EXPECT_NE(help.find("data.dataset (mnist | fashion_mnist | modelnet40, default \"mnist\")"),
            std::string::npos);
}

TEST(ConfigTest, MemoryLimitTakesBytesOrAUnit) {
  auto limit = [](const std::string& v) { return parse("{}", {"train.memory_limit=" + v}).train.memory_limit; };
  EXPECT_FALSE(parse("{}", {}).train.memory_limit.has_value());
  EXPECT_EQ(limit("4096"), 4096);
  EXPECT_EQ(limit("\"400MiB\""), 400LL << 20);
  EXPECT_EQ(limit("\"1.5 GB\""), 1500000000LL);
  EXPECT_EQ(limit("\"64kib\""), 65536);
  EXPECT_EQ(limit("\"2GiB\""), 2LL << 30);
  EXPECT_FALSE(limit("null").has_value());
  for (const char* bad : {"\"lots\"", "\"400 furlongs\"", "0", "\"-1MiB\"", "\"0.5B\"", "true"})
    test::expect_error([&] { limit(bad); }, {"train.memory_limit", "400MiB"});
  // Written back as bytes, read again the same.
  const ExperimentConfig c = parse("{}", {"train.memory_limit=\"400MiB\""});
  EXPECT_EQ(parse_config(to_json_text(c), "t", {}).train.memory_limit, 400LL << 20);
}

TEST(ConfigTest, ZoQueriesAreCheckedAgainstThePrecision) {
  const ExperimentConfig c = parse_config(R"({"zo": {"queries": 4}})", "t", {});
  EXPECT_EQ(c.zo.queries, 4);
  EXPECT_EQ(c.zo.estimator, Estimator::kTwoSided);
  test::expect_error(
      [] {
        parse_config(R"({"model": {"precision": "int8"}, "optimizer": {"name": "sgd"}})", "t",
                     {"zo.queries=2"});
      },
      {"zo.queries", "int8"});
  test::expect_error([] { parse_config(R"({"zo": {"queries": 65}})", "t", {}); }, {"zo.queries"});
}

TEST(ConfigTest, ZoPerturbationIsFp32Only) {
  EXPECT_EQ(parse_config("{}", "t", {}).zo.perturbation, Perturbation::kGaussian);
  EXPECT_EQ(parse_config("{}", "t", {"zo.perturbation=rademacher"}).zo.perturbation, Perturbation::kRademacher);
  test::expect_error(
      [] {
        parse_config(R"({"model": {"precision": "int8"}, "optimizer": {"name": "sgd"}})", "t",
                     {"zo.perturbation=uniform"});
      },
      {"zo.perturbation", "int8", "FP32"});
}

TEST(ConfigTest, CacheDirectionIsAnFp32AndInt8Option) {
  EXPECT_FALSE(parse_config("{}", "t", {}).zo.cache_direction);
  const ExperimentConfig c = parse_config("{}", "t", {"zo.cache_direction=true"});
  EXPECT_TRUE(c.zo.cache_direction);
  EXPECT_TRUE(c.warnings.empty());
  const ExperimentConfig i8 = parse_config(
      R"({"model": {"precision": "int8"}, "optimizer": {"name": "sgd"}})", "t",
      {"zo.cache_direction=true"});
  EXPECT_TRUE(i8.zo.cache_direction);
  EXPECT_TRUE(i8.warnings.empty());
  const ExperimentConfig pmt = parse_config(
      R"({"model": {"precision": "int8"}, "optimizer": {"name": "sgd"}})", "t",
      {"zo.cache_direction=true", "zo.preset=pmt"});
  bool warned = false;
  for (const std::string& w : pmt.warnings) warned = warned || w.find("zo.cache_direction") != std::string::npos;
  EXPECT_TRUE(warned) << "int8 layerwise does not use the cache";
}

TEST(ConfigTest, Int8InputQuantisesImagesOnly) {
  const std::string int8 = R"({"model": {"precision": "int8"}})";
  EXPECT_EQ(parse_config(int8, "t", {"int8.input=shift"}).int8.input, Int8Input::kShift);
  const ExperimentConfig n = parse_config(int8, "t", {"int8.input=normalised"});
  EXPECT_EQ(n.int8.input, Int8Input::kNormalised);
  EXPECT_TRUE(n.warnings.empty());
  test::expect_error([&] { parse_config(int8, "t", {"int8.input=centred"}); },
                     {"int8.input", "centred", "shift", "normalised"});
  // Point clouds have their own fixed-point input: the key is ignored there, with a warning.
  const char* other = ExperimentConfig{}.int8.input == Int8Input::kShift ? "int8.input=normalised"
                                                                          : "int8.input=shift";
  const ExperimentConfig p = parse_config(
      R"({"model": {"precision": "int8", "arch": "pointnet"}, "data": {"dataset": "modelnet40"}})",
      "t", {other});
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_NE(p.warnings[0].find("int8.input has no effect here"), std::string::npos);
}

// int8.dead_zone: a non-negative schedule, 0 by default; it acts on the float sign of a ZO
// step only, so the integer signs and Full BP warn that it is ignored.
TEST(ConfigTest, Int8DeadZoneAppliesToTheFloatSign) {
  const std::string int8 = R"({"model": {"precision": "int8"}, "method": {"name": "full_zo"}})";
  EXPECT_EQ(ExperimentConfig{}.int8.dead_zone.at(0), 0.0);
  const ExperimentConfig c = parse_config(int8, "t", {R"(int8.dead_zone={"0": 0, "50": 0.002})"});
  EXPECT_EQ(c.int8.dead_zone.at(49), 0.0);
  EXPECT_EQ(c.int8.dead_zone.at(50), 0.002);
  EXPECT_TRUE(c.warnings.empty());
  test::expect_error([&] { parse_config(int8, "t", {"int8.dead_zone=-0.1"}); },
                     {"int8.dead_zone", "-0.1"});
  for (const char* other : {"int8.sign=integer", "method.name=full_bp"}) {
    const ExperimentConfig w = parse_config(int8, "t", {"int8.dead_zone=0.01", other});
    ASSERT_EQ(w.warnings.size(), 1u) << other;
    EXPECT_NE(w.warnings[0].find("int8.dead_zone has no effect here"), std::string::npos) << other;
  }
}

TEST(ConfigTest, BpActivationsIsInertOnInt8) {
  const std::string elastic = R"({"method": {"name": "elastic_zo", "partition": 3}})";
  EXPECT_TRUE(parse_config(elastic, "t", {"method.bp_activations=average"}).warnings.empty());
  const ExperimentConfig w =
      parse_config(elastic, "t", {"method.bp_activations=average", "model.precision=int8"});
  ASSERT_EQ(w.warnings.size(), 1u);
  EXPECT_NE(w.warnings[0].find("method.bp_activations has no effect here: the int8 backprop"),
            std::string::npos)
      << w.warnings[0];
}

TEST(ConfigTest, PmtPresetIsLayerwiseRademacher) {
  const ExperimentConfig c = parse_config("{}", "t", {"zo.preset=pmt"});
  EXPECT_EQ(c.zo.estimator, Estimator::kLayerwise);
  EXPECT_EQ(c.zo.perturbation, Perturbation::kRademacher);
  EXPECT_EQ(c.zo.queries, 4);
  EXPECT_EQ(parse_config("{}", "t", {"zo.preset=pmt", "zo.queries=2"}).zo.queries, 2);
}

TEST(ConfigTest, PmtOnInt8StepsByALearningRateWithRademacherProbes) {
  const std::string int8 = R"({"model": {"precision": "int8"}})";
  const ExperimentConfig c = parse_config(int8, "t", {"zo.preset=pmt", "optimizer.lr=0.5"});
  EXPECT_EQ(c.zo.estimator, Estimator::kLayerwise);
  EXPECT_EQ(c.zo.queries, 4);
  EXPECT_TRUE(c.warnings.empty());  // its learning rate is used
  EXPECT_EQ(parse_config(int8, "t", {"zo.preset=pmt", "zo.perturbation=xorshift"}).zo.perturbation,
            Perturbation::kXorshift);
  // ElasticZO-INT8's knobs do nothing with it; its learning rate does nothing without it.
  const ExperimentConfig r = parse_config(int8, "t", {"zo.preset=pmt", "int8.r_max=7"});
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("int8.r_max has no effect here"), std::string::npos);
  const ExperimentConfig m = parse_config(int8, "t", {"optimizer.lr=0.5"});
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_NE(m.warnings[0].find("optimizer.lr has no effect here"), std::string::npos);
  test::expect_error([&] { parse_config(int8, "t", {"zo.estimator=layerwise"}); },
                     {"zo.perturbation", "gaussian", "int8", "rademacher", "xorshift"});
  test::expect_error([&] { parse_config(int8, "t", {"zo.preset=prge"}); },
                     {"zo.preset", "prge", "int8", "pmt"});
  test::expect_error([&] { parse_config(int8, "t", {"zo.queries=2"}); },
                     {"zo.queries", "int8", "layerwise"});
}

TEST(ConfigTest, NodePerturbationNeedsLayerwiseAndAPerElementSource) {
  EXPECT_FALSE(parse_config("{}", "t", {"zo.preset=pmt"}).zo.node_perturbation);
  EXPECT_TRUE(parse_config(R"({"model": {"precision": "int8"}})", "t",
                           {"zo.preset=pmt", "zo.node_perturbation=true"})
                  .zo.node_perturbation);
  EXPECT_TRUE(parse_config("{}", "t", {"zo.preset=pmt", "zo.node_perturbation=true"})
                  .zo.node_perturbation);
  test::expect_error([] { parse_config("{}", "t", {"zo.node_perturbation=true"}); },
                     {"zo.node_perturbation", "layerwise", "two_sided"});
  test::expect_error(
      [] {
        parse_config("{}", "t",
                     {"zo.preset=pmt", "zo.node_perturbation=true", "zo.perturbation=pezo_pool"});
      },
      {"zo.node_perturbation", "pezo_pool"});
}

TEST(ConfigTest, PezoOffsetIsSeededOrStream) {
  EXPECT_EQ(parse_config("{}", "t", {}).zo.pezo_offset, PezoOffset::kSeeded);
  const ExperimentConfig c =
      parse_config("{}", "t", {"zo.perturbation=pezo_pool", "zo.pezo_offset=stream"});
  EXPECT_EQ(c.zo.pezo_offset, PezoOffset::kStream);
  EXPECT_TRUE(c.warnings.empty());
  test::expect_error([] { parse_config("{}", "t", {"zo.pezo_offset=sliding"}); },
                     {"zo.pezo_offset", "sliding", "seeded, stream"});
  const ExperimentConfig g = parse_config("{}", "t", {"zo.pezo_offset=stream"});
  ASSERT_EQ(g.warnings.size(), 1u);
  EXPECT_NE(g.warnings[0].find("zo.pezo_offset has no effect here"), std::string::npos);
}

TEST(ConfigTest, ZoPresetsFillTheKeysNotGiven) {
  const ExperimentConfig pool = parse_config(R"({"zo": {"preset": "pezo_pool"}})", "t", {});
  EXPECT_EQ(pool.zo.perturbation, Perturbation::kPezoPool);
  EXPECT_EQ(pool.zo.pool_size, 4095);
  EXPECT_FALSE(pool.zo.pezo_pow2);
  const ExperimentConfig fly = parse_config("{}", "t", {"zo.preset=pezo_onthefly"});
  EXPECT_EQ(fly.zo.perturbation, Perturbation::kPezoOnTheFly);
  EXPECT_EQ(fly.zo.rngs, 31);
  EXPECT_EQ(fly.zo.rng_bits, 8);
  EXPECT_TRUE(fly.zo.pezo_pow2);
  EXPECT_TRUE(fly.warnings.empty());  // a preset's keys are not "given in vain"
  const ExperimentConfig prge = parse_config("{}", "t", {"zo.preset=prge"});
  EXPECT_EQ(prge.zo.queries, 4);
  EXPECT_EQ(prge.zo.perturbation, Perturbation::kGaussian);
  EXPECT_TRUE(prge.zo.batched);
  test::expect_error(
      [] {
        parse_config(R"({"model": {"arch": "pointnet"}, "data": {"dataset": "modelnet40"}})",
                     "t", {"zo.preset=prge"});
      },
      {"zo.batched", "pointnet", "BatchNorm"});
  test::expect_error([] { parse_config("{}", "t", {"zo.batched=true", "zo.estimator=one_sided"}); },
                     {"zo.batched", "one_sided"});
  // Explicit keys win, from the file or --set, whatever their order.
  const ExperimentConfig own =
      parse_config(R"({"zo": {"rng_bits": 12, "preset": "pezo_onthefly"}})", "t",
                   {"zo.pezo_pow2=false"});
  EXPECT_EQ(own.zo.rng_bits, 12);
  EXPECT_FALSE(own.zo.pezo_pow2);
  EXPECT_EQ(own.zo.rngs, 31);
  // The default preset changes nothing, and a written-out config reads back the same.
  expect_same(parse_config("{}", "t", {"zo.preset=mezo"}), ExperimentConfig{});
  expect_same(parse_config(to_json_text(fly), "dump", {}), fly);
  test::expect_error([] { parse_config("{}", "t", {"zo.preset=pezo"}); },
                     {"zo.preset", "\"pezo\"", "pezo_pool", "prge"});
  test::expect_error(
      [] {
        parse_config(R"({"model": {"precision": "int8"}, "optimizer": {"name": "sgd"}})", "t",
                     {"zo.preset=prge"});
      },
      {"zo.preset", "'prge'", "int8", "mezo"});
  // Keys of a source that is not chosen are set in vain: a warning names the source.
  const ExperimentConfig vain = parse_config("{}", "t", {"zo.rngs=15"});
  ASSERT_EQ(vain.warnings.size(), 1u);
  EXPECT_NE(vain.warnings[0].find("pezo_onthefly"), std::string::npos) << vain.warnings[0];
}

TEST(ConfigTest, ResolvePartition) {
  const int L = 5;
  auto with = [&](const std::string& p) {
    return parse("{}", {"method.name=elastic_zo", "method.partition=" + p}).method;
  };
  for (int c = 1; c < L; ++c) EXPECT_EQ(resolve_partition(with(std::to_string(c)), L), c);
  EXPECT_EQ(resolve_partition(with("zo-feat-cls1"), L), 3);
  EXPECT_EQ(resolve_partition(with("ZO-FEAT-CLS2"), L), 4);
  // The partition alone is the knob: its ends are Full BP and Full ZO.
  EXPECT_EQ(resolve_partition(with("0"), L), 0);
  EXPECT_EQ(resolve_partition(with("5"), L), 5);
  EXPECT_EQ(effective_method(0, L), Method::kFullBp);
  EXPECT_EQ(effective_method(3, L), Method::kElasticZo);
  EXPECT_EQ(effective_method(L, L), Method::kFullZo);
  expect_error([&] { resolve_partition(with("zo-feat-cls1"), 1); }, {"method.partition", "C = -1"});
  expect_error([&] { resolve_partition(with("7"), L); }, {"method.partition", "[0, 5]"});
  expect_error([&] { with("abc"); }, {"method.partition", "\"abc\"", "zo-feat-cls1"});
  // full_bp / full_zo force the ends, whatever the partition says ("0".."5" all accepted).
  for (int c = 0; c <= L; ++c) {
    MethodConfig bp = with(std::to_string(c)), zo = with(std::to_string(c));
    bp.name = Method::kFullBp;
    zo.name = Method::kFullZo;
    EXPECT_EQ(resolve_partition(bp, L), 0);
    EXPECT_EQ(resolve_partition(zo, L), L);
  }
  // Names resolve relative to L (the paper's LeNet-5 and PointNet settings).
  EXPECT_EQ(resolve_partition(with("zo-feat-cls1"), 3), 1);
  EXPECT_EQ(resolve_partition(with("zo-feat-cls1"), 2), 0);  // = Full BP on a 2-layer net
}

TEST(ConfigTest, LoadFileAndResolvePaths) {
  namespace fs = std::filesystem;
  const ExperimentConfig tiny = load_config(ZT_FIXTURES_DIR "/tiny.json", {});
  EXPECT_EQ(tiny.data.root, "../../data/mnist-subset");
  EXPECT_EQ(fs::path(tiny.source_dir), fs::path(ZT_FIXTURES_DIR).lexically_normal());
  EXPECT_EQ(fs::path(resolve_path(tiny, tiny.data.root)),
            (fs::path(ZT_SOURCE_DIR) / "data/mnist-subset").lexically_normal());
  EXPECT_TRUE(fs::is_directory(resolve_path(tiny, tiny.data.root)));
  EXPECT_EQ(tiny.data.train_limit, 256);
  EXPECT_EQ(tiny.train.epochs, 1);
  EXPECT_EQ(resolve_partition(tiny.method, 5), 3);
  EXPECT_EQ(resolve_path(tiny, "/abs/path"), "/abs/path");
  EXPECT_EQ(resolve_path(tiny, "does/not/exist"), "does/not/exist");  // falls back to cwd
  EXPECT_EQ(resolve_path(tiny, ""), "");

  const ExperimentConfig quick = load_config(ZT_SOURCE_DIR "/configs/quickstart.json", {});
  EXPECT_TRUE(fs::is_directory(resolve_path(quick, quick.data.root)));
  EXPECT_EQ(quick.train.epochs, 3);
  EXPECT_EQ(quick.train.batch_size, 32);
  EXPECT_EQ(name(quick.method.name), "elastic_zo");

  expect_error([] { load_config(ZT_FIXTURES_DIR "/bad-key.json", {}); },
               {"bad-key.json: unknown key 'optimizer.lrr' (did you mean 'optimizer.lr'?)"});
  expect_error([] { load_config(ZT_FIXTURES_DIR "/no-such.json", {}); },
               {"no-such.json", "cannot open"});
  expect_error([] { load_config(ZT_FIXTURES_DIR, {}); }, {"is a directory"});
}

// ---- int8 (NITI / ElasticZO-INT8) keys --------------------------------------------------------

using Points = std::vector<std::pair<std::int64_t, double>>;

TEST(ConfigInt8Test, Defaults) {
  const ExperimentConfig c = parse("{}");
  EXPECT_EQ(name(c.model.precision), "fp32");
  EXPECT_EQ(c.int8.r_max, 3);
  EXPECT_EQ(name(c.int8.sign), "float");
  EXPECT_EQ(c.int8.b_zo.points, (Points{{0, 1}}));
  EXPECT_TRUE(c.int8.b_bp.points.empty());  // auto
  EXPECT_EQ(resolve_b_bp(c, 3).points, (Points{{0, 5}, {20, 4}, {50, 3}}));  // LeNet-5: NITI's
  const std::string pn = R"("model": {"arch": "pointnet"}, "data": {"dataset": "modelnet40"})";
  EXPECT_EQ(resolve_b_bp(parse("{" + pn + "}"), 6).points,  // with a ZO part (Cls1: C = 6)
            (Points{{0, 3}, {20, 2}, {50, 1}, {90, 0}}));
  EXPECT_EQ(resolve_b_bp(parse("{" + pn + "}"), 0).points, (Points{{0, 3}, {20, 2}, {50, 1}}));
  EXPECT_EQ(resolve_b_bp(parse("{" + pn + R"(, "int8": {"b_bp": 4}})"), 6).points, (Points{{0, 4}}));
  EXPECT_TRUE(parse(R"({"int8": {"b_bp": "auto"}})", {"int8.b_bp=6", "int8.b_bp=auto"})
                  .int8.b_bp.points.empty());
  EXPECT_TRUE(c.int8.p_zero.points.empty());  // auto
  EXPECT_EQ(resolve_p_zero(c).points, (Points{{0, 0.33}, {20, 0.5}, {50, 0.9}}));  // the paper's
  EXPECT_EQ(resolve_p_zero(parse("{" + pn + "}")).points, (Points{{0, 0.97}, {75, 0.99}}));
  EXPECT_EQ(resolve_p_zero(parse("{" + pn + R"(, "int8": {"p_zero": 0.5}})")).points,
            (Points{{0, 0.5}}));
  const std::int64_t epochs[] = {0, 19, 20, 49, 50, 100};
  const double b_bp[] = {5, 5, 4, 4, 3, 3};
  const double p_zero[] = {0.33, 0.33, 0.5, 0.5, 0.9, 0.9};
  for (int i = 0; i < 6; ++i) {
    SCOPED_TRACE(epochs[i]);
    EXPECT_EQ(c.int8.b_zo.at(epochs[i]), 1.0);
    EXPECT_EQ(resolve_b_bp(c, 3).at(epochs[i]), b_bp[i]);
    EXPECT_EQ(resolve_p_zero(c).at(epochs[i]), p_zero[i]);
  }
  // The parsed defaults are the struct's defaults.
  const Int8Config d;
  EXPECT_EQ(d.b_bp, c.int8.b_bp);
  EXPECT_EQ(d.p_zero, c.int8.p_zero);
  EXPECT_EQ(d.b_zo, c.int8.b_zo);
  // Selecting int8 is accepted with the default optimizer (sgd).
  EXPECT_EQ(name(parse(R"({"model": {"precision": "INT8"}})").model.precision), "int8");
}

TEST(ConfigInt8Test, ScheduleAt) {
  const Schedule s{{{0, 7}, {3, 2}, {10, 1}}};
  EXPECT_EQ(s.at(0), 7);
  EXPECT_EQ(s.at(2), 7);
  EXPECT_EQ(s.at(3), 2);
  EXPECT_EQ(s.at(9), 2);
  EXPECT_EQ(s.at(10), 1);
  EXPECT_EQ(s.at(1000000), 1);
  EXPECT_EQ((Schedule{{{0, 0.25}}}).at(123), 0.25);
}

TEST(ConfigInt8Test, NumberIsAConstantSchedule) {
  const ExperimentConfig c =
      parse(R"({"int8": {"r_max": 63, "b_zo": 2, "b_bp": 4.0, "p_zero": 0, "sign": "Integer"}})");
  EXPECT_EQ(c.int8.r_max, 63);
  EXPECT_EQ(c.int8.b_zo.points, (Points{{0, 2}}));
  EXPECT_EQ(c.int8.b_bp.points, (Points{{0, 4}}));  // an integral float is an integer
  EXPECT_EQ(c.int8.p_zero.points, (Points{{0, 0}}));
  EXPECT_EQ(c.int8.b_bp.at(0), 4);
  EXPECT_EQ(c.int8.b_bp.at(500), 4);
  EXPECT_EQ(name(c.int8.sign), "integer");
}

TEST(ConfigInt8Test, ObjectSchedule) {
  // Keys in any order are sorted; leading zeros are allowed; points that do not change the
  // value are dropped (so {"0": 2, "9": 2} is the constant 2).
  const ExperimentConfig c = parse(R"({"int8": {
      "b_bp": {"50": 3, "0": 6, "020": 4},
      "p_zero": {"0": 0.1, "5": 0.1, "8": 0.75},
      "b_zo": {"0": 2, "9": 2}}})");
  EXPECT_EQ(c.int8.b_bp.points, (Points{{0, 6}, {20, 4}, {50, 3}}));
  EXPECT_EQ(c.int8.p_zero.points, (Points{{0, 0.1}, {8, 0.75}}));
  EXPECT_EQ(c.int8.b_zo.points, (Points{{0, 2}}));
  EXPECT_EQ(c.int8.b_bp.at(19), 6);
  EXPECT_EQ(c.int8.p_zero.at(7), 0.1);
  EXPECT_EQ(c.int8.p_zero.at(8), 0.75);
  EXPECT_EQ(parse(R"({"int8": {"b_bp": {"0": 2}}})").int8.b_bp.points, (Points{{0, 2}}));
}

TEST(ConfigInt8Test, Overrides) {
  const ExperimentConfig c =
      parse("{}", {"model.precision=int8", "int8.b_bp=4", R"(int8.p_zero={"0":0.2,"10":0.6})",
                   "int8.sign=integer", "int8.r_max=15", R"(int8={"b_zo": 3})"});
  EXPECT_EQ(name(c.model.precision), "int8");
  EXPECT_EQ(c.int8.b_bp.points, (Points{{0, 4}}));
  EXPECT_EQ(c.int8.p_zero.points, (Points{{0, 0.2}, {10, 0.6}}));
  EXPECT_EQ(name(c.int8.sign), "integer");
  EXPECT_EQ(c.int8.r_max, 15);
  EXPECT_EQ(c.int8.b_zo.points, (Points{{0, 3}}));
  // An override replaces the file's schedule as a whole (no merging of points).
  const ExperimentConfig d = parse(R"({"int8": {"b_bp": {"0": 7, "30": 2}}})",
                                   {R"(int8.b_bp={"0":5,"10":3})"});
  EXPECT_EQ(d.int8.b_bp.points, (Points{{0, 5}, {10, 3}}));
  EXPECT_EQ(parse(R"({"int8": {"b_bp": {"0": 7, "30": 2}}})", {"int8.b_bp=4"}).int8.b_bp.points,
            (Points{{0, 4}}));
}

TEST(ConfigInt8Test, DumpWritesConstantsAsNumbers) {
  const std::string dump = to_json_text(parse("{}", {"int8.b_bp=4", "int8.p_zero=0.5"}));
  EXPECT_NE(dump.find("\"b_bp\": 4,"), std::string::npos) << dump;
  EXPECT_NE(dump.find("\"p_zero\": 0.5,"), std::string::npos) << dump;
  EXPECT_NE(dump.find("\"b_zo\": 1,"), std::string::npos) << dump;
  EXPECT_NE(dump.find("\"r_max\": 3,"), std::string::npos) << dump;
  EXPECT_NE(dump.find("\"sign\": \"float\""), std::string::npos) << dump;
  const std::string def = to_json_text(ExperimentConfig{});
  EXPECT_NE(def.find("\"b_bp\": \"auto\","), std::string::npos) << def;
  EXPECT_NE(def.find("\"p_zero\": \"auto\","), std::string::npos) << def;
  EXPECT_NE(def.find("\"batch_size\": \"auto\","), std::string::npos) << def;
}

TEST(ConfigInt8Test, RoundTrip) {
  const ExperimentConfig c = parse(R"({"model": {"precision": "int8"},
    "int8": {"r_max": 127, "b_zo": {"0": 7, "1": 1}, "b_bp": {"0": 15, "99": 1},
             "p_zero": {"0": 0, "2": 0.1, "30": 0.9999999}, "sign": "integer"},
    "train": {"batch_size": 128}})");
  const ExperimentConfig back = parse_config(to_json_text(c), "dump", {});
  expect_same(back, c);
  const ExperimentConfig k = parse("{}", {"model.precision=int8", "int8.p_zero=0.3"});
  expect_same(parse_config(to_json_text(k), "dump", {}), k);
}

TEST(ConfigInt8Test, ScheduleErrorsNameTheKey) {
  struct Case {
    const char* json;
    const char* part;
    const char* part2 = "";
  };
  const Case cases[] = {
      {R"({"int8": {"b_bp": {"0": 5, "x": 3}}})",
       "config.json: int8.b_bp: schedule key 'x' is not an epoch number"},
      {R"({"int8": {"b_bp": {"0": 5, "-1": 3}}})",
       "int8.b_bp: schedule key '-1' is not an epoch number"},
      {R"({"int8": {"b_bp": {"0": 5, "2.5": 3}}})",
       "int8.b_bp: schedule key '2.5' is not an epoch number"},
      {R"({"int8": {"b_bp": {"0": 5, " 3": 3}}})",
       "int8.b_bp: schedule key ' 3' is not an epoch number"},
      {R"({"int8": {"b_bp": {"0": 5, "9999999999": 3}}})",
       "int8.b_bp: schedule key '9999999999' is not an epoch number"},
      {R"({"int8": {"p_zero": {"0": 0.5, "20": 1.5}}})",
       "config.json: int8.p_zero: value 1.5 at epoch 20 is outside [0, 1]"},
      {R"({"int8": {"b_bp": {"0": 5, "20": -1}}})",
       "int8.b_bp: value -1 at epoch 20 is outside [0, 15]"},
      {R"({"int8": {"b_zo": {"0": 9}}})", "int8.b_zo: value 9 at epoch 0 is outside [1, 7]"},
      {R"({"int8": {"b_bp": {"0": 4.5}}})",
       "int8.b_bp: value 4.5 at epoch 0 is not an integer"},
      {R"({"int8": {"p_zero": {"0": "half"}}})",
       "int8.p_zero: value \"half\" at epoch 0 is not a number"},
      {R"({"int8": {"b_bp": {"20": 4, "50": 3}}})",
       "config.json: int8.b_bp: schedule must start at epoch 0"},
      {R"({"int8": {"b_bp": {}}})", "int8.b_bp: schedule must start at epoch 0"},
      {R"({"int8": {"b_bp": {"0": 5, "00": 4}}})", "int8.b_bp: schedule key '00' repeats epoch 0"},
      {R"({"int8": {"b_bp": 4.5}})", "key 'int8.b_bp' must be an integer in [0, 15] or a schedule"},
      {R"({"int8": {"b_bp": "fast"}})", "key 'int8.b_bp' must be", "\"fast\""},
      {R"({"int8": {"b_bp": [5, 4]}})", "key 'int8.b_bp' must be",
       "schedule {\"0\": value, \"<epoch>\": value, ...}, got [5,4]"},
      {R"({"int8": {"p_zero": true}})", "key 'int8.p_zero' must be a number in [0, 1]"},
      {R"({"int8": {"b_bp": "fast"}})", "key 'int8.b_bp' must be"},
      {R"({"int8": {"r_max": 2.5}})", "key 'int8.r_max' must be an integer"},
      {R"({"int8": 3})", "key 'int8' is a section and must be an object"},
      {R"({"int8": {"bbp": 3}})", "unknown key 'int8.bbp' (did you mean 'int8.b_bp'?)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.json);
    expect_error([&] { parse(c.json); }, {c.part, c.part2});
  }
}

TEST(ConfigInt8Test, OverrideErrors) {
  expect_error([] { parse("{}", {R"(int8.b_bp={"10":3})"}); },
               {"--set: int8.b_bp: schedule must start at epoch 0"});
  expect_error([] { parse("{}", {R"(int8.p_zero={"0":0.3,"20":1.25})"}); },
               {"--set: int8.p_zero: value 1.25 at epoch 20 is outside [0, 1]"});
  // 1 itself is allowed: z all zero, the ZO part frozen from that epoch on.
  EXPECT_EQ(parse("{}", {R"(int8.p_zero={"0":0.3,"20":1})"}).int8.p_zero.at(20), 1.0);
  expect_error([] { parse("{}", {"int8.b_bp=abc"}); },
               {"--set", "key 'int8.b_bp' must be an integer in [0, 15] or a schedule", "\"abc\""});
  expect_error([] { parse("{}", {"int8.b_bp={0:5}"}); },  // not JSON: taken as text
               {"--set", "key 'int8.b_bp' must be", "\"{0:5}\""});
  expect_error([] { parse("{}", {"int8.sign=exact"}); },
               {"--set", "'int8.sign'", "float, integer"});
}

// A key that has no effect is an error when it can only be a mistake, a warning (and ignored)
// where shipped configs set it for the common case: --set model.precision=int8 on them works.
TEST(ConfigTest, KeysWithoutEffect) {
  auto warned = [](const ExperimentConfig& c, const std::string& key) {
    for (const std::string& w : c.warnings)
      if (w.starts_with(key + " has no effect")) return true;
    return false;
  };
  const ExperimentConfig q = load_config(ZT_SOURCE_DIR "/configs/quickstart.json", {});
  EXPECT_TRUE(q.warnings.empty());
  const ExperimentConfig q8 =
      load_config(ZT_SOURCE_DIR "/configs/quickstart.json", {"model.precision=int8"});
  EXPECT_EQ(q8.model.precision, Precision::kInt8);
  EXPECT_TRUE(warned(q8, "optimizer.name"));
  EXPECT_TRUE(warned(q8, "zo.eps") || q8.zo.eps == ExperimentConfig{}.zo.eps);
  const ExperimentConfig p8 = load_config(ZT_SOURCE_DIR "/configs/pointnet-synthetic.json",
                                          {"model.precision=int8"});
  EXPECT_TRUE(warned(p8, "optimizer.bp_lr"));
  // Errors name the key and why.
  expect_error([] { parse("{}", {"data.augment=rotate"}); },
               {"data.augment has no effect", "point clouds"});
  expect_error([] { parse("{}", {"data.points=64"}); }, {"data.points has no effect"});
  expect_error(
      [] { parse("{}", {"data.dataset=modelnet40", "model.arch=pointnet", "data.rotate_degrees=30"}); },
      {"data.rotate_degrees has no effect", "image sets"});
  expect_error([] { parse("{}", {"data.dataset=modelnet40", "model.arch=pointnet", "data.subset=64"}); },
               {"data.subset has no effect"});
  EXPECT_TRUE(warned(parse("{}", {"data.subset_seed=4"}), "data.subset_seed"));
  const ExperimentConfig rot = parse("{}", {"data.subset=1024", "data.rotate_degrees=-45"});
  EXPECT_TRUE(rot.warnings.empty());
  EXPECT_EQ(rot.data.subset, 1024);
  EXPECT_EQ(rot.data.rotate_degrees, -45.0);
  expect_error([] { parse("{}", {"data.rotate_degrees=400"}); }, {"data.rotate_degrees"});
  // Warnings for the rest; a key left at its default never counts.
  EXPECT_TRUE(warned(parse("{}", {"int8.r_max=5"}), "int8.r_max"));
  EXPECT_TRUE(warned(parse("{}", {"method.name=full_bp", "zo.eps=0.01"}), "zo.eps"));
  EXPECT_TRUE(warned(parse("{}", {"method.name=full_zo", "method.partition=2"}),
                     "method.partition"));
  EXPECT_TRUE(parse("{}", {"int8.r_max=3", "data.augment=rotate_jitter"}).warnings.empty());
  // A written-out config.json (every key) reads back without warnings.
  EXPECT_TRUE(parse(to_json_text(q), {}).warnings.empty());
}

TEST(ConfigInt8Test, KeysHelp) {
  const std::string help = keys_help();
  EXPECT_NE(help.find("  int8.r_max (integer in [1, 127], default 3): perturbation range"),
            std::string::npos)
      << help;
  EXPECT_NE(help.find("  int8.b_bp (integer in [0, 15] or {\"epoch\": value} schedule or auto, "
                      "default \"auto\"): "),
            std::string::npos)
      << help;
  EXPECT_NE(help.find("  int8.p_zero (number in [0, 1] or {\"epoch\": value} schedule or auto, "
                      "default \"auto\"): "),
            std::string::npos)
      << help;
  EXPECT_NE(help.find("  int8.b_zo (integer in [1, 7] or {\"epoch\": value} schedule, default 1)"),
            std::string::npos)
      << help;
  EXPECT_NE(help.find("  int8.sign (float | integer | integer_eq12, default \"float\"): "), std::string::npos);
  EXPECT_NE(help.find("  model.precision (fp32 | int8, default \"fp32\"): "), std::string::npos);
  EXPECT_NE(help.find("NITI integer training"), std::string::npos);
  EXPECT_NE(help.find("INT8*"), std::string::npos);
}

TEST(ConfigInt8Test, LoadFixture) {
  const ExperimentConfig c = load_config(ZT_FIXTURES_DIR "/int8.json", {});
  EXPECT_EQ(name(c.model.precision), "int8");
  EXPECT_EQ(name(c.optimizer.name), "sgd");
  EXPECT_EQ(c.int8.r_max, 7);
  EXPECT_EQ(c.int8.b_bp.points, (Points{{0, 5}, {20, 4}, {50, 3}}));
  EXPECT_EQ(c.int8.p_zero.at(25), 0.5);
  EXPECT_EQ(name(c.int8.sign), "integer");
  EXPECT_EQ(c.train.batch_size, std::nullopt);
  EXPECT_EQ(resolve_batch_size(c), 256);
}

TEST(ConfigTest, ResolveBatchSize) {
  EXPECT_EQ(parse("{}").train.batch_size, std::nullopt);
  EXPECT_EQ(resolve_batch_size(parse("{}")), 32);
  EXPECT_EQ(resolve_batch_size(parse("{}", {"model.precision=int8"})), 256);
  EXPECT_EQ(resolve_batch_size(parse("{}", {"model.precision=int8", "model.arch=pointnet",
                                             "data.dataset=modelnet40"})),
            32);
  EXPECT_EQ(resolve_batch_size(parse("{}", {"train.batch_size=64"})), 64);
  EXPECT_EQ(resolve_batch_size(parse("{}", {"model.precision=int8", "train.batch_size=64"})), 64);
  EXPECT_EQ(resolve_batch_size(parse("{}", {"model.precision=int8", "train.batch_size=1"})), 1);
  EXPECT_EQ(resolve_batch_size(parse(R"({"train": {"batch_size": "auto"}})")), 32);
  // The dump keeps "auto" (the choice), so a resumed run resolves it the same way.
  const ExperimentConfig i8 = parse("{}", {"model.precision=int8"});
  EXPECT_EQ(resolve_batch_size(parse_config(to_json_text(i8), "dump", {})), 256);
}

}  // namespace
}  // namespace zt::config
