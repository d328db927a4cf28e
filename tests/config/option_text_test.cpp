// No option text is compared above the config layer (config/options.hpp): every source under
// src/ outside src/config/ compares the parsed enums, never a config value's text. The check
// greps for a string literal that is an option's text (a registry name or a kEnumText entry)
// on either side of == or !=, or passed to compare/strcmp.
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "zotrain/config/catalogue.hpp"
#include "zotrain/config/methods.hpp"
#include "zotrain/config/options.hpp"

namespace zt::config {
namespace {

template <class E>
void add_choices(std::set<std::string>& s) {
  for (std::string_view t : choices<E>()) s.emplace(t);
}
template <class Info>
void add_names(std::set<std::string>& s, const std::vector<Info>& list) {
  for (const Info& i : list) s.emplace(i.name);
}

// Every text a config value can have.
std::set<std::string> option_texts() {
  std::set<std::string> s;
  add_choices<Precision>(s);
  add_choices<Augment>(s);
  add_choices<BpActivations>(s);
  add_choices<OptimizerKind>(s);
  add_choices<MemoryPlan>(s);
  add_choices<Int8Sign>(s);
  add_choices<Int8Input>(s);
  add_choices<PezoOffset>(s);
  add_names(s, methods());
  add_names(s, estimators());
  add_names(s, perturbations());
  add_names(s, presets());
  add_names(s, architectures());
  add_names(s, datasets());
  for (std::string_view p : kPartitionNames) s.emplace(p);
  return s;
}

// The option texts `source` compares, one "line N: text" each.
std::vector<std::string> option_text_comparisons(const std::string& source,
                                                 const std::set<std::string>& texts) {
  static const std::regex kCompared(
      R"re((?:[!=]=\s*"([^"\\]*)")|(?:"([^"\\]*)"\s*[!=]=)|(?:(?:compare|strcmp)\s*\([^;]*?"([^"\\]*)"))re");
  std::vector<std::string> hits;
  std::istringstream lines(source);
  std::string line;
  for (int n = 1; std::getline(lines, line); ++n) {
    for (std::sregex_iterator it(line.begin(), line.end(), kCompared), end; it != end; ++it) {
      for (std::size_t g = 1; g <= 3; ++g)
        if ((*it)[g].matched && texts.count((*it)[g].str()))
          hits.push_back("line " + std::to_string(n) + ": \"" + (*it)[g].str() + "\"");
    }
  }
  return hits;
}

TEST(ConfigLayering, TheCheckFindsAComparison) {
  const std::set<std::string> texts = option_texts();
  EXPECT_EQ(option_text_comparisons("if (cfg.zo.estimator == \"layerwise\") {}", texts).size(), 1u);
  EXPECT_EQ(option_text_comparisons("bool x = \"int8\" != p;", texts).size(), 1u);
  EXPECT_EQ(option_text_comparisons("if (s.compare(\"stream\") == 0) {}", texts).size(), 1u);
  EXPECT_TRUE(option_text_comparisons("if (only == \"kernels\") {}", texts).empty());
  EXPECT_TRUE(option_text_comparisons("f(\"layerwise\");", texts).empty());
}

TEST(ConfigLayering, NoOptionTextIsComparedAboveTheConfigLayer) {
  namespace fs = std::filesystem;
  const fs::path src = fs::path(ZT_SOURCE_DIR) / "src";
  ASSERT_TRUE(fs::is_directory(src)) << src;
  const std::set<std::string> texts = option_texts();
  std::string found;
  int files = 0;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(src)) {
    const fs::path rel = fs::relative(e.path(), src);
    if (!e.is_regular_file() || *rel.begin() == "config") continue;
    const std::string ext = e.path().extension().string();
    if (ext != ".cpp" && ext != ".hpp" && ext != ".h" && ext != ".c") continue;
    std::ifstream in(e.path());
    std::ostringstream text;
    text << in.rdbuf();
    ++files;
    for (const std::string& hit : option_text_comparisons(text.str(), texts))
      found += "\n  src/" + rel.generic_string() + " " + hit;
  }
  EXPECT_GT(files, 20);
  EXPECT_TRUE(found.empty()) << "option text compared outside src/config/ (compare the config's "
                                "enums instead, config/options.hpp):" << found;
}

}  // namespace
}  // namespace zt::config
