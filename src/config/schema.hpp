// The config's schema machinery, shared by the files of src/config/ (not a public header).
// What lives where:
//   registry.hpp           lookups over a registry (config/methods.hpp, config/catalogue.hpp)
//   schema.hpp             a key's description (Type, Key, Range, the field accessors) and a
//                          section's (Section: its keys, inert-key rules, cross-key check)
//   document.cpp           reading a config file (at most kMaxConfigBytes) and parsing JSON text
//                          strictly: no repeated key, no number that under- or overflows a double
//   parse.cpp              reading values: JSON documents and --set text into the struct, per type
//   config.cpp             the schema assembled from the sections, the load pipeline, the
//                          effective-config dump, the --help key list, the inert-key check
//   config_experiment.cpp  name, seed, data.*, model.*, method.*: keys, rules, partition, batch
//   config_train.cpp       optimizer.*, train.*, int8.*, output.*: keys, rules, int8 schedules
//   config_zo.cpp          zo.*: keys, presets and the compatibility checks generated from what
//                          the registries (config/methods.hpp, config/catalogue.hpp) state
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "zotrain/config/catalogue.hpp"
#include "zotrain/config/config.hpp"
#include "zotrain/core/error.hpp"
#include "registry.hpp"

namespace zt::config::detail {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

// ---- a key ----------------------------------------------------------------------------------

// kIntSchedule / kNumberSchedule: a Schedule whose values are integers / numbers, each within
// the key's range (JSON: a plain value, or {"<epoch>": value, ...} containing "0").
// kBytes: a size in bytes, an integer or a string with a unit ("400MiB", "1.5 GB").
// kName: a string that becomes one path component (runs/<name>): see check_name().
enum class Type {
  kInt, kSeed, kNumber, kBool, kString, kEnum, kPartition, kIntSchedule, kNumberSchedule, kBytes,
  kName
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

// Numeric range: lo/hi with open or closed ends. Every kInt / kIntSchedule key's range is finite
// and inside int (the trainers and loaders take int), every kNumber / kNumberSchedule key's inside
// ±kMaxNumber (they compute in float); schema() checks this of every key.
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
  // kInt / kNumber: values inside `range` but outside this one are accepted with a warning
  // ("unusually large"); default: no warning band.
  Range usual = {};
};

// The largest value of an integer key: int's (the type the trainers and loaders take).
inline constexpr double kMaxInt = 2147483647.0;
// The largest magnitude of a number key: the trainers compute in float (FLT_MAX is 3.4e38).
inline constexpr double kMaxNumber = 1e30;

inline Range above(double lo, double hi) { return Range{.lo = lo, .hi = hi, .lo_open = true}; }
inline Range closed(double lo, double hi) { return Range{.lo = lo, .hi = hi}; }
// A count: an integer from lo to int's largest value.
inline Range count_from(double lo) { return closed(lo, kMaxInt); }

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

// ---- a section --------------------------------------------------------------------------------

// A key that has no effect with the chosen model, data, precision or method. An error when the
// key can only be a mistake; a warning where shipped configs set it for the common case (e.g.
// optimizer settings, which a --set model.precision=int8 leaves behind).
struct InertRule {
  std::string_view key;  // a key, or a section ending in '.'
  bool error;
  bool (*inert)(const ExperimentConfig&);
  const char* why;
};

// One area's keys (in schema order), the rules of its keys that can have no effect, and its
// cross-key check (run once after the file and every --set, nullptr = none).
struct Section {
  std::vector<Key> keys;
  std::vector<InertRule> inert;
  void (*check)(const ExperimentConfig& cfg, const std::string& origin) = nullptr;
  // Combinations that run but are likely mistakes: one line each onto cfg.warnings.
  void (*warn)(ExperimentConfig& cfg) = nullptr;
};
const Section& experiment_section();  // config_experiment.cpp: name, seed, data, model, method
const Section& optimizer_section();   // config_train.cpp
const Section& zo_section();          // config_zo.cpp
const Section& train_section();       // config_train.cpp: train, int8, output
// zo.preset: its values go to the zo.* keys the file and --set did not give (config_zo.cpp).
void expand_zo_preset(ExperimentConfig& cfg, const std::string& origin);
// Where `key`'s value came from: the "--set K=V" that gave it (or its section), else `origin`.
std::string origin_of(const ExperimentConfig& cfg, std::string_view key, const std::string& origin);

// Predicates the sections' rules share.
inline bool int8(const ExperimentConfig& c) { return c.model.precision == Precision::kInt8; }
inline bool fp32(const ExperimentConfig& c) { return c.model.precision == Precision::kFp32; }
// Poor Man's Training on int8 (zo.estimator layerwise) steps by a learning rate, not by bits.
inline bool int8_pmt(const ExperimentConfig& c) {
  return int8(c) && c.zo.estimator == Estimator::kLayerwise;
}
inline bool no_zo(const ExperimentConfig& c) { return c.method.name == Method::kFullBp; }
inline bool images(const ExperimentConfig& c) {
  return dataset(c.data.dataset).input == InputKind::kImages;
}
inline bool points(const ExperimentConfig& c) { return !images(c); }

// ---- compatibility errors ------------------------------------------------------------------

// The one form of a compatibility error: the key and its value, what it was combined with, and
// what the registry says the value needs. The error names `origin` (the file), or the
// "--set K=V" that gave `key` when --set gave it.
[[noreturn]] void incompatible(const ExperimentConfig& cfg, const std::string& origin,
                               std::string_view key,
                               std::string_view value, const std::string& with,
                               const std::string& needs);

// ---- shared by the files (parse.cpp, config.cpp) -------------------------------------------

const std::vector<Key>& schema();          // every key, in order
const Key* find_key(std::string_view path);  // nullptr when none
void apply_document(ExperimentConfig& cfg, const std::string& origin, const Json& doc);
// Sets `path` (a key or a section) to `v`; records it in cfg.given.
void apply_value(ExperimentConfig& cfg, const std::string& origin, const std::string& path,
                 const Json& v);
void apply_override(ExperimentConfig& cfg, const std::string& ov);  // "dotted.key=value"
std::string join(const std::vector<std::string_view>& v, const char* sep);
std::string describe_range(const Range& r);
bool in_range(const Range& r, double v);
// A value of kName: "" when `name` is one valid path component, else what is wrong with it.
std::string check_name(const std::string& name);
// The text of a config file, at most kMaxConfigBytes (config.hpp) read; throws zt::Error naming
// the file when it is larger, a directory or unreadable.
std::string read_config_text(const std::string& path);
// Strict JSON: `text` parsed (comments allowed) with every repeated key of an object and every
// number literal that is nonzero but reads as 0 or a subnormal, or beyond a double, an error
// naming the key and `origin`. Syntax errors throw zt::Error with the line and column, or, when
// `syntax_error` is not null, set *syntax_error and return null (--set falls back to text).
Json parse_document(const std::string& text, const std::string& origin,
                    bool* syntax_error = nullptr);
std::string partition_text(const Partition& p);

}  // namespace zt::config::detail
