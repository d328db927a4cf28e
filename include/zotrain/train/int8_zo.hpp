// Int8 training steps through the ZO estimator seam (train/zo_estimator.hpp), used by the int8
// engine and by `zotrain bench`, so both time the same step. Two executors:
//   int8_step            ElasticZO-INT8: perturbs θ_{1..C} of an Int8Trainer by the sparse
//                        uniform int8 z, probes with its forward passes, and estimates g as a
//                        sign — the integer-only one (INT8*, Eqs. 9–12) or the float comparison
//                        of dequantised losses (the paper's INT8), both computed so that their
//                        agreement can be logged.
//   int8_layerwise_step  Poor Man's Training on int8 (docs/design.md §6.1).
// Floating point appears only in the losses and the update coefficients computed here
// (train/int8_float.hpp); the trainer stays integer-only.
#pragma once

#include <cstdint>

#include "zotrain/config/options.hpp"
#include "zotrain/train/int8_trainer.hpp"
#include "zotrain/train/zo_estimator.hpp"

namespace zt::train {

using config::Int8Sign;  // int8.sign (config/options.hpp)

// How int8_step turns the two passes into g: the sign it uses (int8.sign) and, for the float
// sign, the dead zone (int8.dead_zone): g = 0 when |ℓ+ − ℓ−| / n ≤ dead_zone.
struct Int8SignRule {
  Int8Sign kind = Int8Sign::kFloat;
  double dead_zone = 0;
};

struct Int8StepResult {
  int g = 0;               // the sign the update used (0 for NITI, C = 0)
  bool sign_agree = false;       // the integer (fixed-point) and float signs agreed (ZO only)
  bool sign_agree_eq12 = false;  // Eq. 12 as written and the float sign agreed (ZO only)
  // int8_layerwise_step: the clean pass's mean loss and correct samples (−1: not measured).
  double loss = -1;
  int correct = -1;
};

// x [n, input] int8 with exponent `exponent`, labels [n]. The estimator must have one query:
// the int8 update merges the restore of the perturbation into a rounded update, which has no
// exact inverse to restore earlier queries with.
Int8StepResult int8_step(Int8Trainer& trainer, const ZoEstimator& estimator,
                         const std::int8_t* x, int exponent, int n, const std::uint8_t* labels,
                         int classes, std::uint64_t step_seed, const Int8Hyper& h,
                         Int8SignRule sign);

// Poor Man's Training on int8 (zo.estimator layerwise, any number of queries): each ZO layer
// probed alone by Rademacher ±1 against one clean pass, every layer then stepped by its
// quantisation-aware share of the global learning rate lr (η / s_b², s_b = 2^{e_b}) times the
// estimator's gradient-norm scaling. Float losses of the dequantised logits, as the paper's
// INT8; the weights stay int8 and the update kernel integer-only (src/train/int8_zo.cpp).
Int8StepResult int8_layerwise_step(Int8Trainer& trainer, const ZoEstimator& estimator,
                                   const std::int8_t* x, int exponent, int n,
                                   const std::uint8_t* labels, int classes,
                                   std::uint64_t step_seed, const Int8Hyper& h, double lr);

}  // namespace zt::train
