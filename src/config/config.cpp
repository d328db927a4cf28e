#include "zotrain/config/config.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string_view>
#include <type_traits>
#include <variant>

#include "zotrain/config/catalogue.hpp"
#include "zotrain/config/methods.hpp"
#include "zotrain/core/error.hpp"

namespace zt::config {
namespace {

// Batch sizes beyond this are a typo (row indices of a batch stay far inside int32).
constexpr double kMaxBatchSize = 1 << 24;

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

// ---- the schema ---------------------------------------------------------------------------

// kIntSchedule / kNumberSchedule: a Schedule whose values are integers / numbers, each within
// the key's range (JSON: a plain value, or {"<epoch>": value, ...} containing "0").
// kBytes: a size in bytes, an integer or a string with a unit ("400MiB", "1.5 GB").
enum class Type {
  kInt, kSeed, kNumber, kBool, kString, kEnum, kPartition, kIntSchedule, kNumberSchedule, kBytes
};

using IntRef = std::int64_t& (*)(ExperimentConfig&);
using BoolRef = bool& (*)(ExperimentConfig&);
using OptIntRef = std::optional<std::int64_t>& (*)(ExperimentConfig&);
using OptNumberRef = std::optional<double>& (*)(ExperimentConfig&);
using SeedRef = std::uint64_t& (*)(ExperimentConfig&);
using NumberRef = double& (*)(ExperimentConfig&);
using StringRef = std::string& (*)(ExperimentConfig&);
using ScheduleRef = Schedule& (*)(ExperimentConfig&);
using PartitionRef = Partition& (*)(ExperimentConfig&);
// An enum member, read and written as the index of its value (the position of its text in the
// key's choices).
struct EnumRef {
  std::size_t (*get)(const ExperimentConfig&);
  void (*set)(ExperimentConfig&, std::size_t);
};
using Ref = std::variant<IntRef, SeedRef, NumberRef, StringRef, ScheduleRef, PartitionRef, EnumRef,
                         OptIntRef, OptNumberRef, BoolRef>;

// Numeric range: lo/hi with open or closed ends.
struct Range {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false, hi_open = false;
};

struct Key {
  std::string_view path;
  Type type;
  Ref ref;
  Range range;
  std::vector<std::string_view> choices;  // kEnum
  std::string_view help;
  // Optional kInt / kNumber keys (OptIntRef / OptNumberRef): how "not set" is written —
  // "auto" (a default chosen at run time) or "null" (none); both are read as not set.
  std::string_view unset = {};
};

Range at_least(double lo) { return Range{.lo = lo}; }
Range above(double lo) { return Range{.lo = lo, .lo_open = true}; }
Range closed(double lo, double hi) { return Range{.lo = lo, .hi = hi}; }

// `+` turns the capture-less lambda into the plain function pointer the variant holds.
#define ZT_FIELD(member) +[](ExperimentConfig& c) -> decltype(auto) { return (c.member); }
#define ZT_ENUM(member)                                                                      \
  EnumRef{+[](const ExperimentConfig& c) { return static_cast<std::size_t>(c.member); },     \
          +[](ExperimentConfig& c, std::size_t i) {                                          \
            c.member = static_cast<std::remove_reference_t<decltype(c.member)>>(i);          \
          }}

// Choices and help text of the registry-backed keys (config/methods.hpp, config/catalogue.hpp).
// A registry's names in its enum's order (each entry's id is its position).
template <class Info>
std::vector<std::string_view> names_of(const std::vector<Info>& list) {
  std::vector<std::string_view> names;
  for (const Info& i : list) {
    ZT_CHECK(static_cast<std::size_t>(i.id) == names.size());
    names.emplace_back(i.name);
  }
  return names;
}
template <class E>
std::vector<std::string_view> names_of() {
  const auto c = choices<E>();
  return {c.begin(), c.end()};
}

template <class Info>
std::string_view help_of(const std::vector<Info>& list, const char* lead) {
  static const std::string text = [&] {  // one per registry (Info type)
    std::string t = lead;
    for (std::size_t k = 0; k < list.size(); ++k)
      t += (k > 0 ? " | " : "") + std::string(list[k].name) + " = " + list[k].summary;
    return t;
  }();
  return text;
}

const std::vector<Key>& schema() {
  static const std::vector<Key> keys = {
      {"name", Type::kString, ZT_FIELD(name), {}, {}, "experiment name (names runs/<name>)"},
      {"seed", Type::kSeed, ZT_FIELD(seed), {}, {}, "seed of every random choice in the run"},
      {"data.dataset", Type::kEnum, ZT_ENUM(data.dataset), {}, names_of(datasets()),
       help_of(datasets(), "data set (an image set also selects the normalisation): ")},
      {"data.root", Type::kString, ZT_FIELD(data.root), {}, {},
       "directory with the IDX files; relative: config file's directory if it exists there, "
       "else the current directory"},
      {"data.train_limit", Type::kInt, ZT_FIELD(data.train_limit), at_least(1), {},
       "use only the first N training samples (null = all)", "null"},
      {"data.test_limit", Type::kInt, ZT_FIELD(data.test_limit), at_least(1), {},
       "use only the first N test samples (null = all)", "null"},
      {"data.subset", Type::kInt, ZT_FIELD(data.subset), at_least(1), {},
       "images: keep N samples of each split, drawn with data.subset_seed, in file order (after "
       "the limits; null = all)", "null"},
      {"data.subset_seed", Type::kSeed, ZT_FIELD(data.subset_seed), {}, {},
       "seed of data.subset's draw (the same images whatever the run's seed)"},
      {"data.rotate_degrees", Type::kNumber, ZT_FIELD(data.rotate_degrees), closed(-360, 360), {},
       "images: rotate both splits counter-clockwise by this angle (bilinear, black outside; "
       "Rotated MNIST uses 30 or 45)"},
      {"data.validation", Type::kInt, ZT_FIELD(data.validation), at_least(1), {},
       "hold out the last N training samples (after the limit and subset) as a validation split: "
       "evaluated beside the test set (val_loss, val_accuracy); choose hyperparameters on it, "
       "not on the test set (null = none)", "null"},
      {"data.points", Type::kInt, ZT_FIELD(data.points), at_least(1), {},
       "modelnet40: points per sample (a seeded random subset in training, the first N in "
       "evaluation)"},
      {"data.augment", Type::kEnum, ZT_ENUM(data.augment), {}, names_of<Augment>(),
       "modelnet40 training augmentation: random rotation about the up (y) axis and/or jitter "
       "(sigma 0.01, clipped at 0.05), seeded"},
      {"data.prefetch", Type::kBool, ZT_FIELD(data.prefetch), {}, {},
       "read and prepare the next training / evaluation batch on a background thread while the "
       "current one trains (same batches, same results; false = read in the training thread)"},
      {"model.arch", Type::kEnum, ZT_ENUM(model.arch), {}, names_of(architectures()),
       help_of(architectures(), "network: ")},
      {"model.precision", Type::kEnum, ZT_ENUM(model.precision), {}, names_of<Precision>(),
       "arithmetic of training: fp32 | int8 = NITI integer training (docs/design.md §5)"},
      {"method.name", Type::kEnum, ZT_ENUM(method.name), {}, names_of(methods()),
       "training algorithm"},
      {"method.partition", Type::kPartition, ZT_FIELD(method.partition), {}, {},
       "partition point C (layers 1..C by ZO, the rest by backprop): an integer in [0, L] "
       "(0 = Full BP, L = Full ZO; the run records the method its C makes) or zo-feat-cls1 "
       "(L-2) | zo-feat-cls2 (L-1); method.name full_bp / full_zo fix C at 0 / L"},
      {"method.bp_activations", Type::kEnum, ZT_ENUM(method.bp_activations), {},
       names_of<BpActivations>(),
       "activations the backprop part uses: minus (theta-eps*z pass) | average (both passes); "
       "FP32 only (int8: minus)"},
      {"optimizer.name", Type::kEnum, ZT_ENUM(optimizer.name), {}, names_of<OptimizerKind>(),
       "optimizer of the backprop part"},
      {"optimizer.lr", Type::kNumber, ZT_FIELD(optimizer.lr), at_least(0), {},
       "learning rate of the ZO part (and of the BP part unless bp_lr is set); auto = the "
       "method's default (README, Defaults); 0 freezes those layers", "auto"},
      {"optimizer.bp_lr", Type::kNumber, ZT_FIELD(optimizer.bp_lr), at_least(0), {},
       "learning rate of the backprop part; null = optimizer.lr when that is set, else the "
       "optimizer's default", "null"},
      {"optimizer.decay.factor", Type::kNumber, ZT_FIELD(optimizer.decay.factor),
       Range{.lo = 0, .hi = 1, .lo_open = true}, {}, "learning-rate decay factor"},
      {"optimizer.decay.every_epochs", Type::kInt, ZT_FIELD(optimizer.decay.every_epochs),
       at_least(0), {}, "multiply the learning rates by factor every N epochs (0 = never)"},
      {"zo.eps", Type::kNumber, ZT_FIELD(zo.eps), above(0), {}, "ZO perturbation size epsilon"},
      {"zo.grad_clip", Type::kNumber, ZT_FIELD(zo.grad_clip), above(0), {},
       "clip the projected ZO gradient to [-grad_clip, grad_clip]"},
      {"zo.estimator", Type::kEnum, ZT_ENUM(zo.estimator), {}, names_of(estimators()),
       "ZO estimator (the Estimators list of --help); two_sided is the paper's"},
      {"zo.queries", Type::kInt, ZT_FIELD(zo.queries), closed(1, kMaxZoQueries), {},
       "directions probed per ZO step (q); the update averages their estimates; int8: 1, "
       "except with zo.estimator layerwise"},
      {"zo.batched", Type::kBool, ZT_FIELD(zo.batched), {}, {},
       "P-RGE: run the + and - passes of all queries as one forward over 2q replicas of the "
       "batch, the weights untouched (two_sided, FP32, models without BatchNorm: LeNet-5)"},
      {"zo.cache_direction", Type::kBool, ZT_FIELD(zo.cache_direction), {}, {},
       "draw each step's direction z once into a buffer (FP32: 4 bytes per ZO weight, int8: 1) "
       "and read it back for the - pass and the update instead of regenerating it: the same "
       "bits, z computed once per step instead of three times"},
      {"zo.node_perturbation", Type::kBool, ZT_FIELD(zo.node_perturbation), {}, {},
       "layerwise: estimate a fully connected ZO layer with fewer outputs than weights "
       "by perturbing its outputs, per sample, instead of its weights (Poor Man's Training's "
       "node perturbation; q passes from the next layer on, no extra memory beyond the layer's "
       "input and output of the batch)"},
      {"zo.preset", Type::kEnum, ZT_ENUM(zo.preset), {}, names_of(presets()),
       "named zo.* settings (the Presets list of --help); keys given explicitly override it"},
      {"zo.perturbation", Type::kEnum, ZT_ENUM(zo.perturbation), {}, names_of(perturbations()),
       "where the FP32 direction z comes from: gaussian (the paper's), rademacher (+-1), "
       "uniform (sqrt(3) U(-1, 1)), xorshift (+-1 from Poor Man's Training's xorshift32), "
       "pezo_pool (PeZO's pool of zo.pool_size numbers) or pezo_onthefly (PeZO's zo.rngs "
       "rotated zo.rng_bits-bit generators); int8 draws its own sparse uniform integers, "
       "except with zo.estimator layerwise (rademacher or xorshift: +-1 weight probes)"},
      {"zo.pool_size", Type::kInt, ZT_FIELD(zo.pool_size), closed(1, 1 << 24), {},
       "pezo_pool: numbers in the pool (N; 2^k - 1 as PeZO advises); updates stay in a "
       "subspace (N-periodic within each tensor)"},
      {"zo.pezo_pow2", Type::kBool, ZT_FIELD(zo.pezo_pow2), {}, {},
       "pezo_pool, pezo_onthefly: scale by the power of two nearest the norm-matching factor"},
      {"zo.pezo_offset", Type::kEnum, ZT_ENUM(zo.pezo_offset), {}, names_of<PezoOffset>(),
       "pezo_pool, pezo_onthefly: where a perturbation starts: seeded (a hash of the step seed "
       "and query picks the pool window or the generators' phases) or stream (PeZO read "
       "literally: each perturbation continues the run-long stream where the last one stopped; "
       "the pool then repeats after N / gcd(D, N) perturbations)"},
      {"zo.rngs", Type::kInt, ZT_FIELD(zo.rngs), closed(2, 64), {},
       "pezo_onthefly: generators, each giving one number per cycle (n; 31 is PeZO's best)"},
      {"zo.rng_bits", Type::kInt, ZT_FIELD(zo.rng_bits), closed(4, 16), {},
       "pezo_onthefly: bits per generator (b); each repeats after 2^b - 1 numbers"},
      {"train.epochs", Type::kInt, ZT_FIELD(train.epochs), at_least(1), {}, "training epochs"},
      {"train.batch_size", Type::kInt, ZT_FIELD(train.batch_size), closed(1, kMaxBatchSize), {},
       "minibatch size (auto = the paper's: 32; 256 for int8 LeNet-5)", "auto"},
      {"train.threads", Type::kInt, ZT_FIELD(train.threads), at_least(1), {},
       "worker threads (auto = all cores)", "auto"},
      {"train.max_steps", Type::kInt, ZT_FIELD(train.max_steps), at_least(1), {},
       "stop after this many steps in total (null = no limit)", "null"},
      {"train.eval_every", Type::kInt, ZT_FIELD(train.eval_every), at_least(1), {},
       "evaluate on the test set every N epochs (and at the end)"},
      {"train.eval_at_start", Type::kBool, ZT_FIELD(train.eval_at_start), {}, {},
       "also evaluate before the first step (an epoch-0 record in metrics.jsonl)"},
      {"train.log_every", Type::kInt, ZT_FIELD(train.log_every), at_least(1), {},
       "write a record every N steps to steps.jsonl (step, epoch, loss, g, clipped, learning "
       "rates, samples/s); null = none", "null"},
      {"train.memory_plan", Type::kEnum, ZT_ENUM(train.memory_plan), {}, names_of<MemoryPlan>(),
       "fp32 buffers: lean (PointNet's per-point stack streamed in chunks of points, its widest "
       "layer recomputed for backprop; same results) | whole_batch (keep every activation: "
       "more memory, Full BP faster)"},
      {"train.memory_limit", Type::kBytes, ZT_FIELD(train.memory_limit), at_least(1), {},
       "refuse to start a run whose predicted peak resident memory (memory.predicted_peak_bytes, "
       "also printed by --dry-run) exceeds this: bytes, or a string with a unit, e.g. \"400MiB\" "
       "(B, KiB, MiB, GiB, kB, MB, GB); null = no limit", "null"},
      {"int8.r_max", Type::kInt, ZT_FIELD(int8.r_max), closed(1, 127), {},
       "perturbation range of int8 ZO (u uniform in [-r_max, r_max])"},
      {"int8.b_zo", Type::kIntSchedule, ZT_FIELD(int8.b_zo), closed(1, 7), {},
       "bits of the int8 ZO update"},
      {"int8.b_bp", Type::kIntSchedule, ZT_FIELD(int8.b_bp), closed(0, 15), {},
       "bits of the NITI backprop weight update (acts as the learning rate; 0 = below one "
       "int8 unit: the largest element moves by 0 or 1); auto = per "
       "architecture: LeNet-5 5, 4 from epoch 20, 3 from 50 (NITI's); PointNet 3, 2, 1 "
       "(and 0 from epoch 90 with a ZO part) (docs/design.md §5.5)", "auto"},
      {"int8.p_zero", Type::kNumberSchedule, ZT_FIELD(int8.p_zero), closed(0, 1), {},
       "sparsity of the int8 perturbation (the share of zeros in z; 1 = z all zero, the ZO part "
       "frozen); auto = per architecture: "
       "LeNet-5 0.33, 0.5 from epoch 20, 0.9 from 50 (the paper's); PointNet 0.97, 0.99 from 75 "
       "(chosen on a validation split)", "auto"},
      {"int8.sign", Type::kEnum, ZT_ENUM(int8.sign), {}, names_of<Int8Sign>(),
       "ZO gradient sign: float = dequantise logits and compare float losses (INT8) | "
       "integer = integer-only (INT8*): both losses in fixed-point log2, 16 fractional bits | "
       "integer_eq12 = integer-only by the paper's Eq. 12 as written (whole bits per sample)"},
      {"int8.dead_zone", Type::kNumberSchedule, ZT_FIELD(int8.dead_zone), at_least(0), {},
       "float sign: leave the ZO part unchanged on a step whose two passes' mean losses differ "
       "by at most this (nats per sample), since the sign of a close call is mostly noise; "
       "0 = the paper's sgn(l+ - l-) on every step"},
      {"int8.batchnorm", Type::kBool, ZT_FIELD(int8.batchnorm), {}, {},
       "PointNet: keep the per-point layers' BatchNorm as integer standardisation with the "
       "batch's statistics (docs/design.md §5.8); false = drop it, as NITI has none"},
      {"int8.input", Type::kEnum, ZT_ENUM(int8.input), {}, names_of<Int8Input>(),
       "image pixels as int8 (docs/design.md §5.6): shift = p >> 1, exponent -7 (0..127) | "
       "normalised = NITI's: the data set's (p/255 - mean)/std, rounded to 7 bits"},
      {"output.dir", Type::kString, ZT_FIELD(output.dir), {}, {},
       "output directory (empty = runs/<name>)"},
      {"output.checkpoint_every", Type::kInt, ZT_FIELD(output.checkpoint_every), at_least(0), {},
       "write a checkpoint every N epochs (0 = only at the end)"},
  };
  return keys;
}

#undef ZT_FIELD
#undef ZT_ENUM

const Key* find_key(std::string_view path) {
  for (const Key& k : schema())
    if (k.path == path) return &k;
  return nullptr;
}

// True when `path` names a section (a proper prefix of some key, ending at a dot).
bool is_section(std::string_view path) {
  for (const Key& k : schema())
    if (k.path.size() > path.size() && k.path.substr(0, path.size()) == path &&
        k.path[path.size()] == '.')
      return true;
  return false;
}

// ---- helpers ------------------------------------------------------------------------------

std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// Every key and section name, for suggestions.
std::vector<std::string> all_names() {
  std::vector<std::string> names;
  for (const Key& k : schema()) {
    std::string_view p = k.path;
    for (std::size_t dot = p.find('.'); dot != std::string_view::npos; dot = p.find('.', dot + 1))
      names.emplace_back(p.substr(0, dot));
    names.emplace_back(p);
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

[[noreturn]] void unknown_key(const std::string& origin, const std::string& path) {
  std::string best;
  std::size_t best_d = std::numeric_limits<std::size_t>::max();
  for (const std::string& n : all_names()) {
    const std::size_t d = edit_distance(lower(path), n);
    if (d < best_d) best_d = d, best = n;
  }
  std::string msg = origin + ": unknown key '" + path + "'";
  if (best_d <= std::max<std::size_t>(3, path.size() / 3)) {
    msg += " (did you mean '" + best + "'?)";
  } else {
    msg += " (zotrain --help lists the valid keys)";
  }
  throw Error(msg);
}

const char* type_name(const Key& k) {
  switch (k.type) {
    case Type::kInt: return "an integer";
    case Type::kSeed: return "a non-negative integer";
    case Type::kNumber: return "a number";
    case Type::kBool: return "true or false";
    case Type::kString: return "a string";
    case Type::kEnum: return "a string";
    case Type::kPartition: return "an integer or a partition name";
    case Type::kIntSchedule: return "an integer or a schedule";
    case Type::kNumberSchedule: return "a number or a schedule";
    case Type::kBytes: return "a size in bytes";
  }
  return "?";
}

// "400MiB", "1.5 GB", "4096", "64 KiB" -> bytes; nullopt when it is not such a size.
std::optional<double> parse_bytes(const std::string& text) {
  std::size_t used = 0;
  double x = 0;
  try {
    x = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  std::string unit = text.substr(used);
  unit.erase(0, unit.find_first_not_of(' '));
  static const std::pair<std::string_view, double> kUnits[] = {
      {"", 1},          {"b", 1},        {"kib", 1024.0}, {"mib", 1048576.0}, {"gib", 1073741824.0},
      {"kb", 1e3},      {"mb", 1e6},     {"gb", 1e9}};
  for (const auto& [name, scale] : kUnits)
    if (lower(unit) == name) return !std::isfinite(x) || x < 0 ? std::nullopt : std::optional(x * scale);
  return std::nullopt;
}

std::string format_number(double v) {
  if (std::nearbyint(v) == v && std::fabs(v) < 1e15) return std::to_string(static_cast<std::int64_t>(v));
  std::ostringstream os;
  os << v;
  return os.str();
}

std::string join(const std::vector<std::string_view>& v, const char* sep) {
  std::string r;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) r += sep;
    r += v[i];
  }
  return r;
}

std::string describe_range(const Range& r) {
  const bool lo = std::isfinite(r.lo), hi = std::isfinite(r.hi);
  std::string s;
  if (lo && hi) {
    s = std::string("in ") + (r.lo_open ? "(" : "[") + format_number(r.lo) + ", " +
        format_number(r.hi) + (r.hi_open ? ")" : "]");
  } else if (lo) {
    s = std::string(r.lo_open ? "> " : ">= ") + format_number(r.lo);
  } else if (hi) {
    s = std::string(r.hi_open ? "< " : "<= ") + format_number(r.hi);
  }
  return s;
}

bool in_range(const Range& r, double v) {
  if (std::isnan(v)) return false;
  if (r.lo_open ? !(v > r.lo) : !(v >= r.lo)) return false;
  if (r.hi_open ? !(v < r.hi) : !(v <= r.hi)) return false;
  return true;
}

constexpr std::uint64_t kMaxPartition = 1000000;

// A partition given as text: decimal digits (leading zeros allowed) or a name, any case.
std::optional<Partition> parse_partition(std::string_view s) {
  const std::string l = lower(s);
  if (l == kPartitionNames[0]) return Partition{Partition::Rule::kCls1, 0};
  if (l == kPartitionNames[1]) return Partition{Partition::Rule::kCls2, 0};
  if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), [](char c) {
        return c >= '0' && c <= '9';
      }))
    return std::nullopt;
  const long v = std::stol(std::string(s));
  if (static_cast<std::uint64_t>(v) > kMaxPartition) return std::nullopt;
  return Partition{Partition::Rule::kLayers, static_cast<int>(v)};
}

