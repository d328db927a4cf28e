// Int8 training (docs/design.md §5–6): a step is exact integer arithmetic, so the weights after N
// steps are identical for any thread count; each method changes only the weights it owns.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#ifdef ZT_OPENMP
#include <omp.h>
#endif

#include "zotrain/core/rng.hpp"
#include "zotrain/kernels/quant.hpp"
#include "zotrain/nn/int8_setup.hpp"
#include "zotrain/nn/lenet5.hpp"
#include "zotrain/nn/pointnet.hpp"
#include "zotrain/train/int8_float.hpp"
#include "zotrain/train/int8_trainer.hpp"
#include "zotrain/train/int8_zo.hpp"

namespace zt::train {
namespace {

constexpr int kBatch = 48;

struct Batch {
  std::vector<std::uint8_t> pixels, labels;
};

Batch make_batch(std::uint64_t seed) {
  SplitMix64 rng(seed);
  Batch b;
  b.pixels.resize(kBatch * 28 * 28);
  b.labels.resize(kBatch);
  for (auto& p : b.pixels) p = static_cast<std::uint8_t>(rng.below(4) == 0 ? rng.below(256) : 0);
  for (auto& l : b.labels) l = static_cast<std::uint8_t>(rng.below(10));
  return b;
}

// Weights after `steps` steps of int8 training with partition C on `threads` threads.
std::vector<std::int8_t> train(int partition, int threads, int steps, bool integer_sign, bool cache = false,
                               int r_max = 7) {
#ifdef ZT_OPENMP
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
#endif
  auto fp32 = nn::make_lenet5(kernels::Isa::kReference);
  auto net = nn::make_int8_net(*fp32, kernels::best_isa());
  nn::init_niti(*net, 11);
  Int8TrainerOptions o;
  o.partition = partition;
  o.batch_size = kBatch;
  o.threads = threads;
  o.cache_direction = cache;
  Int8Trainer t(*net, o);
  const auto estimator = make_estimator(config::Estimator::kTwoSided, 1);
  Int8Hyper h;
  h.r_max = r_max;
  h.zero_threshold = std::uint64_t{1} << 31;  // p_zero = 0.5
  for (int s = 0; s < steps; ++s) {
    const Batch b = make_batch(100 + static_cast<std::uint64_t>(s));
    std::vector<std::int8_t> x(b.pixels.size());
    kernels::quantize_pixels_s8(b.pixels.data(), b.pixels.size(), kernels::pixel_quant_shift(), x.data());
    int8_step(t, *estimator, x.data(), kernels::pixel_quant_shift().exponent, kBatch, b.labels.data(), 10,
              1000 + static_cast<std::uint64_t>(s), h,
              {integer_sign ? Int8Sign::kInteger : Int8Sign::kFloat});
  }
#ifdef ZT_OPENMP
  omp_set_num_threads(saved);
#endif
  return {net->weights(), net->weights() + net->num_weights()};
}

class Int8Determinism : public ::testing::TestWithParam<int> {};

TEST_P(Int8Determinism, SameWeightsForAnyThreadCount) {
  const int c = GetParam();
  const auto w1 = train(c, 1, 3, true);
  const auto w2 = train(c, 2, 3, true);
  const auto w3 = train(c, 3, 3, true);
  EXPECT_EQ(w1, w2);
  EXPECT_EQ(w1, w3);
}

INSTANTIATE_TEST_SUITE_P(Partitions, Int8Determinism, ::testing::Values(0, 3, 4, 5),
                         [](const auto& info) { return "C" + std::to_string(info.param); });

// zo.cache_direction: z drawn once per query into a buffer and read back by the − probe and the
// update gives the weights of regenerating it, bit for bit (r_max 7: the table update on
// AArch64; 63: the general one), and the plan counts the buffer (1 byte per ZO weight).
TEST(Int8Trainer, CachedDirectionSameWeightsAsRegenerating) {
  for (int c : {3, 5}) {
    for (int r_max : {7, 63}) {
      const auto plain = train(c, 1, 3, false, false, r_max);
      const auto cached = train(c, 1, 3, false, true, r_max);
      EXPECT_EQ(plain, cached) << "C = " << c << ", r_max = " << r_max;
      EXPECT_NE(plain, train(c, 1, 0, false)) << "C = " << c << ": the weights moved";
    }
  }
  auto fp32 = nn::make_lenet5(kernels::Isa::kReference);
  auto net = nn::make_int8_net(*fp32, kernels::Isa::kReference);
  Int8TrainerOptions o;
  o.partition = 4;
  o.batch_size = kBatch;
  const Int8Trainer plain(*net, o);
  o.cache_direction = true;
  const Int8Trainer cached(*net, o);
  // The buffer is in the plan's arena, rounded up to its 64-byte alignment.
  EXPECT_EQ(cached.planned_bytes(), plain.planned_bytes() + (plain.zo_weights() + 63) / 64 * 64);
  EXPECT_GT(plain.zo_weights(), 0u);
}

// Full BP changes every layer; Full ZO and ElasticZO change the ZO part through the sign and
// the BP part through backprop; nothing else moves.
TEST(Int8Trainer, EachPartOfThePartitionIsTrained) {
  auto fp32 = nn::make_lenet5(kernels::Isa::kReference);
  auto net = nn::make_int8_net(*fp32, kernels::Isa::kReference);
  nn::init_niti(*net, 11);
  const std::vector<std::int8_t> w0(net->weights(), net->weights() + net->num_weights());
  for (int c : {0, 3, 5}) {
    const auto w = train(c, 1, 4, false);
    for (int p = 0; p < net->num_parametric(); ++p) {
      const nn::Int8Layer& l = net->layer(net->parametric_layer(p));
      std::size_t changed = 0;
      for (std::size_t k = l.weight_offset; k < l.weight_offset + l.weight_count; ++k)
        changed += w[k] != w0[k] ? 1 : 0;
      EXPECT_GT(changed, 0u) << "C=" << c << " layer " << l.name;
    }
  }
}

// int8.dead_zone: the float sign's step is 0 exactly when the two passes' mean losses differ by
// at most the dead zone, and sign(ℓ+ − ℓ−) otherwise; the logged agreement is the plain signs'.
TEST(Int8Trainer, DeadZoneZeroesTheCloseCallsOfTheFloatSign) {
  const Batch b = make_batch(7);
  std::vector<std::int8_t> x(b.pixels.size());
  kernels::quantize_pixels_s8(b.pixels.data(), b.pixels.size(), kernels::pixel_quant_shift(),
                              x.data());
  const int e = kernels::pixel_quant_shift().exponent;
  Int8Hyper h;
  h.r_max = 7;
  const auto estimator = make_estimator(config::Estimator::kTwoSided, 1);
  auto fp32 = nn::make_lenet5(kernels::Isa::kReference);
  int nonzero = 0;
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    // One step from the same weights with the dead zone just under and just over |d| / n.
    double d = 0;
    for (const double side : {0.0, 0.999, 1.001}) {
      auto net = nn::make_int8_net(*fp32, kernels::Isa::kReference);
      nn::init_niti(*net, 11);
      Int8TrainerOptions o;
      o.partition = net->num_parametric();
      o.batch_size = kBatch;
      Int8Trainer t(*net, o);
      const double dz = side * std::abs(d) / kBatch;
      const Int8StepResult r = int8_step(t, *estimator, x.data(), e, kBatch, b.labels.data(), 10,
                                         seed, h, {Int8Sign::kFloat, dz});
      if (side == 0.0) {
        d = float_loss_difference(t.logits_plus(), t.logits_minus(), b.labels.data(), kBatch, 10);
        EXPECT_EQ(r.g, d > 0 ? 1 : (d < 0 ? -1 : 0)) << "seed " << seed;
        nonzero += d != 0 ? 1 : 0;
      } else {
        EXPECT_EQ(r.g, side < 1 ? (d > 0 ? 1 : (d < 0 ? -1 : 0)) : 0)
            << "seed " << seed << ", dead zone " << side << " |d| / n";
      }
      const int gi = t.integer_sign(b.labels.data(), false);
      EXPECT_EQ(r.sign_agree, gi == (d > 0 ? 1 : (d < 0 ? -1 : 0))) << "seed " << seed;
    }
  }
  EXPECT_GT(nonzero, 2) << "the probes barely moved the loss: the test checks nothing";
}

TEST(Int8Trainer, PlannedBuffersAndCounts) {
  auto fp32 = nn::make_lenet5(kernels::Isa::kReference);
  auto net = nn::make_int8_net(*fp32, kernels::Isa::kReference);
  EXPECT_EQ(net->num_weights(), 107550u);  // LeNet-5 without biases
  Int8TrainerOptions o;
  o.partition = 3;
  o.batch_size = 256;
  Int8Trainer t(*net, o);
  EXPECT_EQ(t.zo_weights(), 150u + 2400u + 94080u);
  EXPECT_EQ(t.bp_weights(), 10080u + 840u);
  EXPECT_GT(t.planned_bytes(), net->num_weights());
}

}  // namespace
}  // namespace zt::train

