// Hostile config input (docs/design.md §12, "Config input"): every class of value the reader must refuse
// with one error naming the key and what it accepts, tried on every key of the schema where the
// class applies, so a key added later is covered too. tests/cli/hostile_config.sh runs the
// binary on the same classes (and the flags).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "../support.hpp"
#include "zotrain/config/config.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/data/idx.hpp"

namespace zt::config {
namespace {

using zt::test::expect_error;

ExperimentConfig parse(const std::string& text, const std::vector<std::string>& ov = {}) {
  return parse_config(text, "config.json", ov);
}

// {"a": {"b": VALUE}} for the dotted key "a.b".
std::string doc_with(const std::string& key, const std::string& value) {
  std::string open, close;
  std::size_t start = 0;
  for (std::size_t dot = key.find('.'); dot != std::string::npos; dot = key.find('.', start)) {
    open += "{\"" + key.substr(start, dot - start) + "\": ";
    close += "}";
    start = dot + 1;
  }
  return open + "{\"" + key.substr(start) + "\": " + value + "}" + close;
}

// What the effective config says of `key` ("zo.eps" -> the value's JSON text).
std::string dumped(const ExperimentConfig& c, const std::string& key) {
  const std::string text = to_json_text(c);
  const std::string leaf = key.substr(key.rfind('.') + 1);
  // Good enough for these tests: the first line holding "leaf": after the section's name.
  const std::string section = key.find('.') == std::string::npos ? "" : key.substr(0, key.find('.'));
  std::size_t from = section.empty() ? 0 : text.find("\"" + section + "\": {");
  const std::size_t at = text.find("\"" + leaf + "\": ", from);
  if (at == std::string::npos) return "";
  const std::size_t begin = at + leaf.size() + 4;
  return text.substr(begin, text.find_first_of(",\n", begin) - begin);
}

// Integers beyond int (the type the trainers and loaders take), on every key: refused naming the
// key and a range, or kept exactly (a seed, a byte size, a number key) — never wrapped.
TEST(ConfigHostileTest, IntegersBeyondIntAreRefusedOrKeptExactly) {
  for (const std::string value : {"4294967297", "2147483648", "-2147483649", "9223372036854775808"}) {
    for (const std::string& key : key_names()) {
      SCOPED_TRACE(key + " = " + value);
      try {
        const ExperimentConfig c = parse(doc_with(key, value));
        const std::string got = dumped(c, key);
        // Kept: the same integer, or the same number as a double (1e+xx spelling).
        EXPECT_EQ(std::stod(got), std::stod(value)) << got;
      } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find(key), std::string::npos) << msg;
        EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
      }
    }
  }
}

TEST(ConfigHostileTest, IntegerKeysNameTheirRange) {
  for (const char* key : {"data.train_limit", "data.test_limit", "data.subset", "data.validation",
                          "train.epochs", "train.max_steps", "train.eval_every", "train.log_every",
                          "optimizer.decay.every_epochs", "output.checkpoint_every"}) {
    for (const char* value : {"4294967297", "2147483648", "2.5", "\"abc\"", "1e300", "-1"}) {
      SCOPED_TRACE(std::string(key) + " = " + value);
      expect_error([&] { parse(doc_with(key, value)); },
                   {"config.json: key '" + std::string(key) + "' must be an integer in [",
                    ", 2147483647]"});
      expect_error([&] { parse("{}", {std::string(key) + "=" + value}); },
                   {"--set: key '" + std::string(key) + "' must be an integer in ["});
    }
  }
  expect_error([] { parse(R"({"train": {"threads": 2147483648}})"); },
               {"'train.threads' must be an integer in [1, 1024] or \"auto\", got 2147483648"});
  expect_error([] { parse(R"({"data": {"points": 4294967297}})"); },
               {"'data.points' must be an integer in [1, 1048576], got 4294967297"});
  // The largest value is taken whole.
  EXPECT_EQ(parse(R"({"data": {"train_limit": 2147483647}})").data.train_limit, 2147483647);
}

