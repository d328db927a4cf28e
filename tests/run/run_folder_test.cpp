// The run folder: numbered default directories, claimed atomically; explicit ones checked.
#include "zotrain/run/run_folder.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "zotrain/core/error.hpp"

namespace zt::run {
namespace {

namespace fs = std::filesystem;
using Mode = RunFolder::Mode;

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("zt-folder-" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(RunFolder, NumbersItselfPastEarlierRuns) {
  const std::string base = (fresh_dir("numbering") / "demo").string();
  auto claim = [&] {
    RunFolder f("", base, Mode::kFresh);
    f.claim();
    return f.dir();
  };
  fs::create_directories(base);  // empty: still usable
  EXPECT_EQ(claim(), base);
  EXPECT_EQ(claim(), base + "-2");  // claimed by the first, even before it writes anything
  fs::create_directories(base + "-3");
  std::ofstream(base + "-3/summary.json") << "{}";  // an older run without a claim file
  EXPECT_EQ(claim(), base + "-4");
}

// Processes started together each get their own directory.
TEST(RunFolder, ConcurrentClaimsNeverCollide) {
  const fs::path root = fresh_dir("concurrent");
  const std::string base = (root / "run").string();
  constexpr int kProcs = 8;
  for (int i = 0; i < kProcs; ++i) {
    if (::fork() == 0) {
      int rc = 0;
      try {
        RunFolder f("", base, Mode::kFresh);
        f.claim();
        std::ofstream(root / ("claimed-" + std::to_string(i))) << f.dir();
      } catch (...) {
        rc = 1;
      }
      ::_exit(rc);
    }
  }
  for (int i = 0; i < kProcs; ++i) {
    int status = 0;
    ::wait(&status);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::set<std::string> dirs;
  for (int i = 0; i < kProcs; ++i) {
    std::ifstream in(root / ("claimed-" + std::to_string(i)));
    std::string d;
    std::getline(in, d);
    EXPECT_FALSE(d.empty()) << i;
    dirs.insert(d);
  }
  EXPECT_EQ(dirs.size(), static_cast<std::size_t>(kProcs));
}

TEST(RunFolder, ExplicitDirectoryRules) {
  const fs::path d = fresh_dir("explicit") / "out";
  RunFolder(d.string(), "", Mode::kFresh).claim();  // absent or empty: fine
  std::ofstream(d / "summary.json") << "{}";
  EXPECT_THROW(RunFolder(d.string(), "", Mode::kFresh).check(), Error);
  RunFolder over(d.string(), "", Mode::kOverwrite);
  over.claim();
  EXPECT_FALSE(fs::exists(d / "summary.json"));  // an earlier run's outputs are gone
  EXPECT_THROW(RunFolder(d.string(), "", Mode::kResume).check(), Error);  // no checkpoint
}

}  // namespace
}  // namespace zt::run
