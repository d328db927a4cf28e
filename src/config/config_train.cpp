// The sections of how training runs (src/config/schema.hpp says what lives where):
// optimizer.*, train.*, int8.*, output.*: their keys, the rules of the keys that can have no
// effect, and the int8 schedules resolved per architecture.
#include "schema.hpp"
#include "zotrain/config/catalogue.hpp"
#include "zotrain/config/methods.hpp"

namespace zt::config {
namespace detail {
namespace {

// Learning rates: above kUsualLr a warning, above kMaxLr an error. Poor Man's Training's int8
// steps (zo.preset pmt) use 10 to 30, FP32 SGD and Adam below 1. Beyond kMaxLr no step is a
// training step: LeNet-5's activations overflow float after one (up to it, the divergence guard
// stops a run whose loss becomes NaN, exit 3); 1e308 would be inf as a float.
constexpr double kUsualLr = 100, kMaxLr = 1e10;

bool int8_sign_step(const ExperimentConfig& c) { return int8(c) && !int8_pmt(c); }
bool no_float_sign(const ExperimentConfig& c) {
  return int8_pmt(c) || no_zo(c) || c.int8.sign != Int8Sign::kFloat;
}

std::vector<Key> optimizer_keys() {
  return {
      {"optimizer.name", Type::kEnum, ZT_ENUM(optimizer.name), {}, names_of<OptimizerKind>(),
       "optimizer of the backprop part"},
      {"optimizer.lr", Type::kNumber, ZT_FIELD(optimizer.lr), closed(0, kMaxLr), {},
       "learning rate of the ZO part (and of the BP part unless bp_lr is set); auto = the "
       "method's default (docs/guide/defaults.md); 0 freezes those layers; above 100 a warning "
       "(zo.preset pmt's int8 steps use 10 to 30)", "auto", closed(0, kUsualLr)},
      {"optimizer.bp_lr", Type::kNumber, ZT_FIELD(optimizer.bp_lr), closed(0, kMaxLr), {},
       "learning rate of the backprop part; null = optimizer.lr when that is set, else the "
       "optimizer's default; above 100 a warning", "null", closed(0, kUsualLr)},
      {"optimizer.decay.factor", Type::kNumber, ZT_FIELD(optimizer.decay.factor),
       Range{.lo = 0, .hi = 1, .lo_open = true}, {}, "learning-rate decay factor"},
      {"optimizer.decay.every_epochs", Type::kInt, ZT_FIELD(optimizer.decay.every_epochs),
       count_from(0), {}, "multiply the learning rates by factor every N epochs (0 = never)"},
  };
}

std::vector<InertRule> optimizer_rules() {
  return {
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
  };
}

}  // namespace

const Section& optimizer_section() {
  static const Section s{optimizer_keys(), optimizer_rules()};
  return s;
}

namespace {

std::vector<Key> train_keys() {
  return {
      {"train.epochs", Type::kInt, ZT_FIELD(train.epochs), count_from(1), {}, "training epochs"},
      {"train.batch_size", Type::kInt, ZT_FIELD(train.batch_size), closed(1, kMaxBatchSize), {},
       "minibatch size (auto = the paper's: 32; 256 for int8 LeNet-5)", "auto"},
      {"train.threads", Type::kInt, ZT_FIELD(train.threads), closed(1, kMaxThreads), {},
       "worker threads (auto = all cores)", "auto"},
      {"train.max_steps", Type::kInt, ZT_FIELD(train.max_steps), count_from(1), {},
       "stop after this many steps in total (null = no limit)", "null"},
      {"train.eval_every", Type::kInt, ZT_FIELD(train.eval_every), count_from(1), {},
       "evaluate on the test set every N epochs (and at the end)"},
      {"train.eval_at_start", Type::kBool, ZT_FIELD(train.eval_at_start), {}, {},
       "also evaluate before the first step (an epoch-0 record in metrics.jsonl)"},
      {"train.log_every", Type::kInt, ZT_FIELD(train.log_every), count_from(1), {},
       "write a record every N steps to steps.jsonl (step, epoch, loss, g, clipped, learning "
       "rates, samples/s); null = none", "null"},
      {"train.memory_plan", Type::kEnum, ZT_ENUM(train.memory_plan), {}, names_of<MemoryPlan>(),
       "fp32 buffers: lean (PointNet's per-point stack streamed in chunks of points, its widest "
       "layer recomputed for backprop; same results) | whole_batch (keep every activation: "
       "more memory, Full BP faster)"},
      {"train.memory_limit", Type::kBytes, ZT_FIELD(train.memory_limit),
       Range{.lo = 1, .hi = 9e18, .hi_open = true}, {},
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
      {"int8.dead_zone", Type::kNumberSchedule, ZT_FIELD(int8.dead_zone), closed(0, 1000), {},
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
      {"output.checkpoint_every", Type::kInt, ZT_FIELD(output.checkpoint_every), count_from(0), {},
       "write a checkpoint every N epochs (0 = only at the end)"},
      {"output.checkpoint_minutes", Type::kNumber, ZT_FIELD(output.checkpoint_minutes), closed(0, 525600), {},
       "also write a checkpoint, mid-epoch if need be, once this many minutes of wall time have "
       "passed since the last one, so a power cut loses at most that (0 = off; at most a year)"},
  };
}

std::vector<InertRule> train_rules() {
  return {
      {"int8.", false, fp32, "int8 settings apply with model.precision int8"},
      {"int8.r_max", false, int8_pmt, "zo.estimator layerwise perturbs int8 weights by +-1"},
      {"int8.p_zero", false, int8_pmt, "zo.estimator layerwise perturbs every weight of a layer"},
      {"int8.b_zo", false, int8_pmt, "zo.estimator layerwise steps by optimizer.lr"},
      {"int8.sign", false, int8_pmt, "zo.estimator layerwise uses the loss difference itself"},
      {"int8.dead_zone", false, no_float_sign,
       "it applies to the float sign (int8.sign float) of a ZO step"},
      {"train.memory_plan", false, int8, "the int8 trainer plans its own buffers"},
      {"int8.input", false, points, "it quantises image pixels; point coordinates are fixed-point"},
  };
}

}  // namespace

const Section& train_section() {
  static const Section s{train_keys(), train_rules()};
  return s;
}

}  // namespace detail

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

}  // namespace zt::config
