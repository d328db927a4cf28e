#include "zotrain/nn/pointnet.hpp"

#include <string>

#include "zotrain/core/error.hpp"
#include "zotrain/nn/activation.hpp"
#include "zotrain/nn/batchnorm.hpp"
#include "zotrain/nn/linear.hpp"

namespace zt::nn {

std::unique_ptr<Model> make_pointnet(int points, kernels::Isa isa) {
  if (points < 1)
    throw Error("model.points: expected at least 1 point, got " + std::to_string(points));
  constexpr int kWidths[6] = {3, 64, 64, 64, 128, 1024};
  std::vector<std::unique_ptr<Layer>> l;
  for (int k = 1; k <= 5; ++k) {
    const std::string mlp = "mlp" + std::to_string(k);
    l.push_back(std::make_unique<PointLinear>(mlp, kWidths[k - 1], kWidths[k], false, isa));
    l.push_back(std::make_unique<BatchNorm>(mlp + ".bn", kWidths[k]));
    l.push_back(std::make_unique<Relu>("relu" + std::to_string(k), isa));
  }
  l.push_back(std::make_unique<MaxPoolPoints>("pool"));
  l.push_back(std::make_unique<Linear>("fc1", 1024, 512, isa));
  l.push_back(std::make_unique<Relu>("relu6", isa));
  l.push_back(std::make_unique<Linear>("fc2", 512, 256, isa));
  l.push_back(std::make_unique<Relu>("relu7", isa));
  l.push_back(std::make_unique<Linear>("fc3", 256, kPointNetClasses, isa));
  return std::make_unique<Model>("pointnet", Shape{{points, 3}}, std::move(l));
}

}  // namespace zt::nn