std::string partition_text(const Partition& p) {
  switch (p.rule) {
    case Partition::Rule::kLayers: return std::to_string(p.layers);
    case Partition::Rule::kCls1: return std::string(kPartitionNames[0]);
    case Partition::Rule::kCls2: return std::string(kPartitionNames[1]);
  }
  return "?";
}

// ---- applying values ----------------------------------------------------------------------

class Applier {
 public:
  Applier(ExperimentConfig& cfg, std::string origin) : cfg_(cfg), origin_(std::move(origin)) {}

  // Applies every member of the object `j` found at `prefix` ("" for the document).
  void apply_object(const Json& j, const std::string& prefix) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      apply(prefix.empty() ? it.key() : prefix + "." + it.key(), it.value(), nullptr);
    }
  }

  // `raw` (from --set) is the value's text: string-typed keys take it verbatim unless it is a
  // JSON string literal, so `--set name=123` names the run "123".
  void apply(const std::string& path, const Json& v, const std::string* raw) {
    const Key* k = find_key(path);
    if (!k) {
      if (!is_section(path)) unknown_key(origin_, path);
      if (!v.is_object()) {
        throw Error(origin_ + ": key '" + path + "' is a section and must be an object, got " +
                    v.dump());
      }
      apply_object(v, path);
      return;
    }
    if (raw && !v.is_string() &&
        (k->type == Type::kString || k->type == Type::kEnum)) {
      apply(path, Json(*raw), nullptr);
      return;
    }
    set(*k, v);
    const std::string key(k->path);
    if (std::find(cfg_.given.begin(), cfg_.given.end(), key) == cfg_.given.end())
      cfg_.given.push_back(key);
  }

 private:
  [[noreturn]] void wrong(const Key& k, const Json& v, const std::string& expected) const {
    throw Error(origin_ + ": key '" + std::string(k.path) + "' must be " + expected + ", got " +
                v.dump());
  }

  [[noreturn]] void bad_schedule(const Key& k, const std::string& what) const {
    throw Error(origin_ + ": " + std::string(k.path) + ": " + what);
  }

  // A JSON integer (or integral float) as int64; false when it is not one.
  static bool as_int(const Json& v, std::int64_t& out) {
    if (v.is_number_integer()) {
      if (v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t{INT64_MAX}) return false;
      out = v.get<std::int64_t>();
      return true;
    }
    if (v.is_number_float() && std::nearbyint(v.get<double>()) == v.get<double>() &&
        std::fabs(v.get<double>()) < 9e15) {
      out = static_cast<std::int64_t>(v.get<double>());
      return true;
    }
    return false;
  }

  // Epoch key of a schedule object: decimal digits only (no sign, no spaces), at most 9 of them
  // after leading zeros.
  static bool parse_epoch(const std::string& s, std::int64_t& out) {
    if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return false;
    const auto nz = s.find_first_not_of('0');
    const std::string digits = nz == std::string::npos ? "0" : s.substr(nz);
    if (digits.size() > 9) return false;
    out = std::stoll(digits);
    return true;
  }

  Schedule parse_schedule(const Key& k, const Json& v) const {
    const bool ints = k.type == Type::kIntSchedule;
    const std::string kind = ints ? "an integer" : "a number";
    const std::string form = kind + " " + describe_range(k.range) +
                             " or a schedule {\"0\": value, \"<epoch>\": value, ...}";
    Schedule s;
    if (v.is_number()) {
      double x = 0;
      if (ints) {
        std::int64_t i = 0;
        if (!as_int(v, i)) wrong(k, v, form);
        x = static_cast<double>(i);
      } else {
        x = v.get<double>();
      }
      if (!in_range(k.range, x)) wrong(k, v, kind + " " + describe_range(k.range));
      s.points.emplace_back(0, x);
      return s;
    }
    if (!v.is_object()) wrong(k, v, form);
    for (auto it = v.begin(); it != v.end(); ++it) {
      std::int64_t epoch = 0;
      if (!parse_epoch(it.key(), epoch)) {
        bad_schedule(k, "schedule key '" + it.key() +
                            "' is not an epoch number (expected a non-negative integer such as "
                            "\"20\")");
      }
      const Json& val = it.value();
      const std::string at = " at epoch " + std::to_string(epoch);
      std::int64_t i = 0;
      if (ints ? !as_int(val, i) : !val.is_number()) {
        bad_schedule(k, "value " + val.dump() + at + " is not " + kind);
      }
      const double x = ints ? static_cast<double>(i) : val.get<double>();
      if (!in_range(k.range, x)) {
        std::string range = describe_range(k.range);
        if (range.rfind("in ", 0) == 0) range = range.substr(3);  // "outside [1, 15]"
        bad_schedule(k, "value " + val.dump() + at + " is outside " + range);
      }
      for (const auto& p : s.points) {
        if (p.first == epoch) {
          bad_schedule(k, "schedule key '" + it.key() + "' repeats epoch " +
                              std::to_string(epoch));
        }
      }
      s.points.emplace_back(epoch, x);
    }
    std::sort(s.points.begin(), s.points.end());
    if (s.points.empty() || s.points.front().first != 0) {
      bad_schedule(k, "schedule must start at epoch 0 (add a \"0\" key), got " + v.dump());
    }
    // Canonical form: drop points that do not change the value.
    std::vector<std::pair<std::int64_t, double>> kept;
    for (const auto& p : s.points)
      if (kept.empty() || kept.back().second != p.second) kept.push_back(p);
    s.points = std::move(kept);
    return s;
  }

  void set(const Key& k, const Json& v) const {
    if (!k.unset.empty() && (v.is_null() || (v.is_string() && lower(v.get<std::string>()) == k.unset) ||
                             (v.is_string() && lower(v.get<std::string>()) == "null"))) {
      if (auto* r = std::get_if<OptIntRef>(&k.ref)) (*r)(cfg_).reset();
      if (auto* r = std::get_if<OptNumberRef>(&k.ref)) (*r)(cfg_).reset();
      if (auto* r = std::get_if<ScheduleRef>(&k.ref)) (*r)(cfg_).points.clear();
      return;
    }
    const std::string or_unset =
        k.unset.empty() ? "" : std::string(" or ") + (k.unset == "null" ? "null" : "\"auto\"");
    switch (k.type) {
      case Type::kInt: {
        std::int64_t x = 0;
        if (v.is_number_integer()) {
          if (v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t{INT64_MAX})
            wrong(k, v, "an integer " + describe_range(k.range));
          x = v.get<std::int64_t>();
        } else if (v.is_number_float() && std::nearbyint(v.get<double>()) == v.get<double>() &&
                   std::fabs(v.get<double>()) < 9e15) {
          x = static_cast<std::int64_t>(v.get<double>());
        } else {
          wrong(k, v, "an integer" + or_unset);
        }
        if (!in_range(k.range, static_cast<double>(x))) {
          wrong(k, v, "an integer " + describe_range(k.range) + or_unset);
        }
        if (auto* r = std::get_if<OptIntRef>(&k.ref)) (*r)(cfg_) = x;
        else std::get<IntRef>(k.ref)(cfg_) = x;
        return;
      }
      case Type::kSeed:
        if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<std::int64_t>() < 0)) {
          wrong(k, v, type_name(k));
        }
        std::get<SeedRef>(k.ref)(cfg_) = v.get<std::uint64_t>();
        return;
      case Type::kNumber: {
        if (!v.is_number()) wrong(k, v, "a number" + or_unset);
        const double x = v.get<double>();
        if (!in_range(k.range, x)) wrong(k, v, describe_range(k.range) + or_unset);
        if (auto* r = std::get_if<OptNumberRef>(&k.ref)) (*r)(cfg_) = x;
        else std::get<NumberRef>(k.ref)(cfg_) = x;
        return;
      }
      case Type::kBool:
        if (!v.is_boolean()) wrong(k, v, "true or false");
        std::get<BoolRef>(k.ref)(cfg_) = v.get<bool>();
        return;
      case Type::kString:
        if (!v.is_string()) wrong(k, v, "a string");
        std::get<StringRef>(k.ref)(cfg_) = v.get<std::string>();
        return;
      case Type::kEnum: {
        const std::string expected = "one of " + join(k.choices, ", ");
        if (!v.is_string()) wrong(k, v, expected);
        const std::string s = lower(v.get<std::string>());
        for (std::size_t i = 0; i < k.choices.size(); ++i) {
          if (s == k.choices[i]) {
            std::get<EnumRef>(k.ref).set(cfg_, i);
            return;
          }
        }
        wrong(k, v, expected);
      }
      case Type::kPartition: {
        const std::string expected = "an integer >= 0 or one of " +
                                     std::string(kPartitionNames[0]) + ", " +
                                     std::string(kPartitionNames[1]);
        std::optional<Partition> p;
        if (v.is_number_integer()) {
          if (!v.is_number_unsigned() && v.get<std::int64_t>() < 0) wrong(k, v, expected);
          if (v.get<std::uint64_t>() > kMaxPartition) wrong(k, v, expected);
          p = Partition{Partition::Rule::kLayers, static_cast<int>(v.get<std::uint64_t>())};
        } else if (v.is_string()) {
          p = parse_partition(v.get<std::string>());
        }
        if (!p) wrong(k, v, expected);
        std::get<PartitionRef>(k.ref)(cfg_) = *p;
        return;
      }
      case Type::kIntSchedule:
      case Type::kNumberSchedule:
        std::get<ScheduleRef>(k.ref)(cfg_) = parse_schedule(k, v);
        return;
      case Type::kBytes: {
        const std::string expected =
            "a size: bytes, or a number with a unit (B, KiB, MiB, GiB, kB, MB, GB) such as "
            "\"400MiB\"" + or_unset;
        std::optional<double> x;
        if (v.is_number()) x = v.get<double>();
        else if (v.is_string()) x = parse_bytes(v.get<std::string>());
        if (!x || std::nearbyint(*x) != *x || !in_range(k.range, *x) || *x >= 9e18)
          wrong(k, v, expected);
        std::get<OptIntRef>(k.ref)(cfg_) = static_cast<std::int64_t>(*x);
        return;
      }
    }
  }

  ExperimentConfig& cfg_;
  std::string origin_;
};

