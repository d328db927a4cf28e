// Reading values into the config (src/config/schema.hpp says what lives where): a JSON
// document or --set text, checked key by key against the schema's types and ranges.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <string_view>

#include "schema.hpp"

namespace zt::config::detail {
namespace {

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

// Names other tools (PyTorch scripts, Keras, Hugging Face) give a setting this schema has, by
// their last component: `optimizer.learning_rate` or `lr` -> optimizer.lr.
constexpr std::pair<std::string_view, std::string_view> kForeignNames[] = {
    {"learning_rate", "optimizer.lr"}, {"learningrate", "optimizer.lr"},
    {"lr_rate", "optimizer.lr"},       {"lr", "optimizer.lr"},
    {"batch", "train.batch_size"},     {"batchsize", "train.batch_size"},
    {"batch-size", "train.batch_size"}, {"bs", "train.batch_size"},
    {"batch_size", "train.batch_size"}, {"num_epochs", "train.epochs"},
    {"n_epochs", "train.epochs"},      {"epoch", "train.epochs"},
    {"epochs", "train.epochs"},        {"max_epochs", "train.epochs"},
    {"num_threads", "train.threads"},  {"workers", "train.threads"},
    {"steps", "train.max_steps"},      {"max_iters", "train.max_steps"},
    {"optimizer", "optimizer.name"},   {"dataset", "data.dataset"},
    {"data_dir", "data.root"},         {"seed", "seed"},
    {"epsilon", "zo.eps"},             {"num_queries", "zo.queries"},
    {"estimator", "zo.estimator"},     {"perturbation", "zo.perturbation"},
    {"preset", "zo.preset"},           {"precision", "model.precision"},
    {"arch", "model.arch"},            {"model", "model.arch"},
    {"lr_decay", "optimizer.decay.factor"}, {"gamma", "optimizer.decay.factor"},
    {"step_size", "optimizer.decay.every_epochs"}};

std::string_view foreign_name(std::string_view path) {
  const auto dot = path.rfind('.');
  const std::string last = lower(dot == std::string_view::npos ? path : path.substr(dot + 1));
  for (const auto& [foreign, key] : kForeignNames)
    if (last == foreign && path != key) return key;
  return {};
}

// The closest of `names` to `given` when it is close (a typo), else "".
std::string closest(std::string_view given, const std::vector<std::string>& names) {
  std::string best;
  std::size_t best_d = std::numeric_limits<std::size_t>::max();
  const std::string l = lower(given);
  for (const std::string& n : names) {
    const std::size_t d = edit_distance(l, n);
    if (d < best_d) best_d = d, best = n;
  }
  return best_d <= std::max<std::size_t>(3, given.size() / 3) ? best : "";
}

[[noreturn]] void unknown_key(const std::string& origin, const std::string& path) {
  std::string msg = origin + ": unknown key '" + path + "'";
  const std::string_view alias = foreign_name(path);
  const std::string best = alias.empty() ? closest(path, all_names()) : std::string(alias);
  if (!best.empty()) {
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
    case Type::kName: return "a name";
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
  if (std::nearbyint(v) == v && std::fabs(v) < 1e10) return std::to_string(static_cast<std::int64_t>(v));
  std::ostringstream os;
  os << v;
  return os.str();
}

constexpr std::uint64_t kMaxPartition = 1000000;
// Strings (paths) beyond this are no path a file system takes (PATH_MAX).
constexpr std::size_t kMaxStringBytes = 4096;

// The trainers compute in float: a nonzero number below float's smallest normal value would
// become 0 (an optimizer.lr of 1e-50 would freeze the layers it should train).
constexpr const char* kFloatSized = "0 or at least 1.2e-38 in magnitude (the trainers compute in float)";
bool float_sized(double x) { return x == 0 || std::fabs(x) >= 1.17549435e-38; }

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
                    shown(v));
      }
      apply_object(v, path);
      return;
    }
    if (raw && !v.is_string() &&
        (k->type == Type::kString || k->type == Type::kName || k->type == Type::kEnum)) {
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
                shown(v));
  }

  // A value as an error shows it: its JSON text, cut short when long; an array or object holding
  // arrays or objects only by its kind (a deeply nested one would exhaust the stack of
  // nlohmann's recursive dump).
  static std::string shown(const Json& v) {
    constexpr std::size_t kShown = 80;
    for (const Json& m : v)  // the members of an array or object, nothing else
      if (m.is_structured()) return v.is_array() ? "an array" : "an object";
    const std::string text = v.dump(-1, ' ', false, Json::error_handler_t::replace);
    if (text.size() <= kShown) return text;
    return text.substr(0, kShown) + "... (" + std::to_string(text.size()) + " bytes)";
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
      if (!float_sized(x)) wrong(k, v, kFloatSized);
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
        bad_schedule(k, "value " + shown(val) + at + " is not " + kind);
      }
      const double x = ints ? static_cast<double>(i) : val.get<double>();
      if (!in_range(k.range, x)) {
        std::string range = describe_range(k.range);
        if (range.rfind("in ", 0) == 0) range = range.substr(3);  // "outside [1, 15]"
        bad_schedule(k, "value " + shown(val) + at + " is outside " + range);
      }
      if (!float_sized(x)) bad_schedule(k, "value " + shown(val) + at + " must be " + kFloatSized);
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
      bad_schedule(k, "schedule must start at epoch 0 (add a \"0\" key), got " + shown(v));
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
        // One message for every refusal: the key, its range, what was given.
        const std::string expected = "an integer " + describe_range(k.range) + or_unset;
        std::int64_t x = 0;
        if (!as_int(v, x) || !in_range(k.range, static_cast<double>(x))) wrong(k, v, expected);
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
        const std::string expected = "a number " + describe_range(k.range) + or_unset;
        if (!v.is_number()) wrong(k, v, expected);
        const double x = v.get<double>();
        if (!in_range(k.range, x)) wrong(k, v, expected);
        if (!float_sized(x)) wrong(k, v, kFloatSized);
        if (auto* r = std::get_if<OptNumberRef>(&k.ref)) (*r)(cfg_) = x;
        else std::get<NumberRef>(k.ref)(cfg_) = x;
        return;
      }
      case Type::kBool:
        if (!v.is_boolean()) wrong(k, v, "true or false");
        std::get<BoolRef>(k.ref)(cfg_) = v.get<bool>();
        return;
      case Type::kString: {
        const std::string expected =
            "a string of at most " + std::to_string(kMaxStringBytes) + " bytes without NUL";
        if (!v.is_string()) wrong(k, v, expected);
        const std::string& s = v.get_ref<const std::string&>();
        if (s.size() > kMaxStringBytes || s.find('\0') != std::string::npos) {
          throw Error(origin_ + ": key '" + std::string(k.path) + "' must be " + expected +
                      ", got " + std::to_string(s.size()) + " bytes");
        }
        std::get<StringRef>(k.ref)(cfg_) = s;
        return;
      }
      case Type::kName: {
        if (!v.is_string()) wrong(k, v, "a string");
        const std::string& s = v.get_ref<const std::string&>();
        if (const std::string bad = check_name(s); !bad.empty()) {
          // The name itself only when it is short enough to show.
          const std::string got = s.size() <= kMaxNameBytes ? ", got " + v.dump() : "";
          throw Error(origin_ + ": key '" + std::string(k.path) + "' " + bad + got +
                      " (it names the run directory runs/<name>)");
        }
        std::get<StringRef>(k.ref)(cfg_) = s;
        return;
      }
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
        // A near miss (elasticzo, elastic-zo): the choice it resembles, ignoring _ and -.
        auto plain = [](std::string_view t) {
          std::string r;
          for (const char c : t)
            if (c != '_' && c != '-' && c != ' ') r += c;
          return r;
        };
        std::vector<std::string> plain_choices;
        for (const std::string_view c : k.choices) plain_choices.push_back(plain(c));
        const std::string near = closest(plain(s), plain_choices);
        for (std::size_t i = 0; i < k.choices.size() && !near.empty(); ++i)
          if (plain_choices[i] == near)
            throw Error(origin_ + ": key '" + std::string(k.path) + "' must be " + expected +
                        ", got " + shown(v) + " (did you mean '" + std::string(k.choices[i]) +
                        "'?)");
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

}  // namespace

