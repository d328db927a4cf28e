// No heap allocation inside an int8 training step (docs/design.md §5): every buffer a step uses
// is reserved in the Int8Plan's arena before the first step. Each configuration runs its steps
// as the int8 engine does (src/run/int8_engine.cpp: int8_step or int8_layerwise_step through
// the estimator seam), one warm-up step, then counts allocations over three more.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#ifdef ZT_OPENMP
#include <omp.h>
#endif

#include "step_allocations.hpp"
#include "zotrain/core/rng.hpp"
#include "zotrain/kernels/quant.hpp"
#include "zotrain/nn/int8_setup.hpp"
#include "zotrain/nn/lenet5.hpp"
#include "zotrain/nn/pointnet.hpp"
#include "zotrain/train/int8_trainer.hpp"
#include "zotrain/train/int8_zo.hpp"

namespace zt::train {
namespace {

using test::Net;

struct Case {
  std::string name;
  Net model = Net::kLeNet5;
  int partition = 0;  // C; −1: every parametric layer (Full ZO), −2: all but the last two (Cls1)
  bool layerwise = false;
  bool nodes = false;
  int queries = 1;
  bool cache = false;
  std::size_t chunk_elems = kTailChunkElems;
  std::size_t deep_stream_bytes = kDeepStreamBytes;
};

// Steps as the int8 engine runs them: none allocates after the first.
void expect_no_step_allocations(const Case& c) {
  const bool points = c.model == Net::kPointNet;
  const int batch = points ? 4 : 32;
  auto fp32 = test::make_net(c.model, kernels::Isa::kReference);
  auto net = nn::make_int8_net(*fp32, kernels::best_isa());
  nn::init_niti(*net, 5);
  const int L = net->num_parametric();
  const int C = c.partition == -1 ? L : (c.partition == -2 ? L - 2 : c.partition);
  int threads = 1;
#ifdef ZT_OPENMP
  threads = omp_get_max_threads();
#endif
  const Int8TrainerOptions o{.partition = C,
                             .batch_size = batch,
                             .threads = threads,
                             .tail_chunk_elems = c.chunk_elems,
                             .deep_stream_bytes = c.deep_stream_bytes,
                             .layerwise = c.layerwise,
                             .node_perturbation = c.nodes,
                             .queries = c.queries,
                             .cache_direction = c.cache};
  Int8Trainer t(*net, o);
  const auto estimator = make_estimator(c.layerwise ? config::Estimator::kLayerwise : config::Estimator::kTwoSided, c.queries);
  const int classes = net->num_classes();
  const std::size_t in = net->input_shape().numel() * static_cast<std::size_t>(batch);
  std::vector<std::int8_t> x(in);
  std::vector<std::uint8_t> labels(static_cast<std::size_t>(batch));
  SplitMix64 rng(3);
  for (auto& v : x) v = static_cast<std::int8_t>(static_cast<int>(rng.below(129)) - 64);
  for (auto& l : labels)
    l = static_cast<std::uint8_t>(rng.below(static_cast<std::uint64_t>(classes)));
  Int8Hyper h;
  h.zero_threshold = std::uint64_t{1} << 31;
  const int exponent = points ? -6 : kernels::pixel_quant_shift().exponent;
  auto step = [&](std::uint64_t seed) {
    if (c.layerwise)
      int8_layerwise_step(t, *estimator, x.data(), exponent, batch, labels.data(), classes, seed,
                          h, 0.01);
    else
      int8_step(t, *estimator, x.data(), exponent, batch, labels.data(), classes, seed, h,
                {Int8Sign::kFloat});
    t.take_phase_ns();
  };
  test::expect_steps_allocate_nothing(c.name,
                                      [&](int k) { step(100 + static_cast<std::uint64_t>(k)); });
}

TEST(Int8StepAllocations, NoneAfterTheFirstStep) {
  const std::vector<Case> cases = {
      {.name = "LeNet-5 Full BP"},
      {.name = "LeNet-5 Full ZO", .partition = -1},
      {.name = "LeNet-5 ElasticZO Cls1", .partition = -2},
      {.name = "LeNet-5 ElasticZO Cls1 cache_direction", .partition = -2, .cache = true},
      {.name = "LeNet-5 PMT layerwise Full ZO", .partition = -1, .layerwise = true},
      {.name = "LeNet-5 PMT layerwise Full ZO + node perturbation q=2", .partition = -1,
       .layerwise = true, .nodes = true, .queries = 2},
      {.name = "LeNet-5 PMT layerwise Cls1 + node perturbation q=2", .partition = -2,
       .layerwise = true, .nodes = true, .queries = 2},
      {.name = "PointNet lean tail (ZO part)", .model = Net::kPointNet, .partition = 6,
       .chunk_elems = 1024 * 7},
      {.name = "PointNet lean tail (backprop part)", .model = Net::kPointNet, .partition = 3,
       .chunk_elems = 1024 * 7},
      {.name = "PointNet deep streaming", .model = Net::kPointNet, .partition = 3,
       .chunk_elems = 1024 * 7, .deep_stream_bytes = 0},
      {.name = "PointNet deep streaming Full BP", .model = Net::kPointNet, .partition = 0,
       .chunk_elems = 1024 * 7, .deep_stream_bytes = 0},
      {.name = "PointNet PMT layerwise + node perturbation q=2", .model = Net::kPointNet,
       .partition = -1, .layerwise = true, .nodes = true, .queries = 2},
  };
  for (const Case& c : cases) expect_no_step_allocations(c);
}

// Node perturbation's buffers are in the plan: LeNet-5 at batch 256 with fc1, fc2 and fc3
// node-perturbed plans their inputs and outputs and the executor's work space (for fc1, the
// widest: its float node gradient 256 × 120 × 8 bytes and its ξ 256 × 120 bytes, ≈276 KB).
TEST(Int8StepAllocations, NodePerturbationBuffersArePlanned) {
  auto fp32 = nn::make_lenet5(kernels::Isa::kReference);
  auto net = nn::make_int8_net(*fp32, kernels::Isa::kReference);
  Int8TrainerOptions o;
  o.partition = net->num_parametric();
  o.batch_size = 256;
  o.layerwise = true;
  const Int8Trainer weights_only(*net, o);
  o.node_perturbation = true;
  o.queries = 2;
  const Int8Trainer nodes(*net, o);
  std::size_t listed = 0;
  for (const auto& e : nodes.arena().entries()) listed += e.bytes;
  EXPECT_EQ(nodes.planned_bytes(), nodes.arena().planned_bytes() + net->num_weights());
  EXPECT_GE(nodes.planned_bytes(), listed + net->num_weights());
  std::size_t node_bytes = 0;
  for (const auto& e : nodes.arena().entries())
    if (e.name.find("node") != std::string::npos) node_bytes += e.bytes;
  const std::size_t B = 256, fc_in = 784 + 120 + 84, fc_out = 120 + 84 + 10;
  EXPECT_EQ(node_bytes, B * (fc_in + fc_out)              // each block's x̄ and ȳ
                            + B * 120 * (4 + 8 + 1)       // G (int32), its float form, ξ
                            + B * (1 + 5 * 2) * 8         // per-sample losses
                            + 784 * 8);                   // update_nodes_s8's row sums
  EXPECT_GE(nodes.planned_bytes() - weights_only.planned_bytes(), node_bytes);
}

}  // namespace
}  // namespace zt::train