Json parse_document(const std::string& text, const std::string& origin) {
  try {
    return Json::parse(text, nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/true);
  } catch (const Json::parse_error& e) {
    // e.byte is 1-based; turn it into line and column for the message.
    std::size_t line = 1, col = 1;
    const std::size_t end = std::min<std::size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
    for (std::size_t i = 0; i < end; ++i) {
      if (text[i] == '\n') ++line, col = 1;
      else ++col;
    }
    std::string detail = e.what();
    // Drop nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 2: ".
    if (const auto p = detail.find(": "); p != std::string::npos) detail = detail.substr(p + 2);
    throw Error(origin + ": malformed JSON at line " + std::to_string(line) + ", column " +
                std::to_string(col) + " (byte " + std::to_string(e.byte) + "): " + detail);
  } catch (const Json::out_of_range& e) {
    // A number beyond a double (1e999): nlohmann reports it without a position.
    std::string detail = e.what();
    if (const auto p = detail.find("] "); p != std::string::npos) detail = detail.substr(p + 2);
    throw Error(origin + ": malformed JSON: " + detail + " (beyond the range of a double)");
  }
}

void apply_override(ExperimentConfig& cfg, const std::string& ov) {
  const auto eq = ov.find('=');
  if (eq == std::string::npos) {
    throw Error("--set " + ov + ": missing '=', expected dotted.key=value (e.g. "
                "--set train.epochs=3)");
  }
  const std::string key = ov.substr(0, eq), text = ov.substr(eq + 1);
  if (key.empty()) throw Error("--set " + ov + ": empty key, expected dotted.key=value");
  // A config file's strings are checked by the JSON parser; --set text is taken as it is, and
  // text that is not UTF-8 could not be written to config.json (nor shown in an error).
  try {
    (void)Json(text).dump();
  } catch (const Json::type_error&) {
    throw Error("--set " + key + ": the value is not valid UTF-8 text");
  }
  Json v = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded()) v = text;
  Applier(cfg, "--set").apply(key, v, &text);
}

