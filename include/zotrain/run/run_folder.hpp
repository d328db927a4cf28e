// A run's output directory and everything written into it: config.json (the resolved config),
// metrics.jsonl (one record per epoch, appended), steps.jsonl (one record every
// train.log_every steps), summary.json and checkpoint.safetensors. Each
// file is replaced atomically (write to a temporary, rename), so a crash never leaves half a file.
//
// Claiming: a run owns its directory from claim() on. A numbered default directory
// (runs/<name>, runs/<name>-2, ...) is claimed by creating its claim file with O_EXCL, so runs
// started at the same moment never share one; an explicit directory must be empty (or
// --overwrite) for a fresh run and hold a checkpoint for --resume — or, a run killed before its
// first checkpoint, its config.json: the run starts afresh from it (restarts()). A dry run writes
// only config.json and summary.json and claims nothing: a directory that holds only a dry run's
// files counts as empty (the next run, dry or not, replaces them).
//
// One writer per directory: claim() takes an advisory lock (flock on DIR/.zotrain-lock, without
// waiting) that the run holds until the RunFolder is destroyed (the kernel drops it when the
// process dies, however it dies), and writes its pid, host and start time into that file; every
// process that writes a run directory (fresh, --overwrite, --resume, --dry-run) takes it, and a
// second one is refused (zt::Error naming the directory and the holder) before it changes
// anything. The lock file alone does not make a directory hold files.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "zotrain/config/config.hpp"

namespace zt::run {

class RunFolder {
 public:
  enum class Mode { kFresh, kOverwrite, kResume, kDryRun };

  // `dir` empty: the first free numbered directory under `numbered_base` (e.g. runs/quickstart),
  // chosen when claim() runs. `writer` false: a rank other than 0 of a data-parallel run
  // (docs/design.md §15), which reads the directory (--resume) but never writes or locks it:
  // check() only reads for a resume, claim() and every write do nothing.
  RunFolder(std::string dir, std::string numbered_base, Mode mode, bool writer = true);
  bool writes() const { return writer_; }
  ~RunFolder();  // releases the lock
  RunFolder(const RunFolder&) = delete;
  RunFolder& operator=(const RunFolder&) = delete;

  // Checks that an explicit directory may be used (fresh: empty unless overwrite; resume: holds
  // a checkpoint, or config.json and no finished run's summary); throws zt::Error naming the
  // directory. Creates nothing; notes the checkpoint it saw, which claim() expects unchanged.
  void check();
  // Resume of a directory without a checkpoint: the run starts afresh from its config.json.
  bool restarts() const;
  // Takes the directory (creating it) and its lock; from here on the run writes into it. A fresh
  // run removes outputs an earlier run left (overwrite; a restart keeps config.json). Throws
  // zt::Error when another process holds the lock, or (resume) when the checkpoint changed since
  // check().
  void claim();
  const std::string& dir() const { return dir_; }
  std::string path(const char* file) const { return dir_ + "/" + file; }
  std::string checkpoint_path() const { return path("checkpoint.safetensors"); }

  void write_config(const config::ExperimentConfig& cfg) const;
  void write_summary(const nlohmann::json& summary) const;
  // Appends one JSON line to `file` (metrics.jsonl, steps.jsonl).
  void append_record(const char* file, const nlohmann::json& record) const;
  // Resume: keeps the leading records of `file` for which `keep` holds (the run rewrites what
  // follows).
  void truncate_records(const char* file, bool (*keep)(const nlohmann::json&, std::int64_t),
                        std::int64_t position) const;

 private:
  std::string dir_, base_;
  Mode mode_;
  bool writer_ = true;
  int lock_fd_ = -1;
  std::string checkpoint_seen_;  // check(): the checkpoint's identity (empty: none)
};

}  // namespace zt::run
