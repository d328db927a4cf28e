// Floating-point views of int8 logits: reporting (loss, accuracy) and the paper's INT8 sign
// variant, which dequantises both passes' logits and compares float losses (docs/design.md §6).
// Kept out of the integer-only training code.
#pragma once

#include <cstdint>

#include "zotrain/train/int8_trainer.hpp"

namespace zt::train {

// Σ over the n samples of the cross-entropy of softmax(v · 2^e) (double, log-sum-exp).
double int8_loss_sum(Int8Logits logits, const std::uint8_t* labels, int n, int classes);
// Samples whose first maximal logit is the label.
int int8_correct(Int8Logits logits, const std::uint8_t* labels, int n, int classes);
// ℓ+ − ℓ−, the difference of the two passes' float loss sums (its sign is the paper's INT8 g).
double float_loss_difference(Int8Logits plus, Int8Logits minus, const std::uint8_t* labels, int n,
                             int classes);

}  // namespace zt::train
