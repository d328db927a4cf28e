// The config's schema assembled from its sections, the load pipeline (document, --set, zo.preset,
// cross-key checks, keys without effect), the effective-config dump and the --help key list.
// src/config/schema.hpp says what lives where.
#include "zotrain/config/config.hpp"

#include <algorithm>
#include <filesystem>

#include "schema.hpp"
#include "zotrain/config/catalogue.hpp"

namespace zt::config {
namespace detail {
namespace {

// In schema order: the effective-config dump and --help list the keys in this order.
const std::vector<const Section*>& sections() {
  static const std::vector<const Section*> kSections = {
      &experiment_section(), &optimizer_section(), &zo_section(), &train_section()};
  return kSections;
}

// One member of every section, in section order.
template <class T>
std::vector<T> gather(std::vector<T> Section::*member) {
  std::vector<T> all;
  for (const Section* s : sections()) all.insert(all.end(), (s->*member).begin(), (s->*member).end());
  return all;
}

const std::vector<InertRule>& inert_rules() {
  static const std::vector<InertRule> kRules = gather(&Section::inert);
  return kRules;
}

OrderedJson value_json(const Key& k, const ExperimentConfig& c);

// Only keys given a value other than their default count (a written-out config.json gives every
// key, most at their defaults).
void check_inert_keys(ExperimentConfig& cfg, const std::string& origin) {
  cfg.warnings.clear();
  const ExperimentConfig defaults;
  for (const std::string& key : cfg.given) {
    const Key* k = find_key(key);
    if (k == nullptr || value_json(*k, cfg) == value_json(*k, defaults)) continue;
    for (const InertRule& r : inert_rules()) {
      const bool match = r.key.back() == '.' ? key.starts_with(r.key) : key == r.key;
      if (!match || !r.inert(cfg)) continue;
      const std::string msg = key + " has no effect here: " + r.why;
      if (r.error) throw Error(origin_of(cfg, key, origin) + ": " + msg);
      cfg.warnings.push_back(msg + " (ignored)");
      break;
    }
  }
}

// Given numbers inside their key's range but outside its usual one: a warning each.
void warn_unusual(ExperimentConfig& cfg) {
  for (const std::string& key : cfg.given) {
    const Key* k = find_key(key);
    if (k == nullptr || (k->type != Type::kInt && k->type != Type::kNumber)) continue;
    const OrderedJson v = value_json(*k, cfg);
    if (!v.is_number() || in_range(k->usual, v.get<double>())) continue;
    const bool inert = std::any_of(cfg.warnings.begin(), cfg.warnings.end(),
                                   [&](const std::string& w) { return w.starts_with(key + " "); });
    if (inert) continue;  // it has no effect here, already said
    cfg.warnings.push_back(key + " = " + v.dump() + " is unusual (usually " +
                           describe_range(k->usual) + "; accepted " + describe_range(k->range) +
                           "): check it");
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
  apply_document(cfg, origin, doc);
  for (const std::string& ov : overrides) apply_override(cfg, ov);
  expand_zo_preset(cfg, origin);
  for (const Section* s : sections())
    if (s->check) s->check(cfg, origin);
  check_inert_keys(cfg, origin);
  warn_unusual(cfg);
  for (const Section* s : sections())
    if (s->warn) s->warn(cfg);
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
    case Type::kString:
    case Type::kName: return std::get<StringRef>(k.ref)(cfg);
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

namespace {
// Every numeric key's range fits the type its value is used as (schema.hpp, Range).
bool fits_its_type(const Key& k) {
  const Range& r = k.range;
  switch (k.type) {
    case Type::kInt:
    case Type::kIntSchedule: return r.lo >= -kMaxInt && r.hi <= kMaxInt;
    case Type::kNumber:
    case Type::kNumberSchedule: return r.lo >= -kMaxNumber && r.hi <= kMaxNumber;
    default: return true;
  }
}
}  // namespace

const std::vector<Key>& schema() {
  static const std::vector<Key> kKeys = [] {
    std::vector<Key> keys = gather(&Section::keys);
    for (const Key& k : keys) ZT_CHECK_MSG(fits_its_type(k), std::string(k.path));
    return keys;
  }();
  return kKeys;
}

const Key* find_key(std::string_view path) {
  for (const Key& k : schema())
    if (k.path == path) return &k;
  return nullptr;
}

std::string origin_of(const ExperimentConfig& cfg, std::string_view key,
                      const std::string& origin) {
  std::string from = origin;
  for (const auto& [given, text] : cfg.set_by)  // the last --set of the key wins, as it did
    if (key == given || (key.starts_with(given) && key[given.size()] == '.')) from = text;
  return from;
}

[[noreturn]] void incompatible(const ExperimentConfig& cfg, const std::string& origin,
                               std::string_view key, std::string_view value,
                               const std::string& with, const std::string& needs) {
  throw Error(origin_of(cfg, key, origin) + ": " + std::string(key) + ": '" + std::string(value) + "' with " + with +
              "; " + needs);
}

}  // namespace detail

using namespace detail;

ExperimentConfig parse_config(const std::string& json_text, const std::string& origin,
                              const std::vector<std::string>& overrides) {
  return parse_with_source_dir(json_text, origin, overrides, ".");
}

ExperimentConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
  if (path.empty()) return parse_with_source_dir("{}", "(defaults)", overrides, ".");
  namespace fs = std::filesystem;
  const std::string text = read_config_text(path);
  std::error_code ec;
  fs::path dir = fs::absolute(fs::path(path), ec).parent_path();
  if (ec || dir.empty()) dir = fs::path(path).parent_path();
  return parse_with_source_dir(text, path, overrides,
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
      case Type::kName: type = "name"; break;
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

}  // namespace zt::config
