// The paper's memory figures (docs/design.md §7) computed from LeNet-5's layer shapes.
#include <gtest/gtest.h>

#include "zotrain/nn/int8_setup.hpp"
#include "zotrain/nn/lenet5.hpp"
#include "zotrain/nn/pointnet.hpp"
#include "zotrain/telemetry/memory.hpp"

namespace zt::telemetry {
namespace {

std::vector<LayerFootprint> lenet(Precision p) {
  auto model = nn::make_lenet5(kernels::Isa::kReference);
  if (p == Precision::kInt8)  // the int8 network zotrain trains (NITI: no biases)
    return nn::make_int8_net(*model, kernels::Isa::kReference)->describe().footprint();
  return model->describe().footprint();
}

std::size_t total(Precision p, int batch, int c, bool adam = false) {
  return paper_memory(lenet(p), batch, c, adam, p).total;
}

TEST(PaperMemory, Fp32LeNet5) {
  const auto P = Precision::kFp32;
  EXPECT_EQ(total(P, 32, 5), 2742568u);    // Full ZO, 2.6 MB
  EXPECT_EQ(total(P, 256, 5), 18922536u);  // 18.0 MB
  EXPECT_EQ(total(P, 32, 0), 2u * 2742568u);  // Full BP = twice
  EXPECT_EQ(total(P, 256, 0), 2u * 18922536u);
  EXPECT_EQ(total(P, 32, 4) - total(P, 32, 5), 4680u);    // Cls2 overhead
  EXPECT_EQ(total(P, 256, 4) - total(P, 256, 5), 13640u);
  EXPECT_EQ(total(P, 32, 3) - total(P, 32, 5), 66840u);   // Cls1 overhead
  EXPECT_EQ(total(P, 256, 3) - total(P, 256, 5), 226328u);
}

TEST(PaperMemory, AdamAddsTwiceTheGradients) {
  const auto m = paper_memory(lenet(Precision::kFp32), 32, 0, true, Precision::kFp32);
  EXPECT_EQ(m.optimizer_state, 2 * m.grads);
  EXPECT_EQ(m.total, 2u * 2742568u + 2 * 107786u * 4);
  EXPECT_EQ(paper_memory(lenet(Precision::kFp32), 32, 5, true, Precision::kFp32).optimizer_state, 0u);
}

TEST(PaperMemory, Int8LeNet5) {
  const auto P = Precision::kInt8;
  EXPECT_EQ(total(P, 32, 5), 1716318u);
  EXPECT_EQ(total(P, 256, 5), 12977694u);
  EXPECT_EQ(total(P, 32, 0), 3108916u);
  EXPECT_EQ(total(P, 256, 0), 20354228u);
  EXPECT_EQ(total(P, 32, 4) - total(P, 32, 5), 4520u);
  EXPECT_EQ(total(P, 256, 4) - total(P, 256, 5), 6760u);
  EXPECT_EQ(total(P, 32, 3) - total(P, 32, 5), 71048u);
  EXPECT_EQ(total(P, 256, 3) - total(P, 256, 5), 186184u);
}

TEST(PaperMemory, Int8BreakdownNamesTheInt32Buffers) {
  const auto m = paper_memory(lenet(Precision::kInt8), 32, 3, false, Precision::kInt8);
  std::size_t int32 = 0;
  for (const auto& [name, bytes] : m.breakdown)
    if (name.ends_with("_int32")) int32 += bytes;
  EXPECT_EQ(int32, m.int32_buffers);
  EXPECT_GT(m.int32_buffers, 0u);
  EXPECT_EQ(m.params, 107550u);  // int8 weights, 1 byte each
}

TEST(PaperMemory, ErrorsOfTheBackpropSegment) {
  // Cls1: fc2, relu, fc3 = 178 per sample; Cls2: fc3 = 10 per sample (FP32: 4 bytes).
  EXPECT_EQ(paper_memory(lenet(Precision::kFp32), 1, 3, false, Precision::kFp32).errors, 178u * 4);
  EXPECT_EQ(paper_memory(lenet(Precision::kFp32), 1, 4, false, Precision::kFp32).errors, 10u * 4);
}

// PointNet FP32, B = 32, N = 1024 (docs/design.md §7): every linear, BatchNorm, ReLU and the
// max-pool has its own output buffer; BN's γ, β count in θ_l (and g when θ_l is backpropagated).
std::size_t pointnet_total(int c, int batch = 32) {
  return paper_memory(nn::make_pointnet(1024, kernels::Isa::kReference)->describe().footprint(), batch, c,
                      false, Precision::kFp32)
      .total;
}

TEST(PaperMemory, Fp32PointNet) {
  EXPECT_EQ(pointnet_total(8), 532082080u);                      // Full ZO
  EXPECT_EQ(pointnet_total(7) - pointnet_total(8), 46240u);      // Cls2 overhead
  EXPECT_EQ(pointnet_total(6) - pointnet_total(8), 637088u);     // Cls1 overhead
}

TEST(PaperMemory, PointNetBatchNormInThetaAndErrors) {
  const auto fp = nn::make_pointnet(1024, kernels::Isa::kReference)->describe().footprint();
  // C = 4: θ_5 (mlp5 + its BN) onwards is backpropagated.
  const auto m = paper_memory(fp, 1, 4, false, Precision::kFp32);
  const std::size_t theta5 = 128 * 1024 + 2 * 1024;
  const std::size_t head = 1024 * 512 + 512 + 512 * 256 + 256 + 256 * 40 + 40;
  EXPECT_EQ(m.grads, (theta5 + head) * 4);
  // e_l: mlp5, mlp5.bn, relu5 ([1024, 1024] each), pool, fc1, relu6, fc2, relu7, fc3.
  EXPECT_EQ(m.errors, (3 * 1024 * 1024 + 1024 + 512 + 512 + 256 + 256 + 40) * 4u);
  EXPECT_EQ(m.params, 816744u * 4);
  const auto bp = paper_memory(fp, 1, 0, false, Precision::kFp32);  // Full BP: g = θ
  EXPECT_EQ(bp.grads, bp.params);
  EXPECT_EQ(bp.errors, bp.activations);
}

}  // namespace
}  // namespace zt::telemetry
