#include "zotrain/nn/lenet5.hpp"

#include "zotrain/core/error.hpp"
#include "zotrain/nn/activation.hpp"
#include "zotrain/nn/conv2d.hpp"
#include "zotrain/nn/linear.hpp"

namespace zt::nn {

std::unique_ptr<Model> make_lenet5(kernels::Isa isa) {
  std::vector<std::unique_ptr<Layer>> l;
  l.push_back(std::make_unique<Conv2d>("conv1", 1, 6, 5, 2, isa));
  l.push_back(std::make_unique<Relu>("relu1", isa));
  l.push_back(std::make_unique<MaxPool2x2>("pool1", isa));
  l.push_back(std::make_unique<Conv2d>("conv2", 6, 16, 5, 2, isa));
  l.push_back(std::make_unique<Relu>("relu2", isa));
  l.push_back(std::make_unique<MaxPool2x2>("pool2", isa));
  l.push_back(std::make_unique<Linear>("fc1", 16 * 7 * 7, 120, isa));
  l.push_back(std::make_unique<Relu>("relu3", isa));
  l.push_back(std::make_unique<Linear>("fc2", 120, 84, isa));
  l.push_back(std::make_unique<Relu>("relu4", isa));
  l.push_back(std::make_unique<Linear>("fc3", 84, 10, isa));
  return std::make_unique<Model>("lenet5", Shape{{1, 28, 28}}, std::move(l));
}

}  // namespace zt::nn
