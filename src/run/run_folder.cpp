#include "zotrain/run/run_folder.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "zotrain/core/error.hpp"
#include "zotrain/run/checkpoint.hpp"

namespace zt::run {
namespace fs = std::filesystem;

namespace {

constexpr const char* kClaimFile = ".zotrain-claim";

// Creates dir/.zotrain-claim exclusively; false when another run holds it.
bool take_claim(const std::string& dir) {
  const std::string f = dir + "/" + kClaimFile;
  const int fd = ::open(f.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST) return false;
    throw Error(f + ": cannot create (" + std::strerror(errno) + ")");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  const bool ok = ::write(fd, pid.data(), pid.size()) == static_cast<ssize_t>(pid.size());
  ::close(fd);
  if (!ok) throw Error(f + ": cannot write");
  return true;
}

// Holds files other than a dry run's (config.json, and a summary.json that says dry_run).
bool holds_files(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec) || fs::is_empty(dir, ec)) return false;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string f = e.path().filename().string();
    if (f == "config.json") continue;
    if (f != "summary.json") return true;
    std::ifstream in(e.path());
    const auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.value("dry_run", false)) return true;
  }
  return false;
}

void make_dirs(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(dir + ": cannot create the output directory (" + ec.message() + ")");
}

}  // namespace

RunFolder::RunFolder(std::string dir, std::string numbered_base, Mode mode)
    : dir_(std::move(dir)), base_(std::move(numbered_base)), mode_(mode) {}

void RunFolder::check() const {
  if (dir_.empty()) return;  // numbered: any free number will do
  switch (mode_) {
    case Mode::kResume:
      if (!fs::exists(checkpoint_path()))
        throw Error(checkpoint_path() + ": no checkpoint to resume from");
      return;
    case Mode::kFresh:
    case Mode::kDryRun:
      if (holds_files(dir_))
        throw Error("output directory '" + dir_ + "' already holds files; use --resume " + dir_ +
                    " to continue it, --overwrite to replace it, or another --output-dir");
      return;
    case Mode::kOverwrite: return;
  }
}

void RunFolder::claim() {
  const bool claims = mode_ == Mode::kFresh || mode_ == Mode::kOverwrite;
  if (dir_.empty()) {
    // runs/<name>, runs/<name>-2, ...: the first that no earlier run has claimed or written
    // into (a dry run's files aside) and whose claim file this run creates.
    for (int k = 1;; ++k) {
      const std::string d = k == 1 ? base_ : base_ + "-" + std::to_string(k);
      if (fs::exists(d + "/" + kClaimFile) || holds_files(d)) continue;
      make_dirs(d);
      if (claims && !take_claim(d)) continue;  // another run was quicker
      dir_ = d;
      break;
    }
  } else {
    check();
    make_dirs(dir_);
    if (mode_ == Mode::kFresh && !take_claim(dir_))
      throw Error("output directory '" + dir_ + "' was just claimed by another run");
    if (mode_ == Mode::kOverwrite) take_claim(dir_);  // (kept from an earlier run if present)
  }
  if (mode_ == Mode::kResume) return;
  std::error_code ec;  // what an earlier (dry or overwritten) run left
  for (const char* f :
       {"metrics.jsonl", "steps.jsonl", "summary.json", "checkpoint.safetensors",
        "optimizer.safetensors", "optimizer.safetensors.next", "config.json"})
    fs::remove(path(f), ec);
}

void RunFolder::write_config(const config::ExperimentConfig& cfg) const {
  write_file_atomic(path("config.json"), config::to_json_text(cfg));
}

void RunFolder::write_summary(const nlohmann::json& summary) const {
  write_file_atomic(path("summary.json"), summary.dump(2) + "\n");
}

// One write of the whole line; a failed write (a full disk) is cut back off, so the file only
// ever holds whole records.
void RunFolder::append_record(const char* file, const nlohmann::json& record) const {
  const std::string p = path(file);
  const std::string line = record.dump() + "\n";
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(p + ": cannot append a record: " + std::strerror(errno));
  const off_t size = ::lseek(fd, 0, SEEK_END);
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t w = ::write(fd, line.data() + done, line.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const std::string why = w < 0 ? std::strerror(errno) : "nothing written";
      const int cut = size >= 0 ? ::ftruncate(fd, size) : 0;  // drop the partial line (best effort)
      (void)cut;
      ::close(fd);
      throw Error(p + ": cannot append a record: " + why);
    }
    done += static_cast<std::size_t>(w);
  }
  if (::close(fd) != 0) throw Error(p + ": cannot append a record: " + std::strerror(errno));
}

void RunFolder::truncate_records(const char* file,
                                 bool (*keep)(const nlohmann::json&, std::int64_t),
                                 std::int64_t position) const {
  const std::string p = path(file);
  std::ifstream in(p);
  if (!in) return;
  std::string line, kept;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !keep(j, position)) break;
    kept += line + "\n";
  }
  in.close();
  write_file_atomic(p, kept);
}

}  // namespace zt::run
