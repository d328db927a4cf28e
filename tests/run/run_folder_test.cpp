// The run folder: numbered default directories, claimed atomically; explicit ones checked; one
// writer per directory (the lock); a resume without a checkpoint restarts from config.json.
#include "zotrain/run/run_folder.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <thread>

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

std::string error_of(RunFolder& f) {
  try {
    f.claim();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// One writer per directory: while a run holds it, a fresh run, --overwrite, --resume and
// --dry-run are refused naming the directory and the holder, and change nothing; once it is
// gone the directory is free.
TEST(RunFolder, SecondWriterIsRefusedNamingTheHolder) {
  const fs::path d = fresh_dir("locked") / "out";
  auto holder = std::make_unique<RunFolder>(d.string(), "", Mode::kFresh);
  holder->claim();
  const std::string me = "pid " + std::to_string(::getpid()) + " on host ";
  EXPECT_NE(read_text(d / ".zotrain-lock").find(me), std::string::npos) << read_text(d / ".zotrain-lock");
  std::ofstream(d / "config.json") << "{\"name\": \"holder\"}";
  std::ofstream(d / "metrics.jsonl") << "{\"epoch\": 1}\n";
  for (Mode m : {Mode::kOverwrite, Mode::kResume, Mode::kDryRun, Mode::kFresh}) {
    SCOPED_TRACE(static_cast<int>(m));
    RunFolder second(d.string(), "", m);
    if (m == Mode::kResume) second.check();  // config.json, no checkpoint: a restart
    const std::string e = error_of(second);
    EXPECT_NE(e.find("'" + d.string() + "' is in use by another zotrain run (" + me), std::string::npos) << e;
    EXPECT_NE(e.find(".zotrain-lock"), std::string::npos) << e;
    EXPECT_EQ(read_text(d / "metrics.jsonl"), "{\"epoch\": 1}\n");  // untouched
    EXPECT_EQ(read_text(d / "config.json"), "{\"name\": \"holder\"}");
  }
  holder.reset();  // the run ends: the next one may take over
  RunFolder over(d.string(), "", Mode::kOverwrite);
  over.claim();
  EXPECT_FALSE(fs::exists(d / "metrics.jsonl"));
}

// The kernel drops a dead process's lock: a holder killed with SIGKILL does not block the next.
TEST(RunFolder, DeadHoldersLockDoesNotBlock) {
  const fs::path d = fresh_dir("dead-holder") / "out";
  const pid_t child = ::fork();
  if (child == 0) {
    try {
      RunFolder f(d.string(), "", Mode::kFresh);
      f.claim();
      for (;;) ::pause();
    } catch (...) {
    }
    ::_exit(1);
  }
  ASSERT_GT(child, 0);
  const std::string theirs = "pid " + std::to_string(child) + " on host ";
  for (int i = 0; i < 500 && read_text(d / ".zotrain-lock").find(theirs) == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  {
    RunFolder busy(d.string(), "", Mode::kOverwrite);
    EXPECT_NE(error_of(busy).find(theirs), std::string::npos);
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  RunFolder next(d.string(), "", Mode::kOverwrite);
  EXPECT_EQ(error_of(next), "");
  EXPECT_NE(read_text(d / ".zotrain-lock").find("pid " + std::to_string(::getpid())), std::string::npos);
}

// A numbered directory whose lock another process holds (e.g. a dry run that is writing it) is
// passed over; the lock file alone does not make a directory hold files.
TEST(RunFolder, NumberedClaimsPassOverLockedDirectories) {
  const std::string base = (fresh_dir("numbered-locked") / "demo").string();
  RunFolder dry("", base, Mode::kDryRun);
  dry.claim();
  EXPECT_EQ(dry.dir(), base);
  RunFolder fresh("", base, Mode::kFresh);
  fresh.claim();
  EXPECT_EQ(fresh.dir(), base + "-2");
  const fs::path only_lock = fresh_dir("only-lock");
  std::ofstream(only_lock / ".zotrain-lock") << "pid 1 on host gone, started long ago\n";
  EXPECT_NO_THROW(RunFolder(only_lock.string(), "", Mode::kFresh).check());
}

// --resume of a directory killed before its first checkpoint restarts from its config.json,
// dropping what that attempt logged; without config.json, or after a finished run, it is refused.
TEST(RunFolder, ResumeWithoutCheckpointRestartsFromConfigJson) {
  const fs::path d = fresh_dir("restart");
  std::ofstream(d / "config.json") << "{}";
  std::ofstream(d / "metrics.jsonl") << "{\"epoch\": 0}\n";
  std::ofstream(d / "steps.jsonl") << "{\"step\": 1}\n{\"st";
  RunFolder r(d.string(), "", Mode::kResume);
  r.check();
  EXPECT_TRUE(r.restarts());
  r.claim();
  EXPECT_TRUE(fs::exists(d / "config.json"));
  EXPECT_FALSE(fs::exists(d / "metrics.jsonl"));
  EXPECT_FALSE(fs::exists(d / "steps.jsonl"));

  const fs::path empty = fresh_dir("restart-nothing");
  try {
    RunFolder(empty.string(), "", Mode::kResume).check();
    ADD_FAILURE() << "resumed a directory without a checkpoint or config.json";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no checkpoint to resume from, and no config.json"),
              std::string::npos) << e.what();
  }
  const fs::path done = fresh_dir("restart-finished");
  std::ofstream(done / "config.json") << "{}";
  std::ofstream(done / "summary.json") << "{\"test_accuracy\": 98}";
  try {
    RunFolder(done.string(), "", Mode::kResume).check();
    ADD_FAILURE() << "restarted a finished run";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds a finished run"), std::string::npos) << e.what();
  }
}

// What --resume read must still be there when it takes the lock: a checkpoint saved in between
// (by a run that has just ended) refuses the start instead of resuming from the older one.
TEST(RunFolder, ResumeRefusesACheckpointThatChangedWhileStarting) {
  const fs::path d = fresh_dir("changed");
  std::ofstream(d / "config.json") << "{}";
  std::ofstream(d / "checkpoint.safetensors") << "one";
  RunFolder r(d.string(), "", Mode::kResume);
  r.check();
  EXPECT_FALSE(r.restarts());
  std::ofstream(d / "checkpoint.safetensors.tmp") << "another";
  fs::rename(d / "checkpoint.safetensors.tmp", d / "checkpoint.safetensors");
  EXPECT_NE(error_of(r).find("checkpoint.safetensors changed while this run was starting"),
            std::string::npos);
  // The same for a restart that finds a checkpoint under the lock.
  const fs::path e = fresh_dir("changed-restart");
  std::ofstream(e / "config.json") << "{}";
  RunFolder s(e.string(), "", Mode::kResume);
  s.check();
  EXPECT_TRUE(s.restarts());
  std::ofstream(e / "checkpoint.safetensors") << "one";
  EXPECT_NE(error_of(s).find("changed while this run was starting"), std::string::npos);
  EXPECT_TRUE(fs::exists(e / "config.json"));
}

}  // namespace
}  // namespace zt::run