// A nonzero literal that reads as 0 or a subnormal (1e-400 would be "freeze"), or beyond a
// double, on every key, in a file and by --set.
TEST(ConfigHostileTest, NumbersThatUnderOrOverflowAreRefused) {
  for (const std::string& key : key_names()) {
    for (const char* value : {"1e-400", "-2.5e-999", "4e-320", "1e999", "-1e400"}) {
      SCOPED_TRACE(key + " = " + value);
      const bool small = value[0] == '4' || std::string(value).find("e-") != std::string::npos;
      const std::string what = small ? "is too small for a double" : "is beyond the range of a double";
      expect_error([&] { parse(doc_with(key, value)); },
                   {"config.json: key '" + key + "': the number " + value + " " + what});
    }
  }
  expect_error([] { parse("{}", {"optimizer.lr=1e-400"}); },
               {"--set optimizer.lr: the number 1e-400 is too small for a double"});
  expect_error([] { parse("{}", {"optimizer.lr=1e999"}); },
               {"--set optimizer.lr: the number 1e999 is beyond the range of a double"});
  expect_error([] { parse("{}", {R"(zo={"eps": 1e-400})"}); },
               {"--set zo: key 'eps': the number 1e-400 is too small"});
  // Zero spelled any way is zero; a string key takes such text as it is.
  EXPECT_EQ(parse(R"({"optimizer": {"lr": 0.000e-999}})").optimizer.lr, 0.0);
  EXPECT_EQ(parse("{}", {"name=1e-400"}).name, "1e-400");
  // Below a float's smallest normal value the trainers would compute with 0.
  expect_error([] { parse(R"({"optimizer": {"lr": 1e-39}})"); },
               {"'optimizer.lr' must be 0 or at least 1.2e-38 in magnitude", "float"});
  expect_error([] { parse(R"({"data": {"rotate_degrees": -1e-40}})"); },
               {"'data.rotate_degrees' must be 0 or at least 1.2e-38"});
}

TEST(ConfigHostileTest, RepeatedKeysAndSectionsAreRefused) {
  expect_error([] { parse(R"({"name": "a", "name": "b"})"); },
               {"config.json: key 'name' appears twice"});
  expect_error([] { parse(R"({"zo": {"eps": 0.01}, "seed": 1, "zo": {"grad_clip": 1}})"); },
               {"config.json: section 'zo' appears twice"});
  expect_error([] { parse(R"({"zo": {"eps": 0.01, "grad_clip": 1, "eps": 0.02}})"); },
               {"config.json: key 'zo.eps' appears twice"});
  expect_error([] { parse(R"({"optimizer": {"decay": {"factor": 0.5, "factor": 0.9}}})"); },
               {"key 'optimizer.decay.factor' appears twice"});
  expect_error([] { parse(R"({"int8": {"b_zo": {"0": 1, "0": 2}}})"); },
               {"key 'int8.b_zo.0' appears twice"});
  expect_error([] { parse("{}", {R"(zo={"eps": 0.1, "eps": 0.2})"}); },
               {"--set zo: key 'eps' appears twice"});
  // The same key in two sections is two keys.
  EXPECT_EQ(parse(R"({"method": {"name": "full_zo"}, "optimizer": {"name": "adam"}})").method.name,
            Method::kFullZo);
}

class ConfigFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("zt-hostile-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  std::filesystem::path dir_;
};

TEST_F(ConfigFileTest, AtMostOneMebibyteIsRead) {
  // Exactly the limit: a config padded with spaces loads.
  const std::string body = R"({"train": {"epochs": 2}})";
  const std::string fits = write("fits.json", body + std::string(kMaxConfigBytes - body.size(), ' '));
  EXPECT_EQ(load_config(fits, {}).train.epochs, 2);
  const std::string big = write("big.json", body + std::string(kMaxConfigBytes - body.size() + 1, ' '));
  expect_error([&] { load_config(big, {}); }, {big + ": larger than 1 MiB"});
  // Devices report a size of 0: only a bounded read stops them.
  for (const char* dev : {"/dev/zero", "/dev/urandom"}) {
    if (!std::filesystem::exists(dev)) continue;
    expect_error([&] { load_config(dev, {}); }, {std::string(dev) + ": larger than 1 MiB"});
  }
}

TEST(ConfigHostileTest, NameIsOnePathComponent) {
  struct Case {
    std::string json, rule;
  };
  const std::vector<Case> cases = {
      {R"("")", "must not be empty"},
      {R"("../../x")", "one path component"},
      {R"("a/b")", "one path component"},
      {R"("a\\b")", "one path component"},
      {R"(".")", "must not be '.' or '..'"},
      {R"("..")", "must not be '.' or '..'"},
      {R"("-rf")", "must not start with '-'"},
      {R"("a\u0000b")", "control characters"},
      {R"("a\nb")", "control characters"},
      {"\"" + std::string(201, 'x') + "\"", "at most 200 bytes, got 201"},
      {"\"" + std::string(10 << 20, 'x') + "\"", "at most 200 bytes, got 10485760"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.json.substr(0, 40));
    expect_error([&] { parse(R"({"name": )" + c.json + "}"); },
                 {"config.json: key 'name' ", c.rule, "runs/<name>"});
  }
  expect_error([] { parse("{}", {"name=../../x"}); }, {"--set: key 'name'", "one path component"});
  // A deeply nested value is refused by its kind (no recursion through it).
  const std::size_t depth = 200000;
  expect_error([&] { parse(R"({"name": )" + std::string(depth, '[') + std::string(depth, ']') + "}"); },
               {"key 'name' must be a string, got an array"});
  // The message does not repeat a huge name.
  try {
    parse(R"({"name": ")" + std::string(10 << 20, 'x') + "\"}");
  } catch (const Error& e) {
    EXPECT_LT(std::string(e.what()).size(), 300u);
  }
  EXPECT_EQ(parse(R"({"name": "run-1_x.y"})").name, "run-1_x.y");
  EXPECT_EQ(parse(R"({"name": ")" + std::string(200, 'n') + "\"}").name.size(), 200u);
}

