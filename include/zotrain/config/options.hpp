// The closed choices of an experiment, as enums. The config parses each choice once, from its
// text (case-insensitive), into these; everything above the config compares enums, never text.
// The text of a value (config files, checkpoints' metadata, metrics) is name(value), from the
// one table per enum below (kEnumText) or, for methods, the zo.* estimators, perturbation sources
// and presets, architectures and data sets, from their registries (config/methods.hpp,
// config/catalogue.hpp), whose order is the enum's and whose entries state what each supports.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

#include "zotrain/core/arch.hpp"
#include "zotrain/core/precision.hpp"

namespace zt::config {

using zt::Precision;                                        // model.precision
enum class Augment { kNone, kRotate, kJitter, kRotateJitter };  // data.augment
enum class BpActivations { kMinus, kAverage };              // method.bp_activations
enum class OptimizerKind { kSgd, kAdam };                   // optimizer.name
enum class MemoryPlan { kLean, kWholeBatch };               // train.memory_plan
enum class Int8Sign { kFloat, kInteger, kIntegerEq12 };     // int8.sign
enum class Int8Input { kShift, kNormalised };               // int8.input
enum class PezoOffset { kSeeded, kStream };                 // zo.pezo_offset
// Registry-backed (their text and help live in the registries):
enum class Method { kFullBp, kFullZo, kElasticZo };         // method.name
using zt::Arch;                                             // model.arch (core/arch.hpp)
enum class Dataset { kMnist, kFashionMnist, kModelNet40 };  // data.dataset
enum class Estimator { kTwoSided, kOneSided, kLayerwise };  // zo.estimator
enum class Perturbation {                                   // zo.perturbation
  kGaussian, kRademacher, kUniform, kXorshift, kPezoPool, kPezoOnTheFly
};
enum class Preset { kMezo, kPezoPool, kPezoOnTheFly, kPrge, kPmt };  // zo.preset

// The config text of each value, in enum order.
template <class E>
inline constexpr std::array<std::string_view, 0> kEnumText{};
template <>
inline constexpr std::array<std::string_view, 2> kEnumText<Precision>{"fp32", "int8"};
template <>
inline constexpr std::array<std::string_view, 4> kEnumText<Augment>{"none", "rotate", "jitter",
                                                                    "rotate_jitter"};
template <>
inline constexpr std::array<std::string_view, 2> kEnumText<BpActivations>{"minus", "average"};
template <>
inline constexpr std::array<std::string_view, 2> kEnumText<OptimizerKind>{"sgd", "adam"};
template <>
inline constexpr std::array<std::string_view, 2> kEnumText<MemoryPlan>{"lean", "whole_batch"};
template <>
inline constexpr std::array<std::string_view, 3> kEnumText<Int8Sign>{"float", "integer", "integer_eq12"};
template <>
inline constexpr std::array<std::string_view, 2> kEnumText<Int8Input>{"shift", "normalised"};
template <>
inline constexpr std::array<std::string_view, 2> kEnumText<PezoOffset>{"seeded", "stream"};

template <class E>
std::span<const std::string_view> choices() {
  static_assert(!kEnumText<E>.empty(), "no kEnumText for this enum");
  return kEnumText<E>;
}
template <class E>
std::string_view name(E e) {
  return choices<E>()[static_cast<std::size_t>(e)];
}
// The value whose text is `text` (exactly, lower case); nullopt when none is.
template <class E>
std::optional<E> parse_choice(std::string_view text) {
  const auto c = choices<E>();
  for (std::size_t i = 0; i < c.size(); ++i)
    if (c[i] == text) return static_cast<E>(i);
  return std::nullopt;
}
// The registries' names (defined with them).
std::string_view name(Method m);
std::string_view name(Arch a);
std::string_view name(Dataset d);
std::string_view name(Estimator e);
std::string_view name(Perturbation p);
std::string_view name(Preset p);

// A set of precisions: where a registry entry applies.
struct Precisions {
  bool fp32 = false, int8 = false;
  constexpr bool has(Precision p) const { return p == Precision::kFp32 ? fp32 : int8; }
};
inline constexpr Precisions kFp32Only{true, false};
inline constexpr Precisions kBothPrecisions{true, true};

// method.partition: C as a number of layers, or one of the paper's named points (relative to
// the network's L parametric layers).
struct Partition {
  enum class Rule {
    kLayers,  // C = layers
    kCls1,    // zo-feat-cls1: C = L − 2 (the last two layers by backprop)
    kCls2,    // zo-feat-cls2: C = L − 1
  };
  Rule rule = Rule::kCls1;
  int layers = 0;
  bool operator==(const Partition&) const = default;
};
inline constexpr std::array<std::string_view, 2> kPartitionNames{"zo-feat-cls1", "zo-feat-cls2"};

}  // namespace zt::config
