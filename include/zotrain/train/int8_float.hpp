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
// sign(ℓ+ − ℓ−) of the float losses of the two passes: −1, 0 or +1.
int float_sign(Int8Logits plus, Int8Logits minus, const std::uint8_t* labels, int n, int classes);

}  // namespace zt::train