TEST(ConfigHostileTest, PathStringsHaveNoNulAndAFileSystemLength) {
  expect_error([] { parse(R"({"data": {"root": "data\u0000x"}})"); },
               {"key 'data.root' must be a string of at most 4096 bytes without NUL"});
  expect_error([] { parse(R"({"output": {"dir": ")" + std::string(5000, 'd') + "\"}}"); },
               {"key 'output.dir' must be a string of at most 4096 bytes", "got 5000 bytes"});
  EXPECT_EQ(parse(R"({"output": {"dir": "a/b/../c"}})").output.dir, "a/b/../c");  // a path
}

// zo.eps and the learning rates: refused where no training can be meaningful, a warning in the
// band beyond the usual values.
TEST(ConfigHostileTest, AbsurdEpsAndLearningRates) {
  expect_error([] { parse(R"({"zo": {"eps": 1e30}})"); },
               {"key 'zo.eps' must be a number in [1e-09, 1], got 1e+30"});
  expect_error([] { parse(R"({"zo": {"eps": 1e-12}})"); }, {"'zo.eps'", "in [1e-09, 1]"});
  expect_error([] { parse("{}", {"optimizer.lr=1e308"}); },
               {"--set: key 'optimizer.lr' must be a number in [0, 1e+10] or \"auto\""});
  expect_error([] { parse(R"({"optimizer": {"bp_lr": 1e11}})"); },
               {"'optimizer.bp_lr' must be a number in [0, 1e+10] or null"});
  const auto warned = [](const ExperimentConfig& c, const std::string& text) {
    for (const std::string& w : c.warnings)
      if (w.find(text) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(warned(parse(R"({"optimizer": {"lr": 500}})"), "optimizer.lr = 500.0 is unusual"));
  EXPECT_TRUE(warned(parse(R"({"zo": {"eps": 0.5}})"), "zo.eps = 0.5 is unusual"));
  EXPECT_TRUE(parse(R"({"optimizer": {"lr": 30}, "zo": {"eps": 0.01}})").warnings.empty());
  // Poor Man's Training's int8 steps (10 to 30) are usual.
  const ExperimentConfig pmt = parse(
      R"({"model": {"precision": "int8"}, "zo": {"preset": "pmt"}, "optimizer": {"lr": 30}})");
  EXPECT_FALSE(warned(pmt, "unusual"));
}

// Every config shipped in configs/ and tests/fixtures/ loads under these rules (not
// configs/paper/finetune.json: Table 2's overrides for scripts/reproduce/table2, not a run config).
TEST(ConfigHostileTest, ShippedConfigsStayValid) {
  namespace fs = std::filesystem;
  int loaded = 0;
  for (const char* dir : {"/configs", "/tests/fixtures"}) {
    for (const auto& e : fs::recursive_directory_iterator(std::string(ZT_SOURCE_DIR) + dir)) {
      const std::string p = e.path().string();
      if (e.path().extension() != ".json" || e.path().filename() == "bad-key.json" ||
          e.path().filename() == "digests.json" || e.path().filename() == "finetune.json")
        continue;
      SCOPED_TRACE(p);
      EXPECT_NO_THROW(load_config(p, {}));
      ++loaded;
    }
  }
  EXPECT_GE(loaded, 20);
}

// A limit beyond the file (the largest data.train_limit, or any int64 the loaders are given)
// keeps all of it: no wrap, no abort.
TEST(ConfigHostileTest, DataLimitBeyondTheFileKeepsAll) {
  const std::string root = std::string(ZT_SOURCE_DIR) + "/data/mnist-subset";
  const data::ImageDataset all = data::load_image_dataset(root, 0, 0);
  for (const std::int64_t limit : {std::int64_t{2147483647}, std::int64_t{1} << 31,
                                   std::int64_t{4294967297}}) {
    SCOPED_TRACE(limit);
    const data::ImageDataset ds = data::load_image_dataset(root, limit, limit);
    EXPECT_EQ(ds.train.count, all.train.count);
    EXPECT_EQ(ds.test.count, all.test.count);
    const data::ImageFiles f = data::open_image_dataset(root, limit, limit);
    EXPECT_EQ(f.train.samples->count(), all.train.count);
  }
}

// `zotrain --help` lists every key's range readably: no number of more than 10 digits.
TEST(ConfigHostileTest, HelpRangesAreReadable) {
  const std::string help = keys_help();
  const std::regex long_number("[0-9]{11,}");
  EXPECT_FALSE(std::regex_search(help, long_number)) << help;
  EXPECT_NE(help.find("train.threads (integer in [1, 1024]"), std::string::npos);
  EXPECT_NE(help.find("data.train_limit (integer in [1, 2147483647]"), std::string::npos);
}

}  // namespace
}  // namespace zt::config
