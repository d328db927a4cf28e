// Every seed derivation of a run, named, in one place. A run has one seed (config `seed`); each
// consumer gets its own key from it through a fixed salt, so consumers never share a random
// stream and adding one does not shift the others. Changing any formula here changes results
// (the weights-digest tests, tests/cli/digest_cases.cmake, notice).
//
//   run seed ─┬─ data(seed): the data seed, which the batchers derive from
//             │     └─ epoch_order(data seed, e): the shuffle of epoch e
//             │           └─ point_samples(epoch key): per-sample point subsets, rotation, jitter
//             ├─ layer_init(seed, i): FP32 initialisation of layer i (PyTorch's defaults)
//             ├─ int8_init(seed): NITI initialisation of the int8 network
//             └─ step(seed, t): training step t (global step count), from which
//                   ├─ FP32: the Gaussian z of query q: kernels/perturb.hpp, stream
//                   │    fp32_perturbation_stream(q)
//                   ├─ int8_perturbation(step seed, q): the sparse int8 perturbation's key
//                   │    (and, with kRademacherStream, Poor Man's Training's ξ of query q)
//                   ├─ int8_update_rounding(step seed): the StoShift words of its update
//                   └─ int8_loss_rounding(step seed): the StoShift words of the int8 loss error
//   synthetic point-cloud seed (--synthetic-seed) ── synthetic_sample(seed, split, index)
//
// hash_key(key, stream) streams of the int8 kernels (core/rng.hpp's hash32 words):
// kLossRoundingStream, kPerturbKeepStream, kPerturbValueStream, kRademacherStream.
// The Gaussian generator's own key schedule (seed, stream, pair index → hash keys) is part of
// its definition and lives with it (src/kernels/perturb/perturb_internal.hpp).
#pragma once

#include <cstdint>

#include "zotrain/core/rng.hpp"

namespace zt::seeds {

inline std::uint64_t data(std::uint64_t seed) { return mix64(seed ^ 0xda7a5eedULL); }

inline std::uint64_t layer_init(std::uint64_t seed, std::uint64_t layer) {
  return mix64(seed ^ mix64(0x1417 + layer));
}

inline std::uint64_t int8_init(std::uint64_t seed) { return mix64(seed ^ 0x1ae7a11cULL); }
// PeZO's pool (zo.perturbation pezo_pool), drawn once per run.
inline std::uint64_t pezo_pool(std::uint64_t seed) { return mix64(seed ^ 0x9e20900fULL); }

// The key of epoch `epoch`'s order. Only the low 32 bits of the epoch enter (as always).
inline std::uint64_t epoch_order(std::uint64_t seed, int epoch) {
  return mix64(mix64(seed) ^ static_cast<std::uint64_t>(static_cast<std::uint32_t>(epoch)));
}

inline std::uint64_t step(std::uint64_t seed, std::int64_t global_step) {
  return mix64(seed ^ mix64(0x5eed0000ULL + static_cast<std::uint64_t>(global_step)));
}

// The Gaussian perturbation stream of FP32 ZO (kernels/perturb.hpp's `stream` argument) of
// query q of a step (train/zo_estimator.hpp): kFp32Perturbation + q.
inline constexpr std::uint64_t kFp32Perturbation = 0;
inline std::uint64_t fp32_perturbation_stream(int query) {
  return kFp32Perturbation + static_cast<std::uint64_t>(query);
}

// The node perturbation of FP32 ZO block b (a layer's outputs, per sample) for query q: a
// stream of its own above the weight perturbations'.
inline std::uint64_t fp32_node_stream(int block, int query) {
  return (std::uint64_t{1} << 32) + (static_cast<std::uint64_t>(block) << 16) +
         static_cast<std::uint64_t>(query);
}

// The key of the sparse int8 perturbation of query q of a step.
inline std::uint64_t int8_perturbation(std::uint64_t step_seed, int query = 0) {
  const std::uint64_t key = mix64(step_seed ^ 0x7a0a7a0a5eedULL);
  return query == 0 ? key : mix64(key + static_cast<std::uint64_t>(query));
}

inline std::uint64_t int8_loss_rounding(std::uint64_t step_seed) {
  return mix64(step_seed ^ 0x10551055ULL);
}

// Poor Man's Training on int8: the node perturbation ξ of block b, query q (element n·M + k:
// sample n, output k), above the weight perturbations' keys.
inline std::uint64_t int8_node_perturbation(std::uint64_t step_seed, int block, int query) {
  return mix64(int8_perturbation(step_seed, 0) ^
               mix64(0x6e0de0000ULL + (static_cast<std::uint64_t>(block) << 16) +
                     static_cast<std::uint64_t>(query)));
}

// Poor Man's Training on int8: the stochastic rounding of a step's layer updates (its ξ of
// query q is drawn from int8_perturbation(step seed, q) with kRademacherStream).
inline std::uint64_t int8_update_rounding(std::uint64_t step_seed) {
  return mix64(step_seed ^ 0x2a2d0a2d5eedULL);
}

// hash_key streams of the int8 kernels.
inline constexpr std::uint64_t kLossRoundingStream = 0;  // StoShift words of the loss error
inline constexpr std::uint64_t kPerturbKeepStream = 1;   // the keep bit m of z = m·u
inline constexpr std::uint64_t kPerturbValueStream = 2;  // the value u of z = m·u
inline constexpr std::uint64_t kRademacherStream = 3;    // Poor Man's Training's ξ = ±1

// Point clouds: per-sample generators (one per purpose) are keyed off the epoch key with this
// salt, separate from the shuffle, which uses the epoch key itself.
inline std::uint64_t point_samples(std::uint64_t epoch_key) {
  return mix64(epoch_key ^ 0x6a09e667f3bcc909ULL);
}

// The synthetic point-cloud set: sample `index` of the train or test split.
inline std::uint64_t synthetic_sample(std::uint64_t seed, bool train, std::uint64_t index) {
  return mix64(mix64(seed ^ (train ? 0x3c6ef372fe94f82bULL : 0xa54ff53a5f1d36f1ULL)) + index);
}

}  // namespace zt::seeds
