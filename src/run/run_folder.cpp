#include "zotrain/run/run_folder.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "zotrain/core/error.hpp"
#include "zotrain/run/checkpoint.hpp"
#include "zotrain/telemetry/host.hpp"

namespace zt::run {
namespace fs = std::filesystem;

namespace {

constexpr const char* kClaimFile = ".zotrain-claim";
constexpr const char* kLockFile = ".zotrain-lock";

// Creates dir/.zotrain-claim exclusively; false when another run holds it.
bool take_claim(const std::string& dir) {
  const std::string f = dir + "/" + kClaimFile;
  const int fd = ::open(f.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST) return false;
    throw Error(f + ": cannot create (" + std::strerror(errno) + ")");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  const ssize_t w = ::write(fd, pid.data(), pid.size());
  const std::string why = w < 0 ? std::strerror(errno) : "a short write";
  ::close(fd);
  if (w != static_cast<ssize_t>(pid.size())) throw Error(f + ": cannot write (" + why + ")");
  return true;
}

// A summary.json that a dry run wrote (it says dry_run).
bool dry_summary(const fs::path& file) {
  std::ifstream in(file);
  const auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.value("dry_run", false);
}

// Holds files other than a dry run's (config.json, and a summary.json that says dry_run) and the
// lock file.
bool holds_files(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec) || fs::is_empty(dir, ec)) return false;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string f = e.path().filename().string();
    if (f == "config.json" || f == kLockFile) continue;
    if (f != "summary.json" || !dry_summary(e.path())) return true;
  }
  return false;
}

// Which file `path` is and which version of it (device, inode, size, modification time); empty
// when there is none.
std::string identity(const std::string& path) {
  struct stat s {};
  if (::stat(path.c_str(), &s) != 0) return {};
  return std::to_string(s.st_dev) + ":" + std::to_string(s.st_ino) + ":" +
         std::to_string(s.st_size) + ":" + std::to_string(s.st_mtim.tv_sec) + "." +
         std::to_string(s.st_mtim.tv_nsec);
}