// zo.preset: its values go to the zo.* keys the file and --set did not give.
void expand_zo_preset(ExperimentConfig& cfg, const std::string& origin) {
  const PresetInfo& p = preset(cfg.zo.preset);
  std::vector<std::string> given = cfg.given;
  Applier applier(cfg, origin + ": zo.preset '" + std::string(p.name) + "'");
  for (const auto& [key, value] : p.values) {
    if (std::find(given.begin(), given.end(), key) == given.end())
      applier.apply(std::string(key), Json::parse(value), nullptr);
  }
  cfg.given = std::move(given);
}

// ---- compatibility, from the registries' statements -------------------------------------------

// The names of a registry's entries that satisfy `fits`, joined by `sep`.
template <class Info, class Fits>
std::string names_where(const std::vector<Info>& list, Fits fits, const char* sep = ", ") {
  std::string s;
  for (const Info& i : list)
    if (fits(i)) s += (s.empty() ? "" : sep) + std::string(i.name);
  return s;
}

// The one form of a compatibility error: the key and its value, what it was combined with, and
// what the registry says the value needs.
[[noreturn]] void incompatible(const std::string& origin, std::string_view key,
                               std::string_view value, const std::string& with,
                               const std::string& needs) {
  throw Error(origin + ": " + std::string(key) + ": '" + std::string(value) + "' with " + with +
              "; " + needs);
}

