// No heap allocation inside a training step: after a warm-up step, further steps of the FP32
// trainer allocate nothing, in every configuration whose buffers the plan must hold (replicas,
// the direction cache, node perturbation, the lean plan, both activation sets, Adam).
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../support.hpp"
#include "step_allocations.hpp"
#include "zotrain/nn/lenet5.hpp"
#include "zotrain/nn/pointnet.hpp"
#include "zotrain/train/fp32_trainer.hpp"

namespace zt::train {
namespace {

using test::Net;

struct Fp32Case {
  std::string name;
  Net net = Net::kLeNet5;
  Fp32TrainerOptions o;
};

constexpr int kBatch = 8;

void expect_no_step_allocations(const Fp32Case& c) {
  auto model = test::make_net(c.net, kernels::best_isa());
  model->init(3);
  Fp32Trainer t(*model, c.o);
  const test::LabelledBatch b =
      test::random_labelled_batch(kBatch, model->input_floats(), model->num_classes(), 11);
  telemetry::PhaseTimes times;
  test::expect_steps_allocate_nothing(c.name, [&](int k) {
    t.step(b.x.data(), b.y.data(), kBatch, 100 + static_cast<std::uint64_t>(k), 1e-3f, 0.01f,
           times);
  });
}

Fp32TrainerOptions base(int partition) {
  Fp32TrainerOptions o;
  o.partition = partition;
  o.batch_size = kBatch;
  return o;
}

std::vector<Fp32Case> fp32_cases() {
  std::vector<Fp32Case> cases;
  const auto add = [&](std::string name, Net net, Fp32TrainerOptions o) {
    cases.push_back({std::move(name), net, o});
  };
  add("LeNet-5 Full BP", Net::kLeNet5, base(0));
  add("LeNet-5 Full ZO", Net::kLeNet5, base(5));
  add("LeNet-5 ElasticZO C=2", Net::kLeNet5, base(2));
  {
    Fp32TrainerOptions o = base(2);
    o.optimizer = OptimizerKind::kAdam;
    add("LeNet-5 ElasticZO C=2 Adam", Net::kLeNet5, o);
  }
  {
    Fp32TrainerOptions o = base(2);
    o.bp_activations = BpActivations::kAverage;
    add("LeNet-5 ElasticZO C=2 bp_activations average", Net::kLeNet5, o);
  }
  add("PointNet lean, ZO stack C=6", Net::kPointNet, base(6));
  add("PointNet lean, backprop into the stack C=2", Net::kPointNet, base(2));
  {
    Fp32TrainerOptions o = base(4);
    o.batched = true;
    o.queries = 2;
    add("LeNet-5 ElasticZO C=4 batched probes q=2", Net::kLeNet5, o);
  }
  {
    Fp32TrainerOptions o = base(4);
    o.cache_direction = o.defer_zo_update = true;
    add("LeNet-5 ElasticZO C=4 cache_direction + defer_zo_update", Net::kLeNet5, o);
  }
  {
    Fp32TrainerOptions o = base(4);
    o.estimator = config::Estimator::kOneSided;
    o.queries = 2;
    add("LeNet-5 ElasticZO C=4 one_sided q=2", Net::kLeNet5, o);
  }
  {
    Fp32TrainerOptions o = base(4);
    o.estimator = config::Estimator::kLayerwise;
    o.queries = 2;
    add("LeNet-5 ElasticZO C=4 layerwise q=2", Net::kLeNet5, o);
  }
  {
    Fp32TrainerOptions o = base(4);
    o.estimator = config::Estimator::kLayerwise;
    o.queries = 2;
    o.cache_direction = o.defer_zo_update = true;
    add("LeNet-5 ElasticZO C=4 layerwise q=2 cache_direction", Net::kLeNet5, o);
  }
  {
    Fp32TrainerOptions o = base(5);
    o.estimator = config::Estimator::kLayerwise;
    o.queries = 2;
    o.node_perturbation = true;
    add("LeNet-5 Full ZO layerwise q=2 node perturbation", Net::kLeNet5, o);
  }
  {
    Fp32TrainerOptions o = base(4);
    o.estimator = config::Estimator::kLayerwise;
    o.queries = 2;
    o.node_perturbation = true;
    add("LeNet-5 ElasticZO C=4 layerwise q=2 node perturbation", Net::kLeNet5, o);
  }
  return cases;
}

class Fp32StepAllocations : public ::testing::TestWithParam<Fp32Case> {};

TEST_P(Fp32StepAllocations, NoneAfterTheFirstStep) { expect_no_step_allocations(GetParam()); }

INSTANTIATE_TEST_SUITE_P(StepAllocations, Fp32StepAllocations, ::testing::ValuesIn(fp32_cases()),
                         [](const ::testing::TestParamInfo<Fp32Case>& info) {
                           return test::param_name(info.param.name);
                         });

// int8 configurations: tests/train/int8_step_allocations_test.cpp, with
// test::expect_steps_allocate_nothing (step_allocations.hpp) around Int8Trainer::step.

}  // namespace
}  // namespace zt::train
