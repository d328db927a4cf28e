#include "run_state.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <tuple>
#include <utility>

#include "zotrain/core/build_info.hpp"
#include "zotrain/core/error.hpp"

namespace zt::run {
namespace {

using nlohmann::json;
using telemetry::Phase;
using telemetry::PhaseTimes;

// The checkpoint layout this zotrain writes and reads (metadata "format"). A change to the
// tensors or metadata a resume needs makes a new number; the old one is then refused by name
// (docs/design.md §13). Format 2 ties the optimizer file to its checkpoint by the weights digest.
constexpr const char* kCheckpointFormat = "zotrain-checkpoint-2";
// Format 1 differs only in that tie (its optimizer file holds the step alone): still read.
constexpr const char* kCheckpointFormat1 = "zotrain-checkpoint-1";
constexpr const char* kOptimizerFile = "optimizer.safetensors";
// The optimizer state of a checkpoint being written: complete before the checkpoint is
// committed, renamed to optimizer.safetensors after. A crash between the two leaves the new
// checkpoint with the old optimizer.safetensors and this file, which read_checkpoint then uses.
constexpr const char* kPendingSuffix = ".next";

std::string optimizer_path(const std::string& checkpoint) {
  const auto slash = checkpoint.rfind('/');
  return (slash == std::string::npos ? std::string() : checkpoint.substr(0, slash + 1)) +
         kOptimizerFile;
}

}  // namespace

json phases_json(const PhaseTimes& t) {
  json j = json::object();
  for (int i = 0; i < telemetry::kNumPhases; ++i) {
    const auto p = static_cast<Phase>(i);
    j[telemetry::phase_key(p)] = t.get(p);
  }
  return j;
}

PhaseTimes phases_from_json(const json& j) {
  PhaseTimes t;
  for (int i = 0; i < telemetry::kNumPhases; ++i) {
    const auto p = static_cast<Phase>(i);
    if (j.contains(telemetry::phase_key(p))) t.add(p, j.at(telemetry::phase_key(p)).get<double>());
  }
  return t;
}

nlohmann::json EpochAcc::to_json() const {
  return {{"loss_sum", loss_sum}, {"g_abs_sum", g_abs_sum}, {"correct", correct},
          {"samples", samples},   {"steps", steps},         {"clipped", clipped},
          {"sign_steps", sign_steps}, {"sign_agree", sign_agree},
          {"sign_agree_eq12", sign_agree_eq12},
          {"phases", phases_json(times)}};
}

EpochAcc EpochAcc::from_json(const nlohmann::json& j) {
  // A count is a JSON integer in int64 range (a float such as 1e300 would not convert).
  const auto count = [&j](const char* key, bool required) -> std::int64_t {
    if (!required && !j.contains(key)) return 0;
    const json& v = j.at(key);
    if (!v.is_number_integer() ||
        (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)))
      throw Error(std::string(key) + " = " + v.dump() + " is not an integer count");
    return v.get<std::int64_t>();
  };
  EpochAcc a;
  a.loss_sum = j.at("loss_sum").get<double>();
  a.g_abs_sum = j.at("g_abs_sum").get<double>();
  a.correct = count("correct", true);
  a.samples = count("samples", true);
  a.steps = count("steps", true);
  a.clipped = count("clipped", true);
  a.sign_steps = count("sign_steps", false);
  a.sign_agree = count("sign_agree", false);
  a.sign_agree_eq12 = count("sign_agree_eq12", false);
  a.times = phases_from_json(j.at("phases"));
  return a;
}

std::string weights_digest(const Engine& engine) {
  TensorFile f;
  engine.save(f);
  return weights_digest(f);
}