std::string why(const char* reason) { return *reason ? std::string(": ") + reason : ""; }

// Checks that involve more than one key (single keys are checked as they are applied), each
// generated from what the registries (config/methods.hpp, config/catalogue.hpp) state an entry
// supports. Runs once, after the file and every override, so the order of --set does not matter.
void validate_combination(const ExperimentConfig& cfg, const std::string& origin) {
  const Precision p = cfg.model.precision;
  const std::string prec = "model.precision " + std::string(name(p));
  const PresetInfo& pre = preset(cfg.zo.preset);
  const EstimatorInfo& est = estimator(cfg.zo.estimator);
  const EstimatorSupport& on = est.on(p);
  const PerturbationInfo& src = perturbation(cfg.zo.perturbation);
  const ArchInfo& arch = architecture(cfg.model.arch);
  const std::string with_est = prec + " and zo.estimator " + est.name;

  if (!pre.precisions.has(p)) {
    incompatible(origin, "zo.preset", pre.name, prec,
                 "model.precision " + std::string(name(p)) + " offers zo.preset " +
                     names_where(presets(), [&](const PresetInfo& i) {
                       return i.precisions.has(p);
                     }, " or "));
  }
  if (!arch.precisions.has(p)) {
    incompatible(origin, "model.arch", arch.name, prec,
                 std::string("it trains in model.precision ") + (arch.precisions.fp32 ? "fp32" : "int8"));
  }
  if (!on.available) {
    incompatible(origin, "zo.estimator", est.name, prec,
                 "model.precision " + std::string(name(p)) + " offers zo.estimator " +
                     names_where(estimators(), [&](const EstimatorInfo& i) {
                       return i.on(p).available;
                     }, " or "));
  }
  if (cfg.zo.queries > on.max_queries) {
    incompatible(origin, "zo.queries", std::to_string(cfg.zo.queries), with_est,
                 std::string(est.name) + " on " + std::string(name(p)) + " takes at most " +
                     std::to_string(on.max_queries) + " quer" + (on.max_queries == 1 ? "y" : "ies") +
                     " per step" + why(on.why_queries));
  }
  const bool default_source = cfg.zo.perturbation == ZoConfig{}.perturbation;
  switch (on.source) {
    case SourceNeed::kAny:
      if (!src.precisions.has(p)) {
        incompatible(origin, "zo.perturbation", src.name, with_est,
                     "it needs a source of " + std::string(name(p)) + ": " +
                         names_where(perturbations(), [&](const PerturbationInfo& i) {
                           return i.precisions.has(p);
                         }) + why(on.why_source));
      }
      break;
    case SourceNeed::kSigns:
      if (!src.signs || !src.precisions.has(p)) {
        incompatible(origin, "zo.perturbation", src.name, with_est,
                     "it needs a +-1 source: zo.perturbation " +
                         names_where(perturbations(), [&](const PerturbationInfo& i) {
                           return i.signs && i.precisions.has(p);
                         }, " or ") + why(on.why_source));
      }
      break;
    case SourceNeed::kOwn:
      if (!default_source) {
        incompatible(origin, "zo.perturbation", src.name, with_est,
                     std::string(est.name) + " on " + std::string(name(p)) +
                         " takes no zo.perturbation (leave it at its default " +
                         std::string(name(ZoConfig{}.perturbation)) + ")" + why(on.why_source));
      }
      break;
  }
  if (cfg.zo.batched && (!on.batched || arch.batchnorm)) {
    std::string fits;
    for (const EstimatorInfo& e : estimators())
      for (const Precision q : {Precision::kFp32, Precision::kInt8})
        if (e.on(q).batched)
          fits += (fits.empty() ? "" : " or ") + std::string("zo.estimator ") + e.name +
                  " with model.precision " + std::string(name(q));
    incompatible(origin, "zo.batched", "true",
                 with_est + " and model.arch " + arch.name + (arch.batchnorm ? " (BatchNorm)" : ""),
                 "batched probes need " + fits + ", and a model without BatchNorm (" +
                     names_where(architectures(), [](const ArchInfo& a) { return !a.batchnorm; },
                                 " or ") +
                     "), whose batch statistics would mix the 2q replicas");
  }
  if (cfg.zo.node_perturbation && !est.node_perturbation) {
    incompatible(origin, "zo.node_perturbation", "true", "zo.estimator " + std::string(est.name),
                 "it needs zo.estimator " +
                     names_where(estimators(), [](const EstimatorInfo& e) {
                       return e.node_perturbation;
                     }, " or "));
  }
  if (cfg.zo.node_perturbation && !src.per_element) {
    incompatible(origin, "zo.node_perturbation", "true",
                 "zo.perturbation " + std::string(src.name),
                 "it needs a per-element source (zo.perturbation " +
                     names_where(perturbations(), [](const PerturbationInfo& i) {
                       return i.per_element;
                     }) + ")");
  }
  const DatasetInfo& data = dataset(cfg.data.dataset);
  if (data.input != arch.input) {
    std::string fits;
    for (const ArchInfo& a : architectures()) {
      fits += (fits.empty() ? "" : ", ") + std::string(a.name) + " trains on " +
              names_where(datasets(), [&](const DatasetInfo& d) { return d.input == a.input; },
                          " or ");
    }
    incompatible(origin, "model.arch", arch.name, "data.dataset " + std::string(data.name), fits);
  }
}