std::string join(const std::vector<std::string_view>& v, const char* sep) {
  std::string r;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) r += sep;
    r += v[i];
  }
  return r;
}

bool in_range(const Range& r, double v) {
  if (std::isnan(v)) return false;
  if (r.lo_open ? !(v > r.lo) : !(v >= r.lo)) return false;
  if (r.hi_open ? !(v < r.hi) : !(v <= r.hi)) return false;
  return true;
}

std::string check_name(const std::string& name) {
  if (name.empty()) return "must not be empty";
  if (name.size() > kMaxNameBytes)
    return "must be at most " + std::to_string(kMaxNameBytes) + " bytes, got " +
           std::to_string(name.size());
  if (name == "." || name == "..") return "must not be '.' or '..'";
  if (name.front() == '-') return "must not start with '-'";
  for (const char c : name) {
    if (c == '/' || c == '\\') return "must be one path component (no '/' or '\\')";
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return "must not contain control characters";
  }
  return "";
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

std::string partition_text(const Partition& p) {
  switch (p.rule) {
    case Partition::Rule::kLayers: return std::to_string(p.layers);
    case Partition::Rule::kCls1: return std::string(kPartitionNames[0]);
    case Partition::Rule::kCls2: return std::string(kPartitionNames[1]);
  }
  return "?";
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
  // JSON when it parses (strictly: a repeated key or a number that under- or overflows is an
  // error naming the key), else the text itself.
  // String-valued keys take text that is not a JSON string literal verbatim, whatever it holds.
  const Key* k = find_key(key);
  const bool text_key =
      k && (k->type == Type::kString || k->type == Type::kName || k->type == Type::kEnum);
  bool not_json = false;
  Json v;
  try {
    v = parse_document(text, "--set " + key, &not_json);
  } catch (const Error&) {
    if (!text_key) throw;
    not_json = true;
  }
  if (not_json) v = text;
  Applier(cfg, "--set").apply(key, v, &text);  // its errors show the key and the value
  // The checks across keys name the flag as given, cut short when long (a 4 KiB path).
  constexpr std::size_t kShown = 100;
  cfg.set_by.emplace_back(key, "--set " + (ov.size() <= kShown ? ov : ov.substr(0, kShown) + "..."));
}

void apply_document(ExperimentConfig& cfg, const std::string& origin, const Json& doc) {
  Applier(cfg, origin).apply_object(doc, "");
}

void apply_value(ExperimentConfig& cfg, const std::string& origin, const std::string& path,
                 const Json& v) {
  Applier(cfg, origin).apply(path, v, nullptr);
}

}  // namespace zt::config::detail
