// Softmax cross-entropy, single implementation (B·K is small): per row, max-subtract,
// log-sum-exp and probabilities in double, loss averaged in double.
#include <cmath>
#include <cstddef>

#include "zotrain/core/error.hpp"
#include "zotrain/kernels/softmax_xent.hpp"

namespace zt::kernels {

namespace {

// Row b's loss −log softmax(z)[label] (max-subtracted, log-sum-exp in double), its argmax (the
// first maximum) and its log-sum-exp, for the probabilities.
struct Row {
  double loss, zmax, log_sum;
  int arg;
};
Row row(const float* z, int classes, int label) {
  ZT_CHECK(label < classes);
  int arg = 0;
  for (int k = 1; k < classes; ++k)
    if (z[k] > z[arg]) arg = k;
  const double zmax = z[arg];
  double sum = 0.0;
  for (int k = 0; k < classes; ++k) sum += std::exp(static_cast<double>(z[k]) - zmax);
  const double log_sum = std::log(sum);
  return {log_sum - (static_cast<double>(z[label]) - zmax), zmax, log_sum, arg};
}

}  // namespace

float softmax_xent_f32(int batch, int classes, const float* logits, const std::uint8_t* labels,
                       float* dlogits, int* correct) {
  ZT_CHECK(batch >= 0 && classes > 0);
  double total = 0.0;
  int hits = 0;
  const double inv_b = batch > 0 ? 1.0 / batch : 0.0;
  for (int b = 0; b < batch; ++b) {
    const float* z = logits + static_cast<std::ptrdiff_t>(b) * classes;
    const int label = labels[b];
    const Row r = row(z, classes, label);
    hits += r.arg == label;
    total += r.loss;
    if (dlogits != nullptr) {
      float* g = dlogits + static_cast<std::ptrdiff_t>(b) * classes;
      for (int k = 0; k < classes; ++k) {
        const double p = std::exp(static_cast<double>(z[k]) - r.zmax - r.log_sum);
        g[k] = static_cast<float>((p - (k == label ? 1.0 : 0.0)) * inv_b);
      }
    }
  }
  if (correct != nullptr) *correct = hits;
  return static_cast<float>(total * inv_b);
}

void softmax_xent_rows_f32(int batch, int classes, const float* logits,
                           const std::uint8_t* labels, double* losses) {
  ZT_CHECK(batch >= 0 && classes > 0);
  for (int b = 0; b < batch; ++b)
    losses[b] = row(logits + static_cast<std::ptrdiff_t>(b) * classes, classes, labels[b]).loss;
}

}  // namespace zt::kernels