// Keys that have no effect with the chosen model, data, precision or method. An error when the
// key can only be a mistake; a warning where shipped configs set it for the common case (e.g.
// optimizer settings, which a --set model.precision=int8 leaves behind).
OrderedJson value_json(const Key& k, const ExperimentConfig& c);

struct InertRule {
  std::string_view key;  // a key, or a section ending in '.'
  bool error;
  bool (*inert)(const ExperimentConfig&);
  const char* why;
};

bool images(const ExperimentConfig& c) { return dataset(c.data.dataset).input == InputKind::kImages; }
bool points(const ExperimentConfig& c) { return !images(c); }
bool no_subset(const ExperimentConfig& c) { return !c.data.subset.has_value(); }
bool int8(const ExperimentConfig& c) { return c.model.precision == Precision::kInt8; }
// Poor Man's Training on int8 (zo.estimator layerwise) steps by a learning rate, not by bits.
bool int8_pmt(const ExperimentConfig& c) { return int8(c) && c.zo.estimator == Estimator::kLayerwise; }
bool int8_sign_step(const ExperimentConfig& c) { return int8(c) && !int8_pmt(c); }
bool fp32(const ExperimentConfig& c) { return c.model.precision == Precision::kFp32; }
bool no_zo(const ExperimentConfig& c) { return c.method.name == Method::kFullBp; }
bool no_float_sign(const ExperimentConfig& c) {
  return int8_pmt(c) || no_zo(c) || c.int8.sign != Int8Sign::kFloat;
}
bool no_pool(const ExperimentConfig& c) { return c.zo.perturbation != Perturbation::kPezoPool; }
bool no_onthefly(const ExperimentConfig& c) { return c.zo.perturbation != Perturbation::kPezoOnTheFly; }
bool no_pezo(const ExperimentConfig& c) { return no_pool(c) && no_onthefly(c); }
// full_bp and full_zo fix C at 0 and L: a partition that says so (as a written-out config.json
// does) is not set in vain.
bool one_part(const ExperimentConfig& c) {
  if (c.method.name == Method::kElasticZo) return false;
  const int fixed = c.method.name == Method::kFullBp ? 0 : architecture(c.model.arch).layers;
  return c.method.partition != Partition{Partition::Rule::kLayers, fixed};
}

