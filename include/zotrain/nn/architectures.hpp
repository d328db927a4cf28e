// The network factories, one line per architecture (src/nn/architectures.cpp), selected by the
// enum (core/arch.hpp). The config's architecture registry (config/catalogue.hpp: its text,
// input kind, default batches, capabilities, help) lists the same architectures in the same
// order; tests/config/catalogue_test.cpp holds them together. A new architecture is one file
// with its make_* function, an enum value, a line here and an entry there.
#pragma once

#include <memory>
#include <vector>

#include "zotrain/core/arch.hpp"
#include "zotrain/kernels/isa.hpp"
#include "zotrain/nn/model.hpp"
#include "zotrain/nn/pointnet.hpp"

namespace zt::nn {

struct ArchFactory {
  Arch id;  // its position in arch_factories()
  // `points` is the per-sample point count of point-cloud networks; others ignore it.
  std::unique_ptr<Model> (*make)(kernels::Isa isa, int points);
};
const std::vector<ArchFactory>& arch_factories();  // in Arch order

std::unique_ptr<Model> make_model(Arch arch, kernels::Isa isa, int points = kPointNetDefaultPoints);

}  // namespace zt::nn
