#include "zotrain/config/catalogue.hpp"

#include <string>

#include "registry.hpp"

namespace zt::config {
using detail::find_named;

const std::vector<DatasetInfo>& datasets() {
  static const std::vector<DatasetInfo> kDatasets = {
      {Dataset::kMnist, "mnist", InputKind::kImages, 0.1307f, 0.3081f, "MNIST digits (IDX files)"},
      {Dataset::kFashionMnist, "fashion_mnist", InputKind::kImages, 0.2860f, 0.3530f, "Fashion-MNIST (IDX files)"},
      {Dataset::kModelNet40, "modelnet40", InputKind::kPoints, 0.0f, 1.0f,
       "ModelNet40 point clouds (HDF5 ply_data_*.h5, e.g. the synthetic set from "
       "--make-synthetic-modelnet)"},
  };
  return kDatasets;
}

const DatasetInfo& dataset(Dataset d) { return datasets()[static_cast<std::size_t>(d)]; }
std::string_view name(Dataset d) { return dataset(d).name; }
const DatasetInfo& dataset(std::string_view name) { return find_named(datasets(), name, "data.dataset"); }

const std::vector<ArchInfo>& architectures() {
  // int8 PointNet stays at 32: at 256 it would need 8x the activation memory of a 512 MB
  // board's budget.
  static const std::vector<ArchInfo> kArchs = {
      {Arch::kLeNet5, "lenet5", InputKind::kImages, 5, 32, 256, "LeNet-5 (images)", kBothPrecisions,
       false},
      {Arch::kPointNet, "pointnet", InputKind::kPoints, 8, 32, 32, "PointNet (point clouds; data.points per sample)",
       kBothPrecisions, true},
  };
  return kArchs;
}

const ArchInfo& architecture(Arch a) { return architectures()[static_cast<std::size_t>(a)]; }
std::string_view name(Arch a) { return architecture(a).name; }

const ArchInfo& architecture(std::string_view name) {
  return find_named(architectures(), name, "model.arch");
}

}  // namespace zt::config
