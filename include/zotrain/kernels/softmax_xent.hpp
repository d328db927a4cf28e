// Softmax cross-entropy over a batch. logits [B, K], labels [B] (0..K−1).
// Returns the mean loss (1/B) Σ_b −log softmax(logits_b)[label_b], computed stably
// (max-subtracted, log-sum-exp in double). If dlogits [B, K] is not null it receives
// (softmax − onehot) / B. If correct is not null it receives the number of samples whose
// argmax (first maximum) equals the label. Serial; B·K is small.
#pragma once

#include <cstdint>

namespace zt::kernels {

float softmax_xent_f32(int batch, int classes, const float* logits, const std::uint8_t* labels,
                       float* dlogits, int* correct);
// Each sample's loss: losses[b] = −log softmax(logits_b)[label_b], the terms of the mean above.
void softmax_xent_rows_f32(int batch, int classes, const float* logits,
                           const std::uint8_t* labels, double* losses);

}  // namespace zt::kernels
