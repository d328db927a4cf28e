#include "zotrain/train/int8_float.hpp"

#include <algorithm>
#include <cmath>

namespace zt::train {

double int8_loss_sum(Int8Logits logits, const std::uint8_t* labels, int n, int classes) {
  const double scale = std::ldexp(1.0, logits.exponent);
  double total = 0;
  for (int b = 0; b < n; ++b) {
    const std::int8_t* v = logits.values + static_cast<std::ptrdiff_t>(b) * classes;
    const int m = *std::max_element(v, v + classes);
    double s = 0;
    for (int j = 0; j < classes; ++j) s += std::exp((v[j] - m) * scale);
    total += std::log(s) - (v[labels[b]] - m) * scale;
  }
  return total;
}

int int8_correct(Int8Logits logits, const std::uint8_t* labels, int n, int classes) {
  int correct = 0;
  for (int b = 0; b < n; ++b) {
    const std::int8_t* v = logits.values + static_cast<std::ptrdiff_t>(b) * classes;
    correct += (std::max_element(v, v + classes) - v) == labels[b] ? 1 : 0;
  }
  return correct;
}

double float_loss_difference(Int8Logits plus, Int8Logits minus, const std::uint8_t* labels, int n,
                             int classes) {
  return int8_loss_sum(plus, labels, n, classes) - int8_loss_sum(minus, labels, n, classes);
}

}  // namespace zt::train