const InertRule kInertRules[] = {
    {"data.augment", true, images, "augmentation applies to point clouds (data.dataset modelnet40)"},
    {"data.points", true, images, "points per sample apply to point clouds"},
    {"data.subset", true, points, "the seeded subset applies to image sets"},
    {"data.rotate_degrees", true, points, "rotation applies to image sets (see data.augment)"},
    {"data.subset_seed", false, no_subset, "it seeds data.subset, which is null"},
    {"int8.", false, fp32, "int8 settings apply with model.precision int8"},
    {"optimizer.lr", false, int8_sign_step,
     "ElasticZO-INT8 updates weights by b_zo/b_bp-bit rounding (int8.b_zo, int8.b_bp), not by a "
     "learning rate (zo.preset pmt does use it)"},
    {"optimizer.decay.", false, int8_sign_step,
     "ElasticZO-INT8 updates weights by b_zo/b_bp-bit rounding, not by a learning rate"},
    {"optimizer.name", false, int8,
     "int8 backprop (NITI) updates weights by b_bp-bit rounding (int8.b_bp), not by an "
     "optimizer"},
    {"optimizer.bp_lr", false, int8,
     "int8 backprop (NITI) updates weights by b_bp-bit rounding (int8.b_bp), not by a "
     "learning rate"},
    {"int8.r_max", false, int8_pmt, "zo.estimator layerwise perturbs int8 weights by +-1"},
    {"int8.p_zero", false, int8_pmt, "zo.estimator layerwise perturbs every weight of a layer"},
    {"int8.b_zo", false, int8_pmt, "zo.estimator layerwise steps by optimizer.lr"},
    {"int8.sign", false, int8_pmt, "zo.estimator layerwise uses the loss difference itself"},
    {"int8.dead_zone", false, no_float_sign,
     "it applies to the float sign (int8.sign float) of a ZO step"},
    {"zo.cache_direction", false, int8_pmt,
     "int8's zo.estimator layerwise perturbs one layer at a time from a saved copy"},
    {"train.memory_plan", false, int8, "the int8 trainer plans its own buffers"},
    {"int8.input", false, points, "it quantises image pixels; point coordinates are fixed-point"},
    {"zo.eps", false, int8,
     "int8 perturbs by integers (in [-int8.r_max, int8.r_max]; layerwise: +-1)"},
    {"zo.grad_clip", false, int8, "int8 steps by the sign of the estimate or, layerwise, by "
     "the estimate scaled by K / (K + d - 1)"},
    {"zo.pool_size", false, no_pool, "it sizes the pool of zo.perturbation pezo_pool"},
    {"zo.pezo_pow2", false, no_pezo, "it scales PeZO's sources (pezo_pool, pezo_onthefly)"},
    {"zo.pezo_offset", false, no_pezo, "it places PeZO's sources (pezo_pool, pezo_onthefly)"},
    {"zo.rngs", false, no_onthefly, "it applies to zo.perturbation pezo_onthefly"},
    {"zo.rng_bits", false, no_onthefly, "it applies to zo.perturbation pezo_onthefly"},
    {"zo.", false, no_zo, "full_bp has no zeroth-order part"},
    {"method.partition", false, one_part, "full_bp and full_zo fix C (at 0 and L)"},
    {"method.bp_activations", false, one_part,
     "it chooses what backprop uses after a ZO step, so it needs both parts (elastic_zo)"},
    {"method.bp_activations", false, int8,
     "the int8 backprop tail always starts from the last forward pass, the minus pass"},
};

// Only keys given a value other than their default count (a written-out config.json gives every
// key, most at their defaults).
void check_inert_keys(ExperimentConfig& cfg, const std::string& origin) {
  cfg.warnings.clear();
  const ExperimentConfig defaults;
  for (const std::string& key : cfg.given) {
    const Key* k = find_key(key);
    if (k == nullptr || value_json(*k, cfg) == value_json(*k, defaults)) continue;
    for (const InertRule& r : kInertRules) {
      const bool match = r.key.back() == '.' ? key.starts_with(r.key) : key == r.key;
      if (!match || !r.inert(cfg)) continue;
      const std::string msg = key + " has no effect here: " + r.why;
      if (r.error) throw Error(origin + ": " + msg);
      cfg.warnings.push_back(msg + " (ignored)");
      break;
    }
  }
}

ExperimentConfig parse_with_source_dir(const std::string& json_text, const std::string& origin,
                                       const std::vector<std::string>& overrides,
                                       const std::string& source_dir) {
  ExperimentConfig cfg;
  cfg.source_dir = source_dir;
  const Json doc = parse_document(json_text, origin);
  if (!doc.is_object()) {
    throw Error(origin + ": the top level must be a JSON object, got " +
                std::string(doc.type_name()));
  }
  Applier(cfg, origin).apply_object(doc, "");
  for (const std::string& ov : overrides) apply_override(cfg, ov);
  expand_zo_preset(cfg, origin);
  validate_combination(cfg, origin);
  check_inert_keys(cfg, origin);
  return cfg;
}

OrderedJson unset_json(const Key& k) {
  if (k.unset == "null") return nullptr;
  return std::string(k.unset);
}

// A kInt / kNumber key's value: plain, or optional and written as its unset spelling.
template <class Ref, class OptRef>
OrderedJson number_json(const Key& k, ExperimentConfig& cfg) {
  if (auto* r = std::get_if<OptRef>(&k.ref)) {
    const auto& v = (*r)(cfg);
    return v ? OrderedJson(*v) : unset_json(k);
  }
  return std::get<Ref>(k.ref)(cfg);
}

OrderedJson value_json(const Key& k, const ExperimentConfig& c) {
  auto& cfg = const_cast<ExperimentConfig&>(c);  // the accessors only read here
  switch (k.type) {
    case Type::kInt: return number_json<IntRef, OptIntRef>(k, cfg);
    case Type::kSeed: return std::get<SeedRef>(k.ref)(cfg);
    case Type::kNumber: return number_json<NumberRef, OptNumberRef>(k, cfg);
    case Type::kBool: return std::get<BoolRef>(k.ref)(cfg);
    case Type::kString: return std::get<StringRef>(k.ref)(cfg);
    case Type::kEnum: return std::string(k.choices[std::get<EnumRef>(k.ref).get(cfg)]);
    case Type::kPartition: {
      const Partition& p = std::get<PartitionRef>(k.ref)(cfg);
      if (p.rule == Partition::Rule::kLayers) return p.layers;
      return partition_text(p);
    }
    case Type::kBytes: return number_json<IntRef, OptIntRef>(k, cfg);
    case Type::kIntSchedule:
    case Type::kNumberSchedule: {
      const Schedule& s = std::get<ScheduleRef>(k.ref)(cfg);
      if (s.points.empty()) return unset_json(k);  // auto
      auto one = [&](double v) -> OrderedJson {
        if (k.type == Type::kIntSchedule) return static_cast<std::int64_t>(v);
        return v;
      };
      if (s.points.size() == 1 && s.points.front().first == 0) return one(s.points.front().second);
      OrderedJson o = OrderedJson::object();
      for (const auto& [epoch, v] : s.points) o[std::to_string(epoch)] = one(v);
      return o;
    }
  }
  return nullptr;
}

}  // namespace

