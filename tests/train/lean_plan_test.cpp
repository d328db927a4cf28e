// Lean memory plan of the FP32 trainer (PointNet's per-point stack streamed in chunks of points
// into a running max-pool): it must train exactly as the whole-batch plan — bit-identical
// parameters and BatchNorm running statistics after a few steps for the same seeds, for every
// partition that puts the stack in the ZO part, any chunk size and any thread count — and plan
// far fewer bytes.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <cstdio>
#include <memory>
#include <vector>

#include "zotrain/core/rng.hpp"
#include "zotrain/nn/lenet5.hpp"
#include "zotrain/nn/pointnet.hpp"
#include "zotrain/train/fp32_trainer.hpp"
#include "../support.hpp"

namespace zt::train {
namespace {

struct Result {
  std::vector<float> params, buffers, logits;
  double eval_loss = 0;
  bool lean = false;
};

struct RunSpec {
  int points = 64, batch = 4, partition = 6, steps = 3, threads = 1, chunk_points = 0;
  MemoryPlan plan = MemoryPlan::kLean;
  BpActivations bp = BpActivations::kMinus;
  bool negative_gamma = false;  // flip γ of every odd channel of every BatchNorm
};

// `steps` ZO/ElasticZO steps on random point clouds, then an evaluation pass (running
// statistics) and a training-mode forward of the same batch.
Result train_here(const RunSpec& s) {
  auto m = nn::make_pointnet(s.points, kernels::best_isa());
  m->init(21);
  if (s.negative_gamma)
    for (nn::ParamTensor* p : m->params())
      if (p->name.ends_with(".bn.weight"))
        for (std::size_t c = 1; c < p->size(); c += 2) p->data[c] = -0.75f;
  Fp32TrainerOptions o;
  o.partition = s.partition;
  o.batch_size = s.batch;
  o.plan = s.plan;
  o.chunk_points = s.chunk_points;
  o.bp_activations = s.bp;
  Fp32Trainer t(*m, o);
  telemetry::PhaseTimes times;
  const std::size_t in = static_cast<std::size_t>(s.batch) * m->input_floats();
  SplitMix64 r(5);
  std::vector<float> x;
  std::vector<std::uint8_t> y(static_cast<std::size_t>(s.batch));
  for (int k = 0; k < s.steps; ++k) {
    x = test::random_floats(in, 100 + k, -1.0f, 1.0f);
    for (auto& l : y) l = static_cast<std::uint8_t>(r.below(nn::kPointNetClasses));
    t.step(x.data(), y.data(), s.batch, mix64(k + 1), 0.02f, 0.05f, times);
  }
  Result res;
  res.lean = t.lean();
  res.params.assign(m->param_data(), m->param_data() + m->num_params());
  res.buffers.assign(m->buffer_data(), m->buffer_data() + m->num_buffer_floats());
  res.eval_loss = t.evaluate(x.data(), y.data(), s.batch).loss_sum;
  const float* lg = t.logits(x.data(), s.batch);
  res.logits.assign(lg, lg + static_cast<std::size_t>(s.batch) * nn::kPointNetClasses);
  return res;
}

// train_here on s.threads OpenMP threads.
Result train(const RunSpec& s) {
  Result res;
  test::with_threads(s.threads, [&] { res = train_here(s); });
  return res;
}

// The run of `s` on the whole-batch plan: what the lean plan must reproduce bit for bit.
Result train_whole_batch(RunSpec s) {
  s.plan = MemoryPlan::kWholeBatch;
  return train(s);
}

void expect_identical(const Result& lean, const Result& whole, const std::string& what) {
  EXPECT_TRUE(lean.lean) << what;
  EXPECT_FALSE(whole.lean) << what;
  ASSERT_EQ(lean.params.size(), whole.params.size());
  std::size_t diff = 0;
  for (std::size_t i = 0; i < lean.params.size(); ++i) diff += lean.params[i] != whole.params[i];
  EXPECT_EQ(diff, 0u) << what << ": parameters differ";
  EXPECT_EQ(lean.buffers, whole.buffers) << what << ": running statistics differ";
  EXPECT_EQ(lean.logits, whole.logits) << what << ": logits differ";
  EXPECT_EQ(lean.eval_loss, whole.eval_loss) << what << ": evaluation differs";
}

TEST(LeanPlan, SameWeightsAsWholeBatchPlanSmallN) {
  // N = 64: two chunks of 32, or one; N = 80: a partial row block at the end of each sample.
  for (int points : {64, 80}) {
    for (int c : {5, 6, 7, 8}) {
      RunSpec s;
      s.points = points;
      s.partition = c;
      const Result whole = train_whole_batch(s);
      for (int p : {32, 0}) {
        s.chunk_points = p;
        for (int threads : {1, 2}) {
          s.threads = threads;
          expect_identical(train(s), whole,
                           "N " + std::to_string(points) + " C " + std::to_string(c) + " P " +
                               std::to_string(p) + " threads " + std::to_string(threads));
        }
      }
    }
  }
}

TEST(LeanPlan, SameWeightsWithAveragedBackpropActivations) {
  RunSpec s;
  s.partition = 6;
  s.bp = BpActivations::kAverage;
  s.chunk_points = 32;
  const Result whole = train_whole_batch(s);
  expect_identical(train(s), whole, "average");
}

// Decreasing normalisations (γ < 0): the folded last pass pools the minimum of mlp5's output.
TEST(LeanPlan, SameWeightsWithNegativeBatchNormScales) {
  for (int c : {6, 8}) {
    RunSpec s;
    s.partition = c;
    s.negative_gamma = true;
    s.chunk_points = 32;
    const Result whole = train_whole_batch(s);
    expect_identical(train(s), whole, "negative γ, C " + std::to_string(c));
  }
}

// The real point count, batch 2 (auto chunk: 512 points; and 32-point chunks).
TEST(LeanPlan, SameWeightsAsWholeBatchPlanAtN1024) {
  for (int c : {6, 7, 8}) {
    RunSpec s;
    s.points = 1024;
    s.batch = 2;
    s.partition = c;
    const Result whole = train_whole_batch(s);
    expect_identical(train(s), whole, "N 1024 C " + std::to_string(c));
    if (c == 7) {
      s.chunk_points = 32;
      s.threads = 2;
      expect_identical(train(s), whole, "N 1024 C 7 P 32 threads 2");
    }
  }
}

// Backprop into the stack (Full BP, C ≤ 4): the tail mlp5 → bn5 → relu5 → pool is streamed and
// recomputed in backward. N = 80, B = 8: 640 rows, so two backward chunks (512 + 128 rows) and
// BatchNorm row blocks that straddle samples.
TEST(LeanPlan, SameWeightsWhenBackpropReachesTheStack) {
  for (int c : {0, 1, 4}) {
    for (bool negative : {false, true}) {
      RunSpec s;
      s.points = 80;
      s.batch = 8;
      s.partition = c;
      s.negative_gamma = negative;
      const Result whole = train_whole_batch(s);
      for (int threads : {1, 2}) {
        s.threads = threads;
        expect_identical(train(s), whole,
                         "BP into the stack: C " + std::to_string(c) + (negative ? " γ<0" : "") +
                             " threads " + std::to_string(threads));
      }
    }
  }
}

// The same at the real point count: N = 1024, B = 2, Full BP, two backward chunks of 1024 rows.
TEST(LeanPlan, SameWeightsWhenBackpropReachesTheStackAtN1024) {
  RunSpec s;
  s.points = 1024;
  s.batch = 2;
  s.partition = 0;
  s.steps = 2;
  const Result whole = train_whole_batch(s);
  expect_identical(train(s), whole, "BP into the stack: N 1024 C 0");
}

TEST(LeanPlan, AppliesUnlessBothPassesFeedBackprop) {
  for (int c = 0; c <= 8; ++c) {
    for (BpActivations bp : {BpActivations::kMinus, BpActivations::kAverage}) {
      auto m = nn::make_pointnet(64, kernels::best_isa());
      Fp32TrainerOptions o;
      o.partition = c;
      o.batch_size = 4;
      o.bp_activations = bp;
      Fp32Trainer t(*m, o);
      // C ≥ 5: the stack is in the ZO part. C ≤ 4: the tail is recomputed in backward, which
      // needs one set of statistics (not both passes', unless C = 0: no ZO passes).
      const bool averaged = bp == BpActivations::kAverage && c > 0 && c < 5;
      EXPECT_EQ(t.lean(), !averaged) << c;
    }
  }
  auto lenet = nn::make_lenet5(kernels::best_isa());
  Fp32TrainerOptions o;
  o.partition = 3;
  Fp32Trainer t(*lenet, o);
  EXPECT_FALSE(t.lean());
}

// Planned bytes at the paper's setting (B = 32, N = 1024). Target: 128 MiB peak RSS of the whole
// process; the trainer's plan must leave at least 96 MiB of it to the binary, its libraries,
// the data set and the allocator, so it may take 32 MiB.
TEST(LeanPlan, PlannedBytesAtBatch32N1024) {
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  constexpr std::size_t kBudget = 128 * kMiB, kMargin = 96 * kMiB;
  for (int c : {6, 7, 8}) {
    std::size_t bytes[2] = {0, 0};
    for (int k = 0; k < 2; ++k) {
      auto m = nn::make_pointnet(1024, kernels::best_isa());
      Fp32TrainerOptions o;
      o.partition = c;
      o.batch_size = 32;
      o.plan = k == 0 ? MemoryPlan::kLean : MemoryPlan::kWholeBatch;
      Fp32Trainer t(*m, o);
      bytes[k] = t.planned_bytes();
      if (k == 0) {
        EXPECT_TRUE(t.lean());
        std::printf("C = %d lean plan (P = %d points per chunk):\n", c, t.chunk_points());
        for (const auto& e : t.arena().entries())
          std::printf("  %-28s %10zu B\n", e.name.c_str(), e.bytes);
      }
    }
    std::printf("C = %d planned bytes: lean %zu B (%.2f MiB), whole-batch %zu B (%.2f MiB)\n", c,
                bytes[0], static_cast<double>(bytes[0]) / kMiB, bytes[1],
                static_cast<double>(bytes[1]) / kMiB);
    EXPECT_LE(bytes[0], kBudget - kMargin) << c;
    EXPECT_LT(bytes[0] * 10, bytes[1]) << c;
  }
}

// One lean ElasticZO step at B = 32, N = 1024 (C = 6); prints the process's peak RSS so far
// (meaningful when run alone: --gtest_filter=LeanPlan.PeakRssOfOneStepAtBatch32).
TEST(LeanPlan, PeakRssOfOneStepAtBatch32) {
  RunSpec s;
  s.points = 1024;
  s.batch = 32;
  s.partition = 6;
  s.steps = 1;
  const Result r = train(s);
  EXPECT_TRUE(r.lean);
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  std::printf("peak RSS of this test process so far: %ld KiB (%.1f MiB)\n", u.ru_maxrss,
              static_cast<double>(u.ru_maxrss) / 1024.0);
}

}  // namespace
}  // namespace zt::train
