#include "zotrain/train/fp32_trainer.hpp"

#include <algorithm>

#include "zotrain/core/error.hpp"
#include "zotrain/kernels/softmax_xent.hpp"

#ifdef ZT_OPENMP
#include <omp.h>
#endif

namespace zt::train {

namespace {

// θ_{1..C}'s size, once C is known to be in [0, L].
std::size_t zo_param_count(nn::Model& model, const Fp32TrainerOptions& o) {
  ZT_CHECK(o.partition >= 0 && o.partition <= model.num_parametric());
  return model.num_params_of_range(0, o.partition);
}

Fp32PlanOptions plan_options(const Fp32TrainerOptions& o) {
  return {o.partition, o.batch_size, o.plan, o.bp_activations,
          o.optimizer == OptimizerKind::kAdam, o.chunk_points};
}

// The PeZO options with D = θ_{1..C}'s size (a perturbation's length under stream offsets; at
// least 1 so that a Full BP trainer, which never perturbs, can be built with them).
kernels::PezoOptions pezo_options(const Fp32TrainerOptions& o, std::size_t zo_params) {
  kernels::PezoOptions p = o.pezo;
  p.elements = std::max<std::size_t>(zo_params, 1);
  return p;
}

}  // namespace

Fp32Trainer::Fp32Trainer(nn::Model& model, const Fp32TrainerOptions& options)
    : model_(model),
      opt_(options),
      zo_params_(zo_param_count(model, options)),
      bp_params_(model.num_params() - zo_params_),
      bp_theta_(model.param_data() + zo_params_),
      perturber_(options.perturbation, options.isa, pezo_options(options, zo_params_)),
      plan_(model, plan_options(options)),
      direction_(model, options.partition, options.cache_direction, options.defer_zo_update,
                 perturber_, plan_.arena()),
      replicas_(model, plan_, options.batched, options.partition, options.queries,
                options.batch_size, options.eps, perturber_, plan_.arena()),
      nodes_(model, plan_, options.node_perturbation, options.partition, options.queries,
             options.batch_size, options.eps, perturber_, plan_.arena()),
      stack_(model, plan_),
      optimizer_(options.optimizer, 0, nullptr, nullptr),
      estimator_(make_estimator(options.estimator, options.queries)) {
  plan_.allocate();
  const Arena& arena = plan_.arena();
  direction_.bind(arena);
  replicas_.bind(arena);
  nodes_.bind(arena);
  optimizer_ = BpOptimizer(opt_.optimizer, bp_params_, plan_.adam_m(), plan_.adam_v());
  const int L = model_.num_parametric();
  // Gradients: the backprop parameters' into the planned buffer, none for the ZO part.
  if (float* g = plan_.grad())
    for (nn::ParamTensor* p : model_.params_of_range(opt_.partition, L)) {
      p->grad = g;
      g += p->size();
    }
  for (nn::ParamTensor* p : model_.params_of_range(0, opt_.partition)) p->grad = nullptr;

  // Data-parallel probes (docs/design.md §15): the layers before the backprop segment (all of
  // them for Full ZO) on this rank's chunks, unless a layer there couples the samples of a batch.
  ranks_ = opt_.ranks != nullptr ? opt_.ranks : &single_rank();
  if (!ranks_->single()) {
    ZT_CHECK_MSG(!opt_.batched, "batched probes of a batch spread over ranks");
    shard_until_ = opt_.node_perturbation || plan_.lean ? 0 : plan_.seg;
    for (int i = 0; i < shard_until_; ++i)
      if (model_.layer(i).desc().op == nn::LayerOp::kBatchNorm) shard_until_ = 0;
    shard_begin_.resize(static_cast<std::size_t>(ranks_->size()) + 1);
  }
}

void Fp32Trainer::forward_chunks(const float* x, int n, int set, int c0, int c1, int l0, int l1) {
  if (c0 >= c1 || l0 >= l1) return;
  const Fp32Plan& p = plan_;
  float* scratch = p.scratch();
  auto run_chunk = [&](int c, float* thread_scratch, int thread) {
    const int b0 = c * kForwardChunk, nb = std::min(kForwardChunk, n - b0);
    for (int i = l0; i < l1; ++i) {
      model_.layer(i).forward(nb, p.chunk_input(x, i, set, b0, thread),
                              p.chunk_output(i, set, b0, thread), thread_scratch);
    }
  };
#ifdef ZT_OPENMP
  if (p.threads > 1 && c1 - c0 > 1) {
#pragma omp parallel num_threads(p.threads)
    {
      float* thread_scratch =
          scratch ? scratch + p.chunk_scratch_floats * omp_get_thread_num() : nullptr;
#pragma omp for schedule(static)
      for (int c = c0; c < c1; ++c) run_chunk(c, thread_scratch, omp_get_thread_num());
    }
    return;
  }
#endif
  for (int c = c0; c < c1; ++c) run_chunk(c, scratch, 0);
}


const float* Fp32Trainer::forward(const float* x, int n, int set, bool shard) {
  ZT_CHECK(n >= 1 && n <= opt_.batch_size);
  direction_.sync();
  input_ = x;
  const Fp32Plan& p = plan_;
  float* scratch = p.scratch();
  const int layers = model_.size();
  // Lean: the layers before the streamed stack (if any) as usual, the stack streamed, the rest.
  const int plain_end = p.lean ? p.stream_from : layers;
  const int chunked_end = std::min(p.chunked_until, plain_end);
  const int chunks = (n + kForwardChunk - 1) / kForwardChunk;
  // Layers [0, S) on this rank's chunks only (rows [lo, hi)), then their output gathered.
  const int S = shard ? shard_until_ : 0;
  int lo = 0, hi = n;
  if (S > 0) {
    shard_rows(n, kForwardChunk, ranks_->size(), shard_begin_.data());
    lo = shard_begin_[static_cast<std::size_t>(ranks_->rank())];
    hi = shard_begin_[static_cast<std::size_t>(ranks_->rank()) + 1];
  }
  const auto per_sample = [&](int i) { return model_.output_shape(i).numel(); };
  const auto whole_batch = [&](int i, int r0, int r1) {
    if (r0 >= r1) return;
    const std::size_t in_row = i == 0 ? model_.input_shape().numel() : per_sample(i - 1);
    const float* in = p.layer_input(x, i, set) + static_cast<std::size_t>(r0) * in_row;
    float* out = p.layer_output(i, set) + static_cast<std::size_t>(r0) * per_sample(i);
    model_.layer(i).forward(r1 - r0, in, out, scratch);
    // The clean probe of node perturbation keeps the layers' inputs and outputs (never sharded).
    if (nodes_.capturing()) nodes_.capture(i, in, out, r1 - r0);
  };
  if (S > 0) {
    forward_chunks(x, n, set, lo / kForwardChunk, (hi + kForwardChunk - 1) / kForwardChunk, 0,
                   std::min(chunked_end, S));
    for (int i = chunked_end; i < S; ++i) whole_batch(i, lo, hi);
    ranks_->gather_rows(p.layer_output(S - 1, set), per_sample(S - 1) * sizeof(float),
                        shard_begin_.data(), Exchange::kActivations);
  }
  forward_chunks(x, n, set, 0, chunks, S, chunked_end);
  for (int i = std::max(chunked_end, S); i < plain_end; ++i) whole_batch(i, 0, n);
  if (p.lean) {
    stack_.forward(x, n, set);
    for (int i = p.pool + 1; i < layers; ++i) whole_batch(i, 0, n);
  }
  return p.layer_output(layers - 1, set);
}

void Fp32Trainer::backward(int n, int set, const float* dlogits) {
  // Walk the segment from the logits down to its first layer; errors ping-pong.
  const Fp32Plan& p = plan_;
  const float* dy = dlogits;
  int cur = 0;
  for (int i = model_.size() - 1; i >= p.seg; --i) {
    if (p.lean_bp && i == p.pool) {  // the streamed tail, down to the input of its PointLinear
      float* dx = p.stream_from > p.seg ? p.error(cur) : nullptr;
      stack_.backward_tail(input_, n, set, dy, dx);
      i = p.stream_from;
      dy = dx;
      cur ^= 1;
      continue;
    }
    float* dx = (i > p.seg) ? p.error(cur) : nullptr;
    model_.layer(i).backward(n, p.layer_input(input_, i, set), p.layer_output(i, set), dy, dx,
                             p.scratch());
    dy = dx;
    cur ^= 1;
  }
}

EvalStats Fp32Trainer::evaluate(const float* x, const std::uint8_t* labels, int n) {
  EvalStats e;
  model_.set_training(false);  // BatchNorm: running statistics
  const float* logits = forward(x, n, 0);
  model_.set_training(true);
  e.loss_sum = n * static_cast<double>(kernels::softmax_xent_f32(n, model_.num_classes(), logits,
                                                                  labels, nullptr, &e.correct));
  return e;
}

double Fp32Trainer::loss(const float* x, const std::uint8_t* labels, int n) {
  const float* logits = forward(x, n, 0);
  return kernels::softmax_xent_f32(n, model_.num_classes(), logits, labels, nullptr, nullptr);
}

}  // namespace zt::train
