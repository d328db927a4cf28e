// Experiment configuration: JSON file → validated, typed struct.
// One schema lists every key with its type, default, range and help, each section's keys and
// rules beside its options (src/config/schema.hpp says which file holds which); it drives
// validation, --set overrides, the effective-config dump and `--help` text.
// All errors throw zt::Error naming the key (with the nearest valid key for unknown ones), the
// file, and what was expected.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "zotrain/config/options.hpp"

namespace zt::config {

// Limits of the input (docs/design.md §12, "Config input"): a config file is read up to kMaxConfigBytes
// and refused beyond; `name` is at most kMaxNameBytes; train.threads and --threads at most
// kMaxThreads; train.batch_size and bench --batch at most kMaxBatchSize.
inline constexpr std::size_t kMaxConfigBytes = std::size_t{1} << 20;
inline constexpr std::size_t kMaxNameBytes = 200;
inline constexpr int kMaxThreads = 1024;
// train.batch_size beyond this is a typo (row indices of a batch stay far inside int32).
inline constexpr int kMaxBatchSize = 1 << 24;

struct DataConfig {
  Dataset dataset = Dataset::kMnist;
  std::string root = "data/mnist-subset";  // as written; use resolve_path() (config dir, then cwd)
  std::optional<std::int64_t> train_limit;  // null = all
  std::optional<std::int64_t> test_limit;   // null = all
  std::optional<std::int64_t> subset;       // images: a seeded draw of N from each split; null = all
  std::uint64_t subset_seed = 1;
  double rotate_degrees = 0.0;              // images: rotate both splits (bilinear)
  std::optional<std::int64_t> validation;   // hold out the last N training samples; null = none
  std::int64_t points = 1024;          // modelnet40: points per sample
  Augment augment = Augment::kRotateJitter;  // modelnet40 training
  bool prefetch = true;                // read the next batch on a background thread
};
struct ModelConfig {
  Arch arch = Arch::kLeNet5;
  Precision precision = Precision::kFp32;  // int8: NITI integer training (docs/design.md §5)
};
struct MethodConfig {
  Method name = Method::kElasticZo;
  Partition partition;                 // resolve_partition(); full_bp/full_zo fix C
  BpActivations bp_activations = BpActivations::kMinus;  // θ−εz pass | average of both passes
};
struct DecayConfig {
  double factor = 0.8;
  std::int64_t every_epochs = 10;      // 0 = never
};
struct OptimizerConfig {
  OptimizerKind name = OptimizerKind::kSgd;  // of the backprop part
  std::optional<double> lr;     // ZO part (and BP part unless bp_lr set); auto = method default
  std::optional<double> bp_lr;  // null = lr when set, else the optimizer's default
  DecayConfig decay;
};
struct ZoConfig {
  double eps = 1e-3;
  double grad_clip = 2.0;              // chosen by a sweep (README, "Defaults")
  Preset preset = Preset::kMezo;       // presets(): fills the keys below not given
  Estimator estimator = Estimator::kTwoSided;  // estimators() (config/methods.hpp)
  std::int64_t queries = 1;            // q directions per step (int8: 1, except layerwise)
  bool batched = false;                // P-RGE: all 2q probes as one forward (FP32, no BatchNorm)
  bool cache_direction = false;        // FP32: draw z once per step into a buffer (same bits)
  bool node_perturbation = false;      // layerwise: PMT's node perturbation where it has fewer dims
  Perturbation perturbation = Perturbation::kGaussian;  // perturbations() (config/methods.hpp)
  std::int64_t pool_size = 4095;       // pezo_pool: N
  bool pezo_pow2 = false;              // PeZO sources: scale by a power of two
  PezoOffset pezo_offset = PezoOffset::kSeeded;  // PeZO sources: seeded | stream
  std::int64_t rngs = 31;              // pezo_onthefly: n
  std::int64_t rng_bits = 8;           // pezo_onthefly: b
};
struct TrainConfig {
  std::int64_t epochs = 5;
  std::optional<std::int64_t> batch_size;  // auto = the paper's (resolve_batch_size())
  std::optional<std::int64_t> threads;     // auto = all cores
  std::optional<std::int64_t> max_steps;   // null = no limit (else: steps in total)
  std::int64_t eval_every = 1;         // evaluate on the test set every N epochs (and at the end)
  bool eval_at_start = false;          // also evaluate before the first step (epoch 0 record)
  std::optional<std::int64_t> log_every;  // steps between records of steps.jsonl; null = none
  MemoryPlan memory_plan = MemoryPlan::kLean;  // lean: recompute, release early; whole_batch: keep all
  std::optional<std::int64_t> memory_limit;  // bytes; refuse a run predicted to peak above it
};
// A per-epoch schedule. JSON: a plain number (constant for the whole run) or an object whose
// keys are the epoch (0-based count of completed epochs) from which a value applies, e.g.
// {"0": 5, "20": 4, "50": 3}; it must contain "0".
struct Schedule {
  // (from_epoch, value), sorted by epoch, first from_epoch = 0; the parser drops points that
  // do not change the value, so a constant schedule has one point.
  std::vector<std::pair<std::int64_t, double>> points;
  double at(std::int64_t epoch) const;  // value in force during 0-based epoch `epoch`
  bool operator==(const Schedule&) const = default;
};
// ElasticZO-INT8 / NITI hyperparameters (docs/design.md §5.5 and 6); used when model.precision =
// int8.
struct Int8Config {
  std::int64_t r_max = 3;              // perturbation u uniform in [-r_max, r_max]
  Schedule b_zo{{{0, 1.0}}};           // bits of the int8 ZO update
  Schedule b_bp;                       // bits of the NITI BP update (the lr); empty = auto
                                       // (resolve_b_bp(): per architecture and partition)
  Schedule p_zero;                     // sparsity of the perturbation; empty = auto
                                       // (resolve_p_zero(): per architecture)
  Int8Sign sign = Int8Sign::kFloat;   // float (INT8) | integer (INT8*, fixed point) | integer_eq12
  Schedule dead_zone{{{0, 0.0}}};      // float sign: g = 0 when |ℓ+ − ℓ−| / n ≤ this (nats)
  bool batchnorm = true;               // PointNet: integer BatchNorm (docs/design.md §5.8)
  Int8Input input = Int8Input::kShift;  // image pixels as int8 (docs/design.md §5.6)
};
struct OutputConfig {
  std::string dir = "";                // empty = runs/<name>
  std::int64_t checkpoint_every = 1;   // epochs; 0 = only at the end
  double checkpoint_minutes = 30;      // also by wall time since the last one (mid-epoch); 0 = off
};

struct ExperimentConfig {
  std::string name = "experiment";
  std::uint64_t seed = 1;
  DataConfig data;
  ModelConfig model;
  MethodConfig method;
  OptimizerConfig optimizer;
  ZoConfig zo;
  TrainConfig train;
  Int8Config int8;
  OutputConfig output;
  std::string source_dir = ".";        // absolute directory of the config file (not a key)
  // Not keys: the dotted keys the file and --set gave, and one message per given key that has
  // no effect with this model, data and precision (the caller shows them as warnings; keys whose
  // uselessness is certain and that no shipped config relies on are errors instead).
  std::vector<std::string> given;
  std::vector<std::string> warnings;
  // Not a key: for each --set, the dotted key (or section) it gave and its text "--set K=V",
  // so a check that refuses a value names the flag that gave it rather than the file.
  std::vector<std::pair<std::string, std::string>> set_by;
};

// Reads `path` (may be empty: defaults only), applies `overrides` ("dotted.key=value"; the value
// is parsed as JSON when it parses, else taken as a string; string-valued keys take the text
// verbatim unless it is a quoted JSON string, so --set name=123 works), validates, returns the
// struct with source_dir set to the file's absolute directory ("." when path is empty).
// The file may contain // and /* */ comments. A key may also name a whole section
// (--set 'zo={"eps":0.01}'). Keys the file leaves out keep the struct's defaults.
ExperimentConfig load_config(const std::string& path, const std::vector<std::string>& overrides);

// Parses a JSON document text (for tests) the same way; `origin` names it in errors;
// source_dir is ".".
ExperimentConfig parse_config(const std::string& json_text, const std::string& origin,
                              const std::vector<std::string>& overrides);

// Path rule for inputs named in a config (data.root): absolute paths and "" are returned as
// they are; a relative path is taken relative to the config file's directory (source_dir) if it
// exists there, else returned unchanged (i.e. relative to the current directory). Outputs
// (output.dir) do not exist yet, so this rule leaves them relative to the current directory.
std::string resolve_path(const ExperimentConfig& cfg, const std::string& p);

// The effective config as pretty JSON text (every key, defaults included).
std::string to_json_text(const ExperimentConfig& cfg);

// One line per key: "  key (type, default X): help" — for `zotrain --help`.
std::string keys_help();

// Every dotted key of the schema, in schema order.
std::vector<std::string> key_names();

// The effective minibatch: train.batch_size, or when it is auto the architecture's default for
// the precision (32 for fp32, 256 for int8 LeNet-5 as in NITI / ElasticZO-INT8).
std::int64_t resolve_batch_size(const ExperimentConfig& cfg);

// Resolves method.partition against L parametric layers: a number in [0, L] or a named setting
// (zo-feat-cls1 = L−2, zo-feat-cls2 = L−1). full_bp forces 0 and full_zo forces L; with
// elastic_zo the partition alone is the knob, C = 0 (Full BP) and C = L (Full ZO) included.
// Throws zt::Error naming `method.partition` when C > L.
int resolve_partition(const MethodConfig& m, int num_layers);
// int8.b_bp, "auto" resolved for the partition C (resolve_partition()): LeNet-5 5 / 4 from
// epoch 20 / 3 from 50 (NITI's), PointNet 3 / 2 / 1 at the same epochs and, when C > 0 (a ZO
// part), 0 from epoch 90 (docs/design.md §5.5).
Schedule resolve_b_bp(const ExperimentConfig& cfg, int partition);
// int8.p_zero, "auto" resolved: LeNet-5 0.33 / 0.5 from epoch 20 / 0.9 from 50 (the paper's);
// PointNet 0.97, then 0.99 from epoch 75 (chosen on a validation split:
// docs/results/tuning/int8-pointnet-p-zero.md).
Schedule resolve_p_zero(const ExperimentConfig& cfg);

// The method a run with partition C of L layers is: Full BP at C = 0, Full ZO at C = L,
// ElasticZO between.
Method effective_method(int partition, int num_layers);

}  // namespace zt::config