namespace zt::train {
namespace {

// Lean tail (int8 PointNet, C ≥ 5): the widest layer streams in chunks into a running max; it
// must give the whole-batch forward's weights and logits bit for bit.
struct PointRun {
  std::vector<std::int8_t> weights, logits;
  int exponent = 0;
  bool lean = false;
  std::size_t planned = 0;
  std::vector<std::string> buffers;  // the plan's buffer names
};

PointRun train_points(int points, int partition, bool lean, int steps, bool batchnorm = true,
                      std::size_t chunk_elems = kTailChunkElems,
                      std::size_t deep_stream_bytes = kDeepStreamBytes) {
  constexpr int kB = 4;
  auto fp32 = nn::make_pointnet(points, kernels::Isa::kReference);
  auto net = nn::make_int8_net(*fp32, kernels::best_isa(), batchnorm);
  nn::init_niti(*net, 5);
  Int8TrainerOptions o;
  o.partition = partition;
  o.batch_size = kB;
  o.lean = lean;
  o.tail_chunk_elems = chunk_elems;
  o.deep_stream_bytes = deep_stream_bytes;
  Int8Trainer t(*net, o);
  const auto estimator = make_estimator(config::Estimator::kTwoSided, 1);
  Int8Hyper h;
  h.r_max = 3;
  SplitMix64 rng(9);
  std::vector<std::int8_t> x(static_cast<std::size_t>(kB) * points * 3);
  std::vector<std::uint8_t> y(kB);
  for (int s = 0; s < steps; ++s) {
    for (auto& v : x) v = static_cast<std::int8_t>(static_cast<int>(rng.below(129)) - 64);
    for (auto& l : y) l = static_cast<std::uint8_t>(rng.below(nn::kPointNetClasses));
    int8_step(t, *estimator, x.data(), -6, kB, y.data(), nn::kPointNetClasses,
              500 + static_cast<std::uint64_t>(s), h, {Int8Sign::kInteger});
  }
  PointRun r;
  r.weights.assign(net->weights(), net->weights() + net->num_weights());
  const Int8Logits lg = t.infer(x.data(), -6, kB);
  r.logits.assign(lg.values, lg.values + static_cast<std::size_t>(kB) * nn::kPointNetClasses);
  r.exponent = lg.exponent;
  r.lean = t.lean();
  r.planned = t.planned_bytes();
  for (const auto& b : t.arena().entries()) r.buffers.push_back(b.name);
  return r;
}

TEST(Int8Net, BatchNormFoldsIntoThePerPointLayers) {
  auto fp32 = nn::make_pointnet(32, kernels::Isa::kReference);
  for (bool bn : {true, false}) {
    auto net = nn::make_int8_net(*fp32, kernels::Isa::kReference, bn);
    int norm = 0;
    for (int i = 0; i < net->size(); ++i) {
      const nn::Int8Layer& l = net->layer(i);
      EXPECT_NE(l.op, nn::LayerOp::kBatchNorm);
      if (l.norm) {
        EXPECT_EQ(l.op, nn::LayerOp::kPointLinear) << l.name;
        ++norm;
      }
    }
    EXPECT_EQ(norm, bn ? 5 : 0);
    EXPECT_EQ(net->num_weights(), 147648u + 666408u - 512u - 256u - 40u);  // no biases, no γ, β
  }
}

// With the integer BatchNorm (docs/design.md §5.8) the stream also gathers the channels'
// statistics and extremes; without it (int8.batchnorm false) it is plain NITI. Chunks of 7 rows
// (1,024 × 7 elements) split samples and their points at odd places.
TEST(Int8LeanTail, SameWeightsAsWholeBatchForward) {
  for (bool bn : {true, false}) {
  for (int points : {64, 80}) {
    for (int c : {5, 6, 8}) {
      const PointRun whole = train_points(points, c, false, 4, bn);
      for (std::size_t chunk : {kTailChunkElems, std::size_t{1024 * 7}}) {
        const PointRun lean = train_points(points, c, true, 4, bn, chunk);
        const std::string what = "N " + std::to_string(points) + " C " + std::to_string(c) +
                                 (bn ? " batchnorm" : " no batchnorm") + " chunk " +
                                 std::to_string(chunk);
        EXPECT_FALSE(whole.lean) << what;
        EXPECT_TRUE(lean.lean) << what;
        EXPECT_EQ(lean.weights, whole.weights) << what;
        EXPECT_EQ(lean.logits, whole.logits) << what;
        EXPECT_EQ(lean.exponent, whole.exponent) << what;
        EXPECT_LT(lean.planned, whole.planned) << what;
      }
    }
  }
  }
}

// The tail in the backprop part (C ≤ 4: NITI backprop through the max-pool, ReLU and the widest
// product, with its BatchNorm): the streamed backward recomputes each chunk and must give the
// whole-batch backward's weights bit for bit, in far less memory. Deep streaming (forced here by
// a limit of 0 bytes; PointNet at batch 256 in use) must too: no whole int32 input error, the
// ReLUs between per-point products read on the fly.
TEST(Int8LeanTail, SameWeightsAsWholeBatchBackward) {
  for (bool bn : {true, false}) {
    for (int c : {0, 3, 4}) {
      const PointRun whole = train_points(64, c, false, 3, bn);
      for (std::size_t chunk : {kTailChunkElems, std::size_t{1024 * 7}}) {
        for (bool deep : {false, true}) {
          if (deep && chunk == kTailChunkElems) continue;  // small chunks stream every layer
          const PointRun lean =
              train_points(64, c, true, 3, bn, chunk, deep ? 0 : kDeepStreamBytes);
          const std::string what = "C " + std::to_string(c) + (bn ? " batchnorm" : " no batchnorm") +
                                   " chunk " + std::to_string(chunk) + (deep ? " deep" : "");
          EXPECT_FALSE(whole.lean) << what;
          EXPECT_TRUE(lean.lean) << what;
          EXPECT_EQ(lean.weights, whole.weights) << what;
          EXPECT_EQ(lean.logits, whole.logits) << what;
          EXPECT_EQ(lean.exponent, whole.exponent) << what;
          // At this toy size (256 rows) a 1,024-row chunk is the whole tensor plus chunk buffers.
          if (chunk < kTailChunkElems) {
            EXPECT_LT(lean.planned, whole.planned) << what;
          }
          // Deep below the tail (C < 4): the ReLU before the widest product keeps no output.
          const bool has_relu4 = std::count(lean.buffers.begin(), lean.buffers.end(),
                                            std::string("relu4 output (int8)")) > 0;
          EXPECT_EQ(has_relu4, !(deep && c < 4)) << what;
        }
      }
    }
  }
}

// Deep streaming takes less memory than the lean tail alone, where it applies.
TEST(Int8LeanTail, DeepStreamingPlansLess) {
  for (int c : {0, 3}) {
    const PointRun lean = train_points(64, c, true, 1, true, 1024 * 7);
    const PointRun deep = train_points(64, c, true, 1, true, 1024 * 7, 0);
    EXPECT_LT(deep.planned, lean.planned) << "C " << c;
  }
}

}  // namespace
}  // namespace zt::train
