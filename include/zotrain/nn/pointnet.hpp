// PointNet as docs/design.md §2 (no T-Nets), input [N, 3]: five shared per-point linear layers
// 3→64→64→64→128→1024 without bias, each followed by BatchNorm and ReLU; max-pool over points
// (→1024); head fc1 1024→512, ReLU, fc2 512→256, ReLU, fc3 256→40 with bias. 816,744 FP32
// parameters. θ_1..θ_5 are the point layers each with its BatchNorm (γ, β), θ_6..θ_8 the head:
// L = 8. Layer names: mlp1, mlp1.bn, relu1, …, mlp5, mlp5.bn, relu5, pool, fc1, relu6, fc2,
// relu7, fc3.
#pragma once

#include <memory>

#include "zotrain/kernels/isa.hpp"
#include "zotrain/nn/model.hpp"

namespace zt::nn {

inline constexpr int kPointNetDefaultPoints = 1024;
inline constexpr int kPointNetClasses = 40;

// points ≥ 1 per sample.
std::unique_ptr<Model> make_pointnet(int points, kernels::Isa isa);

}  // namespace zt::nn
