// One training engine per precision (FP32: Fp32Trainer on a Model; int8: Int8Trainer on an
// Int8Net) behind one interface, so the run loop, checkpoints, resume, metrics and reports are
// written once, and `zotrain bench` times the very steps a run makes.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "zotrain/config/config.hpp"
#include "zotrain/core/ranks.hpp"
#include "zotrain/kernels/isa.hpp"
#include "zotrain/telemetry/memory.hpp"
#include "zotrain/telemetry/phases.hpp"
#include "zotrain/run/checkpoint.hpp"

namespace zt::run {

// Batches of one split of a data set, for either engine: FP32 input (normalised images or point
// coordinates) or, for int8 on images, raw pixels. Epoch order is a function of (seed, epoch).
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  virtual int batches_per_epoch() const = 0;
  virtual void start_epoch(int epoch) = 0;
  virtual std::size_t sample_floats() const = 0;  // FP32 input elements per sample
  // x [n, sample_floats()], labels [n]; returns n.
  virtual int fill(int index, float* x, std::uint8_t* labels) = 0;
  // Raw uint8 input [n, sample_floats()] (images only; throws zt::Error otherwise).
  virtual int fill_raw(int index, std::uint8_t* raw, std::uint8_t* labels) = 0;

  // Batch `index` where it already is, without a copy when the source holds it (a prefetched
  // batch: valid until the next call on this source); otherwise filled into x / raw and labels,
  // as fill() and fill_raw() do. The bits are those of fill() either way.
  template <class T>
  struct View {
    const T* x = nullptr;
    const std::uint8_t* labels = nullptr;
    int n = 0;
  };
  virtual View<float> take(int index, float* x, std::uint8_t* labels) {
    return {x, labels, fill(index, x, labels)};
  }
  virtual View<std::uint8_t> take_raw(int index, std::uint8_t* raw, std::uint8_t* labels) {
    return {raw, labels, fill_raw(index, raw, labels)};
  }
};

// The data of a run, read from its files by batch (data/samples.hpp: only labels and index
// tables stay in memory), and its sources: training order shuffled (seeded) with the last partial
// batch dropped, evaluation in order with it kept. Throws zt::Error naming the key or file on
// bad data.
struct RunData {
  std::unique_ptr<BatchSource> train, test;
  std::unique_ptr<BatchSource> val;     // data.validation: the held-out tail of the training set
  int train_count = 0, test_count = 0, val_count = 0;
  std::size_t bytes = 0;                // what the data keeps in memory (labels, index tables)
};
RunData load_run_data(const config::ExperimentConfig& cfg, const std::string& root, int batch,
                      std::size_t model_input_floats, std::uint64_t seed);

// A tensor of the training state (a parameter, a BatchNorm buffer, optimizer state) that holds
// an Inf or a NaN after an update.
struct NonFinite {
  const char* tensor = nullptr;  // its name (valid while the engine lives); nullptr: all finite
  bool zo = false;               // of the ZO layers 1..C (else of the backprop layers C+1..L)
  explicit operator bool() const { return tensor != nullptr; }
};

struct EngineStep {
  double loss = 0;         // mean loss of the batch
  int correct = 0;         // argmax hits of the last forward pass
  int n = 0;               // samples
  double g = 0;            // ZO: projected gradient (FP32, after clipping) or sign (int8)
  bool clipped = false;
  int sign_agree = -1;     // int8 ZO: 1 if the integer and float signs agree, 0 if not; −1 n/a
  int sign_agree_eq12 = -1;  // the same for Eq. 12 as written
  // The state after the step's update, checked (FP32): the first non-finite tensor, if any.
  // With zo.cache_direction the step's last ZO update may still be pending: check_finite()
  // applies and checks it.
  NonFinite nonfinite;
};

struct EvalResult {
  double loss = -1, accuracy = -1;
};

