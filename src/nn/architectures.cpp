#include "zotrain/nn/architectures.hpp"

#include <string>

#include "zotrain/core/error.hpp"
#include "zotrain/nn/lenet5.hpp"

namespace zt::nn {

const std::vector<ArchFactory>& arch_factories() {
  static const std::vector<ArchFactory> kFactories = {
      {"lenet5", [](kernels::Isa isa, int) { return make_lenet5(isa); }},
      {"pointnet", [](kernels::Isa isa, int points) { return make_pointnet(points, isa); }},
  };
  return kFactories;
}

std::unique_ptr<Model> make_model(std::string_view arch, kernels::Isa isa, int points) {
  std::string names;
  for (const ArchFactory& f : arch_factories()) {
    if (arch == f.name) return f.make(isa, points);
    names += (names.empty() ? "" : ", ") + std::string(f.name);
  }
  throw Error("model.arch: unknown architecture '" + std::string(arch) + "' (expected one of " +
              names + ")");
}

}  // namespace zt::nn