// Takes DIR/.zotrain-lock (creating it) with flock, without waiting, and writes the holder into
// it: the descriptor, or -1 with `holder` set to what the file says when another process holds it.
// The lock is held on a read-only descriptor (the holder is written through another, closed at
// once), so it never keeps the file system from being remounted read-only.
int try_lock(const std::string& dir, std::string& holder) {
  const std::string f = dir + "/" + kLockFile;
  const int fd = ::open(f.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(f + ": cannot open the run directory's lock (" + std::strerror(errno) + ")");
  int rc;
  while ((rc = ::flock(fd, LOCK_EX | LOCK_NB)) != 0 && errno == EINTR) {
  }
  if (rc != 0) {
    const int err = errno;
    if (err == EWOULDBLOCK) {
      char buf[512];
      const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
      holder.assign(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
      while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    }
    ::close(fd);
    if (err == EWOULDBLOCK) return -1;
    throw Error(f + ": cannot lock the run directory (" + std::strerror(err) + ")");
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string me = "pid " + std::to_string(::getpid()) + " on host " + host + ", started " +
                         telemetry::utc_now() + "\n";
  const int w = ::open(f.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  const bool ok = w >= 0 && ::write(w, me.data(), me.size()) == static_cast<ssize_t>(me.size());
  const int err = errno;
  if (w >= 0) ::close(w);
  if (!ok) {
    ::close(fd);
    throw Error(f + ": cannot write the run directory's lock (" + std::strerror(err) + ")");
  }
  return fd;
}

void make_dirs(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(dir + ": cannot create the output directory (" + ec.message() + ")");
}

}  // namespace

RunFolder::RunFolder(std::string dir, std::string numbered_base, Mode mode, bool writer)
    : dir_(std::move(dir)), base_(std::move(numbered_base)), mode_(mode), writer_(writer) {}

RunFolder::~RunFolder() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

bool RunFolder::restarts() const {
  return mode_ == Mode::kResume && checkpoint_seen_.empty();
}

void RunFolder::check() {
  if (dir_.empty()) return;  // numbered: any free number will do
  if (!writer_ && mode_ != Mode::kResume) return;  // the writer checks what it will write
  switch (mode_) {
    case Mode::kResume:
      checkpoint_seen_ = identity(checkpoint_path());
      if (!checkpoint_seen_.empty()) return;
      // Killed before its first checkpoint: restarted from its config.json (restarts()).
      if (!fs::exists(path("config.json")))
        throw Error(checkpoint_path() + ": no checkpoint to resume from, and no config.json to "
                    "start the run afresh from");
      if (fs::exists(path("summary.json")) && !dry_summary(path("summary.json")))
        throw Error(dir_ + " holds a finished run (summary.json) but no checkpoint.safetensors: "
                    "nothing to resume; start it again with --config " + dir_ + "/config.json "
                    "--overwrite -o " + dir_);
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
  if (!writer_) return;
  const bool claims = mode_ == Mode::kFresh || mode_ == Mode::kOverwrite;
  std::string holder;
  if (dir_.empty()) {
    // runs/<name>, runs/<name>-2, ...: the first that no earlier run has claimed or written
    // into (a dry run's files aside), whose lock this run takes and whose claim file it creates.
    for (int k = 1;; ++k) {
      const std::string d = k == 1 ? base_ : base_ + "-" + std::to_string(k);
      if (fs::exists(d + "/" + kClaimFile) || holds_files(d)) continue;
      make_dirs(d);
      const int fd = try_lock(d, holder);
      if (fd < 0) continue;  // another run is taking it
      // Looked at again under the lock: another run may have claimed it in between.
      if (fs::exists(d + "/" + kClaimFile) || holds_files(d) || (claims && !take_claim(d))) {
        ::close(fd);
        continue;
      }
      lock_fd_ = fd;
      dir_ = d;
      break;
    }
  } else {
    make_dirs(dir_);
    lock_fd_ = try_lock(dir_, holder);
    if (lock_fd_ < 0)
      throw Error("output directory '" + dir_ + "' is in use by another zotrain run (" +
                  (holder.empty() ? std::string("just starting") : holder) + "; lock " + dir_ +
                  "/" + kLockFile + "): one process writes a run directory at a time; wait for "
                  "it to finish or stop it");
    // Under the lock, what check() saw must still hold: no other run wrote here in between.
    const std::string seen = checkpoint_seen_;
    check();
    if (mode_ == Mode::kResume && checkpoint_seen_ != seen)
      throw Error(checkpoint_path() + " changed while this run was starting (another zotrain run "
                  "saved it); run --resume " + dir_ + " again");
    if (mode_ == Mode::kFresh && !take_claim(dir_))
      throw Error("output directory '" + dir_ + "' was just claimed by another run");
    if (mode_ == Mode::kOverwrite) take_claim(dir_);  // (kept from an earlier run if present)
  }
  if (mode_ == Mode::kResume && !restarts()) return;
  std::error_code ec;  // what an earlier (dry, overwritten or restarted) run left
  for (const char* f : {"metrics.jsonl", "steps.jsonl", "summary.json", "checkpoint.safetensors",
                        "optimizer.safetensors", "optimizer.safetensors.next", "config.json"})
    if (!(restarts() && std::strcmp(f, "config.json") == 0)) fs::remove(path(f), ec);
}

void RunFolder::write_config(const config::ExperimentConfig& cfg) const {
  if (!writer_) return;
  write_file_atomic(path("config.json"), config::to_json_text(cfg));
}

void RunFolder::write_summary(const nlohmann::json& summary) const {
  if (!writer_) return;
  write_file_atomic(path("summary.json"), summary.dump(2) + "\n");
}

// One write of the whole line; a failed write (a full disk) is cut back off, so the file only
// ever holds whole records.
void RunFolder::append_record(const char* file, const nlohmann::json& record) const {
  if (!writer_) return;
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
  if (!writer_) return;
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
