// What the FP32 trainer tests share.
#pragma once

#include "zotrain/train/fp32_trainer.hpp"

namespace zt::test {

// The options of a test run: partition C, batch size, ε, gradient clip and queries q; the rest
// at their defaults.
inline train::Fp32TrainerOptions zo_options(int partition, int batch, float eps, float grad_clip, int queries) {
  return {.partition = partition, .batch_size = batch, .eps = eps, .grad_clip = grad_clip, .queries = queries,
          .pezo = {}};
}

}  // namespace zt::test
