// The sections of what is trained (src/config/schema.hpp says what lives where): name, seed,
// data.*, model.*, method.*: their keys, the rules of the keys that can have no effect, the
// data set / architecture / precision compatibility (from config/catalogue.hpp), and the
// partition and batch size resolved from them.
#include <algorithm>
#include <cctype>
#include <string>

#include "schema.hpp"
#include "zotrain/config/catalogue.hpp"
#include "zotrain/config/methods.hpp"

namespace zt::config {
namespace detail {
namespace {

// Points per sample beyond this are no ModelNet40-like file's (src/data/modelnet40.cpp's limit).
constexpr double kMaxPoints = 1 << 20;

// Cross-key checks of the data set, architecture and precision.
void check_experiment(const ExperimentConfig& cfg, const std::string& origin) {
  const Precision p = cfg.model.precision;
  const ArchInfo& arch = architecture(cfg.model.arch);
  const std::string prec = "model.precision " + std::string(name(p));
  if (!arch.precisions.has(p)) {
    incompatible(cfg, origin, "model.arch", arch.name, prec,
                 std::string("it trains in model.precision ") +
                     (arch.precisions.fp32 ? "fp32" : "int8"));
  }
  const DatasetInfo& data = dataset(cfg.data.dataset);
  if (data.input != arch.input) {
    std::string fits;
    for (const ArchInfo& a : architectures()) {
      fits += (fits.empty() ? "" : ", ") + std::string(a.name) + " trains on " +
              names_where(datasets(), [&](const DatasetInfo& d) { return d.input == a.input; },
                          " or ");
    }
    incompatible(cfg, origin, "model.arch", arch.name, "data.dataset " + std::string(data.name), fits);
  }
}

// data.root's directory naming another data set than data.dataset (data/fashion-mnist read as
// MNIST, with MNIST's normalisation): the data set it names, else nullptr.
const DatasetInfo* named_by_root(std::string root) {
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  const std::string last = root.substr(root.rfind('/') + 1);  // its own name, not its parents'
  std::string l;
  for (const char c : last)
    if (std::isalnum(static_cast<unsigned char>(c)))
      l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (l.find("fashion") != std::string::npos) return &dataset(Dataset::kFashionMnist);
  if (l.find("mnist") != std::string::npos) return &dataset(Dataset::kMnist);
  if (l.find("modelnet") != std::string::npos) return &dataset(Dataset::kModelNet40);
  return nullptr;
}

void warn_experiment(ExperimentConfig& cfg) {
  const DatasetInfo* named = named_by_root(cfg.data.root);
  // A directory of another kind (point clouds for images) fails to load with its own error.
  const bool root_given =
      std::find(cfg.given.begin(), cfg.given.end(), "data.root") != cfg.given.end();
  if (named != nullptr && named->id != cfg.data.dataset &&
      (root_given || named->input == dataset(cfg.data.dataset).input)) {
    cfg.warnings.push_back("data.root '" + cfg.data.root + "' names " + named->name +
                           " but data.dataset is " + std::string(name(cfg.data.dataset)) +
                           ": the files are read as " + std::string(name(cfg.data.dataset)) +
                           " (its normalisation); set data.dataset " + named->name +
                           " or check data.root");
  }
}

bool no_subset(const ExperimentConfig& c) { return !c.data.subset.has_value(); }
// full_bp and full_zo fix C at 0 and L: a partition that says so (as a written-out config.json
// does) is not set in vain.
bool one_part(const ExperimentConfig& c) {
  if (c.method.name == Method::kElasticZo) return false;
  const int fixed = c.method.name == Method::kFullBp ? 0 : architecture(c.model.arch).layers;
  return c.method.partition != Partition{Partition::Rule::kLayers, fixed};
}

std::vector<Key> keys() {
  return {
      {"name", Type::kName, ZT_FIELD(name), {}, {},
       "experiment name: one path component (runs/<name>), 1 to 200 bytes, no '/', not . or .., "
       "not starting with '-'"},
      {"seed", Type::kSeed, ZT_FIELD(seed), {}, {}, "seed of every random choice in the run"},
      {"data.dataset", Type::kEnum, ZT_ENUM(data.dataset), {}, names_of(datasets()),
       help_of(datasets(), "data set (an image set also selects the normalisation): ")},
      {"data.root", Type::kString, ZT_FIELD(data.root), {}, {},
       "directory with the IDX files; relative: config file's directory if it exists there, "
       "else the current directory"},
      {"data.train_limit", Type::kInt, ZT_FIELD(data.train_limit), count_from(1), {},
       "use only the first N training samples (null = all)", "null"},
      {"data.test_limit", Type::kInt, ZT_FIELD(data.test_limit), count_from(1), {},
       "use only the first N test samples (null = all)", "null"},
      {"data.subset", Type::kInt, ZT_FIELD(data.subset), count_from(1), {},
       "images: keep N samples of each split, drawn with data.subset_seed, in file order (after "
       "the limits; null = all)", "null"},
      {"data.subset_seed", Type::kSeed, ZT_FIELD(data.subset_seed), {}, {},
       "seed of data.subset's draw (the same images whatever the run's seed)"},
      {"data.rotate_degrees", Type::kNumber, ZT_FIELD(data.rotate_degrees), closed(-360, 360), {},
       "images: rotate both splits counter-clockwise by this angle (bilinear, black outside; "
       "Rotated MNIST uses 30 or 45)"},
      {"data.validation", Type::kInt, ZT_FIELD(data.validation), count_from(1), {},
       "hold out the last N training samples (after the limit and subset) as a validation split: "
       "evaluated beside the test set (val_loss, val_accuracy); choose hyperparameters on it, "
       "not on the test set (null = none)", "null"},
      {"data.points", Type::kInt, ZT_FIELD(data.points), closed(1, kMaxPoints), {},
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
  };
}

std::vector<InertRule> inert_rules() {
  return {
      {"data.augment", true, images,
       "augmentation applies to point clouds (data.dataset modelnet40)"},
      {"data.points", true, images, "points per sample apply to point clouds"},
      {"data.subset", true, points, "the seeded subset applies to image sets"},
      {"data.rotate_degrees", true, points, "rotation applies to image sets (see data.augment)"},
      {"data.subset_seed", false, no_subset, "it seeds data.subset, which is null"},
      {"method.partition", false, one_part, "full_bp and full_zo fix C (at 0 and L)"},
      {"method.bp_activations", false, one_part,
       "it chooses what backprop uses after a ZO step, so it needs both parts (elastic_zo)"},
      {"method.bp_activations", false, int8,
       "the int8 backprop tail always starts from the last forward pass, the minus pass"},
  };
}

}  // namespace

const Section& experiment_section() {
  static const Section s{keys(), inert_rules(), &check_experiment, &warn_experiment};
  return s;
}

}  // namespace detail

using detail::partition_text;

std::int64_t resolve_batch_size(const ExperimentConfig& cfg) {
  if (cfg.train.batch_size) return *cfg.train.batch_size;
  // The paper's batches, per architecture (config/catalogue.hpp).
  const ArchInfo& arch = architecture(cfg.model.arch);
  return cfg.model.precision == Precision::kInt8 ? arch.int8_batch : arch.fp32_batch;
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
