// The registries of data sets and architectures: what each is and supports, in one list each,
// read by the config (choices, help, compatibility errors, default batch), the data loading (normalisation, input
// kind), the CLI and the tests. They live in the config layer because the config validates these
// names; the code that builds a network (nn::make_model) or loads a set (run/run_data.cpp)
// selects by the same names.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "zotrain/config/options.hpp"

namespace zt::config {

enum class InputKind {
  kImages,  // 1 × 28 × 28 grey images (IDX files)
  kPoints,  // N × 3 point clouds (ModelNet40 HDF5 layout)
};

struct DatasetInfo {
  Dataset id;           // its position in datasets()
  const char* name;     // data.dataset
  InputKind input;
  float mean, std;      // images: x = (p / 255 − mean) / std (the set's own statistics)
  const char* summary;  // for --help
};

struct ArchInfo {
  Arch id;              // its position in architectures()
  const char* name;     // model.arch
  InputKind input;
  int layers;           // L, its parametric layers (the range of method.partition)
  int fp32_batch;       // train.batch_size 0 = these (the paper's batches)
  int int8_batch;
  const char* summary;  // for --help
  Precisions precisions;  // model.precision it trains in
  bool batchnorm;       // has BatchNorm: no batched probes (zo.batched), whose 2q replicas
                        // would share its batch statistics
};

const std::vector<DatasetInfo>& datasets();  // in Dataset order
const DatasetInfo& dataset(Dataset d);
const DatasetInfo& dataset(std::string_view name);  // throws zt::Error naming the choices
const std::vector<ArchInfo>& architectures();  // in Arch order
const ArchInfo& architecture(Arch a);
const ArchInfo& architecture(std::string_view name);  // throws zt::Error naming the choices

}  // namespace zt::config
