// The network factories, one line per architecture (src/nn/architectures.cpp). The config's
// architecture registry (config/catalogue.hpp: input kind, default batches, help) names the
// same architectures in the same order; tests/config/catalogue_test.cpp holds them together.
// A new architecture is one file with its make_* function plus a line here and there.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "zotrain/kernels/isa.hpp"
#include "zotrain/nn/model.hpp"
#include "zotrain/nn/pointnet.hpp"

namespace zt::nn {

struct ArchFactory {
  const char* name;  // model.arch
  // `points` is the per-sample point count of point-cloud networks; others ignore it.
  std::unique_ptr<Model> (*make)(kernels::Isa isa, int points);
};
const std::vector<ArchFactory>& arch_factories();

// Builds a model by architecture name; throws zt::Error naming model.arch and the choices for
// an unknown name.
std::unique_ptr<Model> make_model(std::string_view arch, kernels::Isa isa,
                                  int points = kPointNetDefaultPoints);

}  // namespace zt::nn