std::string weights_digest(const TensorFile& f) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  auto eat = [&h](const std::uint8_t* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  };
  for (const auto& [name, t] : f.tensors) {
    if (name.starts_with("optimizer.")) continue;
    eat(reinterpret_cast<const std::uint8_t*>(name.data()), name.size());
    eat(reinterpret_cast<const std::uint8_t*>(t.dtype.data()), t.dtype.size());
    eat(t.bytes.data(), t.bytes.size());
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

void save_checkpoint(const std::string& path, const Engine& engine,
                     const config::ExperimentConfig& cfg, const RunState& pr) {
  TensorFile f;
  engine.save(f);
  f.metadata["format"] = kCheckpointFormat;
  f.metadata["zotrain_version"] = version();
  f.metadata["arch"] = config::name(cfg.model.arch);
  f.metadata["precision"] = config::name(cfg.model.precision);
  f.metadata["method"] = config::name(cfg.method.name);
  f.metadata["partition"] = std::to_string(engine.partition());
  f.metadata["epoch"] = std::to_string(pr.epoch);
  f.metadata["step_in_epoch"] = std::to_string(pr.step_in_epoch);
  f.metadata["global_step"] = std::to_string(pr.global_step);
  f.metadata["train_seconds"] = json(pr.train_seconds).dump();
  f.metadata["total_phases"] = phases_json(pr.total_times).dump();
  f.metadata["epoch_acc"] = pr.acc.to_json().dump();
  f.metadata["config"] = config::to_json_text(cfg);
  if (!pr.init_from.is_null()) f.metadata["init_from"] = pr.init_from.dump();
  f.metadata["weights_digest"] = weights_digest(f);
  TensorFile opt;
  for (auto it = f.tensors.begin(); it != f.tensors.end();) {
    if (it->first.starts_with("optimizer.")) {
      opt.tensors.insert(f.tensors.extract(it++));
    } else {
      ++it;
    }
  }
  if (opt.tensors.empty()) {
    write_safetensors(path, f);
    return;
  }
  // The old optimizer.safetensors stays until the new checkpoint is in place: a kill or a full
  // disk in between leaves the old pair, or the new checkpoint with the pending optimizer file.
  const std::string opt_path = optimizer_path(path), pending = opt_path + kPendingSuffix;
  opt.metadata["global_step"] = f.metadata["global_step"];
  opt.metadata["weights_digest"] = f.metadata["weights_digest"];
  write_safetensors(pending, opt);
  f.metadata["optimizer_file"] = kOptimizerFile;
  write_safetensors(path, f);
  rename_file(pending, opt_path);
}

std::string checkpoint_of(const std::string& dir_or_file) {
  namespace fs = std::filesystem;
  const std::string ckpt =
      fs::is_directory(dir_or_file) ? dir_or_file + "/checkpoint.safetensors" : dir_or_file;
  if (!fs::exists(ckpt)) throw Error(ckpt + ": no checkpoint there");
  return ckpt;
}

TensorFile read_checkpoint(const std::string& path) {
  TensorFile f = read_safetensors(path);
  read_optimizer_state(f, path);
  return f;
}

std::string read_optimizer_state(TensorFile& f, const std::string& path) {
  const auto it = f.metadata.find("optimizer_file");
  if (it == f.metadata.end()) return {};
  // What ties an optimizer file to this checkpoint: the step and the weights digest (format 1:
  // the step alone).
  const std::string& step = checkpoint_meta(f, "global_step", path);
  const auto format = f.metadata.find("format");
  const bool by_step_only = format != f.metadata.end() && format->second == kCheckpointFormat1;
  const std::string digest = by_step_only ? "" : checkpoint_meta(f, "weights_digest", path);
  const auto digest_of = [](const TensorFile& o) {
    const auto d = o.metadata.find("weights_digest");
    return d == o.metadata.end() ? std::string("none") : d->second;
  };
  const auto belongs = [&](const std::string& p) {
    const TensorFile o = read_safetensors(p);
    return checkpoint_meta(o, "global_step", p) == step && (by_step_only || digest_of(o) == digest);
  };
  std::string opt_path = optimizer_path(path);
  if (!std::filesystem::exists(opt_path) || !belongs(opt_path)) {
    // Written just before the checkpoint and not yet renamed (save_checkpoint)?
    const std::string pending = opt_path + kPendingSuffix;
    if (std::filesystem::exists(pending) && belongs(pending)) opt_path = pending;
  }
  TensorFile opt = read_safetensors(opt_path);
  const std::string& opt_step = checkpoint_meta(opt, "global_step", opt_path);
  if (opt_step != step)
    throw Error(opt_path + ": optimizer state of step " + opt_step + ", but " + path +
                " is of step " + step + " (the two files must come from the same checkpoint)");
  if (!by_step_only && digest_of(opt) != digest)
    throw Error(opt_path + ": optimizer state of other weights (weights digest " + digest_of(opt) +
                "), but " + path + " holds weights digest " + digest +
                " (both of step " + step + "; the two files must come from the same checkpoint, "
                "not from two runs)");
  for (auto& [name, t] : opt.tensors) {
    if (!name.starts_with("optimizer."))
      throw Error(opt_path + ": tensor '" + name + "' is not optimizer state (optimizer.*)");
    check_tensor_values(t, name, opt_path, name.ends_with(".v"));  // Adam's v: ≥ 0
    f.tensors[name] = std::move(t);
  }
  return opt_path;
}

void finish_interrupted_save(const std::string& path, const std::string& optimizer_read) {
  if (optimizer_read.ends_with(kPendingSuffix)) rename_file(optimizer_read, optimizer_path(path));
}

void check_format(const TensorFile& f, const std::string& path) {
  const auto format = f.metadata.find("format");
  if (format == f.metadata.end() || format->second == kCheckpointFormat ||
      format->second == kCheckpointFormat1)
    return;
  const auto by = f.metadata.find("zotrain_version");
  throw Error(path + ": checkpoint format '" + format->second + "'" +
              (by != f.metadata.end() ? " (written by zotrain " + by->second + ")" : "") +
              " is not the format this zotrain " + version() + " reads ('" + kCheckpointFormat +
              "')");
}

void check_checkpoint(const TensorFile& f, const std::string& path,
                      const config::ExperimentConfig& cfg, int partition) {
  checkpoint_meta(f, "format", path);  // (a zotrain checkpoint)
  check_format(f, path);
  const std::string have = checkpoint_meta(f, "arch", path) + " " +
                           checkpoint_meta(f, "precision", path) + ", C = " +
                           checkpoint_meta(f, "partition", path);
  const std::string want = std::string(config::name(cfg.model.arch)) + " " +
                           std::string(config::name(cfg.model.precision)) + ", C = " +
                           std::to_string(partition);
  if (have != want)
    throw Error(path + ": checkpoint was written for a different model or partition (" + have +
                "; this run is " + want + ")");
}

RunState restore_run_state(const TensorFile& f, const std::string& path) {
  const auto count = [&](const char* key) {
    const std::string& v = checkpoint_meta(f, key, path);
    if (v.empty() || v.size() > 18 || v.find_first_not_of("0123456789") != std::string::npos)
      throw Error(path + ": checkpoint metadata '" + key + "' is '" + v + "', not a count");
    return std::stoll(v);
  };
  RunState r;
  r.epoch = count("epoch");
  r.step_in_epoch = count("step_in_epoch");
  r.global_step = count("global_step");
  // The JSON-valued keys: text that is not JSON, or JSON of another shape, is refused naming the
  // key like the counts (not let out as a JSON library exception).
  const auto parsed = [&](const char* key, auto convert) {
    const std::string& v = checkpoint_meta(f, key, path);
    try {
      return convert(json::parse(v));
    } catch (const std::exception& e) {  // JSON errors, and counts that are not (EpochAcc)
      throw Error(path + ": checkpoint metadata '" + key + "' is not what zotrain writes there (" +
                  e.what() + ")");
    }
  };
  r.train_seconds = parsed("train_seconds", [](const json& j) { return j.get<double>(); });
  r.total_times = parsed("total_phases", [](const json& j) { return phases_from_json(j); });
  r.acc = parsed("epoch_acc", [](const json& j) { return EpochAcc::from_json(j); });
  if (f.metadata.count("init_from"))  // optional: runs started with --init-from
    r.init_from = parsed("init_from", [](const json& j) {
      if (!j.is_object() || !j.contains("path") || !j["path"].is_string() ||
          !j.contains("weights_digest") || !j["weights_digest"].is_string())
        throw std::runtime_error("expected {\"path\": ..., \"weights_digest\": ...}");
      return j;
    });

  // The state against itself (what train_loop.cpp keeps true at every save).
  const auto refuse = [&](const std::string& why) {
    throw Error(path + ": checkpoint metadata " + why);
  };
  const auto n = [](std::int64_t v) { return std::to_string(v); };
  if (r.global_step < r.step_in_epoch)
    refuse("'global_step' " + n(r.global_step) + " is less than 'step_in_epoch' " +
           n(r.step_in_epoch) + " (the run's steps include the open epoch's)");
  const auto seconds = [&](const char* key, double v) {
    if (!std::isfinite(v) || v < 0) refuse("'" + std::string(key) + "' holds " + json(v).dump() +
                                           " seconds; times are finite and >= 0");
  };
  seconds("train_seconds", r.train_seconds);
  for (int i = 0; i < telemetry::kNumPhases; ++i) {
    const auto p = static_cast<Phase>(i);
    seconds("total_phases", r.total_times.get(p));
    seconds("epoch_acc", r.acc.times.get(p));
  }
  const EpochAcc& a = r.acc;
  if (a.steps != r.step_in_epoch)
    refuse("'epoch_acc' counts " + n(a.steps) + " steps of the open epoch, but 'step_in_epoch' is " +
           n(r.step_in_epoch));
  // Each count with the one it is part of: correct of samples, clipped of steps, ...
  const std::pair<const char*, std::int64_t> counts[] = {
      {"correct", a.correct},       {"samples", a.samples},       {"steps", a.steps},
      {"clipped", a.clipped},       {"sign_steps", a.sign_steps}, {"sign_agree", a.sign_agree},
      {"sign_agree_eq12", a.sign_agree_eq12}};
  for (const auto& c : counts)
    if (c.second < 0) refuse("'epoch_acc' holds " + std::string(c.first) + " = " + n(c.second) + ", not a count");
  const std::tuple<const char*, std::int64_t, const char*, std::int64_t> parts[] = {
      {"correct", a.correct, "samples", a.samples},
      {"clipped", a.clipped, "steps", a.steps},
      {"sign_steps", a.sign_steps, "steps", a.steps},
      {"sign_agree", a.sign_agree, "sign_steps", a.sign_steps},
      {"sign_agree_eq12", a.sign_agree_eq12, "sign_steps", a.sign_steps}};
  for (const auto& [part, v, whole, w] : parts)
    if (v > w)
      refuse("'epoch_acc' holds " + std::string(part) + " = " + n(v) + ", more than its " + whole +
             " = " + n(w));
  if (!std::isfinite(a.loss_sum) || !std::isfinite(a.g_abs_sum) || a.g_abs_sum < 0)
    refuse("'epoch_acc' holds loss_sum " + json(a.loss_sum).dump() + " and g_abs_sum " +
           json(a.g_abs_sum).dump() + "; sums of losses and of |g| are finite (and |g| >= 0)");
  return r;
}

void check_run_state(const RunState& st, const std::string& path,
                     const config::ExperimentConfig& cfg, std::int64_t steps_per_epoch,
                     std::int64_t batch) {
  const auto refuse = [&](const std::string& why) {
    throw Error(path + ": checkpoint metadata " + why);
  };
  const auto n = [](std::int64_t v) { return std::to_string(v); };
  const std::string per = n(steps_per_epoch) + " steps per epoch (this run's training samples / " +
                          "train.batch_size " + n(batch) + ")";
  if (st.epoch > cfg.train.epochs)
    refuse("'epoch' " + n(st.epoch) + " is past this run's train.epochs = " + n(cfg.train.epochs) +
           " (raise train.epochs to continue it)");
  // step_in_epoch = steps_per_epoch: the epoch's steps done, its evaluation not (train_loop.cpp
  // then closes the epoch first).
  const bool ended = st.epoch == cfg.train.epochs;
  if (ended ? st.step_in_epoch != 0 : st.step_in_epoch > steps_per_epoch)
    refuse("'step_in_epoch' " + n(st.step_in_epoch) + " does not fit 'epoch' " + n(st.epoch) +
           " at " + per + (ended ? " in a run of train.epochs = " + n(cfg.train.epochs) +
                                       " (a finished run is at step 0 of the epoch after its last)"
                             : ""));
  std::int64_t want = 0;  // (epoch <= train.epochs: no overflow for any epochs a run can have)
  const bool wraps = __builtin_mul_overflow(st.epoch, steps_per_epoch, &want) ||
                     __builtin_add_overflow(want, st.step_in_epoch, &want);
  if (wraps || want != st.global_step)
    refuse("'global_step' " + n(st.global_step) + " contradicts 'epoch' " + n(st.epoch) +
           " and 'step_in_epoch' " + n(st.step_in_epoch) + ": at " + per + " it is " +
           n(st.epoch) + " × " + n(steps_per_epoch) + " + " + n(st.step_in_epoch) + " = " +
           (wraps ? std::string("more than 2^63") : n(want)));
  std::int64_t samples = 0;
  if (__builtin_mul_overflow(st.acc.steps, batch, &samples) || samples != st.acc.samples)
    refuse("'epoch_acc' counts " + n(st.acc.samples) + " samples in " + n(st.acc.steps) +
           " steps of train.batch_size " + n(batch) + " (every training batch is full)");
}

}  // namespace zt::run