struct LayerRow {  // one line of the dry-run plan
  std::string name, kind, shape;
  std::size_t params = 0;
  bool zo = false;
  std::size_t macs = 0;  // forward multiply-accumulates per sample
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual int partition() const = 0;
  virtual int num_parametric() const = 0;
  virtual std::size_t params_total() const = 0;
  virtual std::size_t params_zo() const = 0;
  virtual std::size_t params_bp() const = 0;
  virtual std::size_t forward_macs_per_sample() const = 0;
  virtual std::size_t input_floats() const = 0;  // per sample
  virtual std::vector<LayerRow> layers() const = 0;
  // Data-parallel: the layers a training probe runs on this rank's rows only (0: every layer
  // on every rank; always 0 with one rank).
  virtual int sharded_layers() const = 0;
  virtual telemetry::PaperMemory paper_memory() const = 0;
  virtual std::size_t planned_bytes() const = 0;  // trainer's buffers + parameters + batch
  virtual std::vector<std::pair<std::string, std::size_t>> planned_buffers() const = 0;
  // Hyperparameters the plan and config.json report (e.g. resolved learning rates).
  virtual nlohmann::json hyperparameters() const = 0;
  virtual void write_effective(config::ExperimentConfig& cfg) const = 0;

  // Sets the epoch's schedule; returns its values for metrics.jsonl.
  virtual nlohmann::json begin_epoch(std::int64_t epoch) = 0;
  // One step on batch `index` of the batcher's epoch (batch assembly timed as Data); step_number
  // counts the run's steps from 0 (resume continues it).
  virtual EngineStep step(BatchSource& source, int index, std::uint64_t step_seed,
                          std::uint64_t step_number, telemetry::PhaseTimes& times) = 0;
  virtual EvalResult evaluate(BatchSource& test) = 0;
  // The state as save() would write it (a pending deferred ZO update applied first): the first
  // tensor holding an Inf or a NaN, if any. Int8: integers only, always finite. Allocates nothing.
  virtual NonFinite check_finite() = 0;

  // Parameters and optimizer state into a checkpoint (metadata: only engine-specific keys).
  virtual void save(TensorFile& f) const = 0;
  // Resume (parameters and optimizer state of a checkpoint of this same engine).
  virtual void load(const TensorFile& f, const std::string& path) = 0;
  // --init-from: parameters only, from an FP32 or int8 checkpoint (converted as needed).
  virtual void init_from(const TensorFile& f, const std::string& path) = 0;
};

// `isa`: the kernel path of the trainer (a run takes the best one; the bench also times others).
// `ranks`: a data-parallel run's (docs/design.md §15; null: one process); throws zt::Error when
// the config cannot be spread over them.
std::unique_ptr<Engine> make_fp32_engine(const config::ExperimentConfig& cfg, int batch,
                                         int threads, kernels::Isa isa = kernels::best_isa(),
                                         Ranks* ranks = nullptr);
std::unique_ptr<Engine> make_int8_engine(const config::ExperimentConfig& cfg, int batch,
                                         int threads, kernels::Isa isa = kernels::best_isa(),
                                         Ranks* ranks = nullptr);

// Shared by the engines: a tensor of a checkpoint, checked by name, dtype and shape (every
// dimension, not only the element count) and by value: F32 finite, I8 in [−127, 127]. Throws
// zt::Error naming the file and tensor with the expected and found dtype and shape, or the first
// bad element. `non_negative`: F32 values must also be ≥ 0 (variances, Adam's v).
const StoredTensor& checkpoint_tensor(const TensorFile& f, const std::string& name,
                                      const std::string& dtype, const std::vector<int>& shape,
                                      const std::string& path, bool non_negative = false);
// The value checks of checkpoint_tensor alone (e.g. for an optimizer file, named by `path`).
void check_tensor_values(const StoredTensor& t, const std::string& name, const std::string& path,
                         bool non_negative = false);
// The exponent of an int8 weight tensor (`name`, I32 [1]), in the range quantising a finite
// float gives (throws zt::Error naming the file and tensor).
int checkpoint_exponent(const TensorFile& f, const std::string& name, const std::string& path);
// Refuses a tensor of `f` that is not in `known` (the model's names), naming it and `model`.
void refuse_unknown_tensors(const TensorFile& f, const std::vector<std::string>& known,
                            const std::string& model, const std::string& path);
const std::string& checkpoint_meta(const TensorFile& f, const std::string& key,
                                   const std::string& path);
// Whether the n floats at x are all finite (no Inf, no NaN): one vectorisable pass.
bool all_finite(const float* x, std::size_t n);

}  // namespace zt::run