ExperimentConfig parse_config(const std::string& json_text, const std::string& origin,
                              const std::vector<std::string>& overrides) {
  return parse_with_source_dir(json_text, origin, overrides, ".");
}

ExperimentConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
  if (path.empty()) return parse_with_source_dir("{}", "(defaults)", overrides, ".");
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw Error(path + ": is a directory, expected a JSON config file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open config file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error(path + ": read error");
  fs::path dir = fs::absolute(fs::path(path), ec).parent_path();
  if (ec || dir.empty()) dir = fs::path(path).parent_path();
  return parse_with_source_dir(text.str(), path, overrides,
                               dir.empty() ? "." : dir.lexically_normal().string());
}

std::string resolve_path(const ExperimentConfig& cfg, const std::string& p) {
  namespace fs = std::filesystem;
  if (p.empty() || fs::path(p).is_absolute()) return p;
  std::error_code ec;
  const fs::path beside = (fs::path(cfg.source_dir) / p).lexically_normal();
  if (fs::exists(beside, ec)) return beside.string();
  return p;
}

std::string to_json_text(const ExperimentConfig& cfg) {
  OrderedJson doc = OrderedJson::object();
  for (const Key& k : schema()) {
    OrderedJson* node = &doc;
    std::string_view rest = k.path;
    for (auto dot = rest.find('.'); dot != std::string_view::npos; dot = rest.find('.')) {
      node = &(*node)[std::string(rest.substr(0, dot))];
      rest = rest.substr(dot + 1);
    }
    (*node)[std::string(rest)] = value_json(k, cfg);
  }
  return doc.dump(2) + "\n";
}

std::string keys_help() {
  const ExperimentConfig defaults;
  std::string out;
  for (const Key& k : schema()) {
    std::string type;
    switch (k.type) {
      case Type::kInt: type = "integer " + describe_range(k.range); break;
      case Type::kSeed: type = "integer >= 0"; break;
      case Type::kNumber: type = "number " + describe_range(k.range); break;
      case Type::kBool: type = "true | false"; break;
      case Type::kString: type = "string"; break;
      case Type::kEnum: type = join(k.choices, " | "); break;
      case Type::kPartition: type = "integer | zo-feat-cls1 | zo-feat-cls2"; break;
      case Type::kIntSchedule:
      case Type::kNumberSchedule:
        type = std::string(k.type == Type::kIntSchedule ? "integer " : "number ") +
               describe_range(k.range) + " or {\"epoch\": value} schedule";
        break;
      case Type::kBytes: type = "bytes or \"<n>KiB|MiB|GiB|kB|MB|GB\""; break;
    }
    if (!k.unset.empty()) type += " or " + std::string(k.unset);
    out += "  " + std::string(k.path) + " (" + type + ", default " +
           value_json(k, defaults).dump() + "): " + std::string(k.help) + "\n";
  }
  return out;
}

std::vector<std::string> key_names() {
  std::vector<std::string> names;
  for (const Key& k : schema()) names.emplace_back(k.path);
  return names;
}

double Schedule::at(std::int64_t epoch) const {
  ZT_CHECK(!points.empty() && points.front().first == 0);
  double v = points.front().second;
  for (const auto& [from, value] : points) {
    if (from > epoch) break;
    v = value;
  }
  return v;
}

std::int64_t resolve_batch_size(const ExperimentConfig& cfg) {
  if (cfg.train.batch_size) return *cfg.train.batch_size;
  // The paper's batches, per architecture (config/catalogue.hpp).
  const ArchInfo& arch = architecture(cfg.model.arch);
  return cfg.model.precision == Precision::kInt8 ? arch.int8_batch : arch.fp32_batch;
}

Schedule resolve_p_zero(const ExperimentConfig& cfg) {
  if (!cfg.int8.p_zero.points.empty()) return cfg.int8.p_zero;
  // PointNet's ZO part is 6× LeNet-5's and mostly per-point layers whose every weight sees
  // batch × points inputs: a sparser z moves fewer weights by the same one-bit step; sparser
  // still from epoch 75, the int8 step's decay.
  if (cfg.model.arch == Arch::kPointNet) return Schedule{{{0, 0.97}, {75, 0.99}}};
  return Schedule{{{0, 0.33}, {20, 0.5}, {50, 0.9}}};
}

Schedule resolve_b_bp(const ExperimentConfig& cfg, int partition) {
  if (!cfg.int8.b_bp.points.empty()) return cfg.int8.b_bp;
  // NITI's schedule; PointNet's per-point layers sum their gradients over batch × points, so
  // the same bit count moves far more of their weights per step (docs/design.md §5.5). With a
  // ZO part, the head's step falls below one unit for the last ten epochs (chosen on a
  // validation split: docs/results/tuning/int8-pointnet-p-zero.md).
  if (cfg.model.arch == Arch::kPointNet) {
    if (partition == 0) return Schedule{{{0, 3.0}, {20, 2.0}, {50, 1.0}}};
    return Schedule{{{0, 3.0}, {20, 2.0}, {50, 1.0}, {90, 0.0}}};
  }
  return Schedule{{{0, 5.0}, {20, 4.0}, {50, 3.0}}};
}

int resolve_partition(const MethodConfig& m, int num_layers) {
  ZT_CHECK(num_layers >= 1);
  const std::string L = std::to_string(num_layers);
  const MethodInfo& info = method(m.name);
  if (info.rule == PartitionRule::kNone) return 0;
  if (info.rule == PartitionRule::kAll) return num_layers;
  const std::string text = partition_text(m.partition);
  int c = 0;
  switch (m.partition.rule) {
    case Partition::Rule::kCls1: c = num_layers - 2; break;
    case Partition::Rule::kCls2: c = num_layers - 1; break;
    case Partition::Rule::kLayers:
      if (m.partition.layers > num_layers) {
        throw Error("method.partition: " + text + " is out of range: the model has " + L +
                    " parametric layers, so C must be in [0, " + L + "]");
      }
      c = m.partition.layers;
      break;
  }
  if (c < 0) {  // a named setting on a network too small for it
    throw Error("method.partition: " + text + " gives C = " + std::to_string(c) +
                ", outside [0, " + L + "]");
  }
  return c;
}

Method effective_method(int partition, int num_layers) {
  if (partition == 0) return Method::kFullBp;
  if (partition == num_layers) return Method::kFullZo;
  return Method::kElasticZo;
}

}  // namespace zt::config
