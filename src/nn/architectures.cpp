#include "zotrain/nn/architectures.hpp"

#include <string>

#include "zotrain/core/error.hpp"
#include "zotrain/nn/lenet5.hpp"

namespace zt::nn {

const std::vector<ArchFactory>& arch_factories() {
  static const std::vector<ArchFactory> kFactories = {
      {Arch::kLeNet5, [](kernels::Isa isa, int) { return make_lenet5(isa); }},
      {Arch::kPointNet, [](kernels::Isa isa, int points) { return make_pointnet(points, isa); }},
  };
  return kFactories;
}

std::unique_ptr<Model> make_model(Arch arch, kernels::Isa isa, int points) {
  const auto i = static_cast<std::size_t>(arch);
  ZT_CHECK(i < arch_factories().size() && arch_factories()[i].id == arch);
  return arch_factories()[i].make(isa, points);
}

}  // namespace zt::nn
