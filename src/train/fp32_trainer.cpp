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
}


const float* Fp32Trainer::forward(const float* x, int n, int set) {
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
  auto run_chunk = [&](int c, float* thread_scratch, int thread) {
    const int b0 = c * kForwardChunk, nb = std::min(kForwardChunk, n - b0);
    for (int i = 0; i < chunked_end; ++i) {
      model_.layer(i).forward(nb, p.chunk_input(x, i, set, b0, thread),
                              p.chunk_output(i, set, b0, thread), thread_scratch);
    }
  };
  bool done = false;
#ifdef ZT_OPENMP
  if (p.threads > 1 && chunks > 1 && chunked_end > 0) {
#pragma omp parallel num_threads(p.threads)
    {
      float* thread_scratch =
          scratch ? scratch + p.chunk_scratch_floats * omp_get_thread_num() : nullptr;
#pragma omp for schedule(static)
      for (int c = 0; c < chunks; ++c) run_chunk(c, thread_scratch, omp_get_thread_num());
    }
    done = true;
  }
#endif
  if (!done && chunked_end > 0)
    for (int c = 0; c < chunks; ++c) run_chunk(c, scratch, 0);
  // The whole-batch layers; the clean probe of node perturbation keeps their inputs and outputs.
  const auto whole_batch = [&](int i) {
    const float* in = p.layer_input(x, i, set);
    float* out = p.layer_output(i, set);
    model_.layer(i).forward(n, in, out, scratch);
    if (nodes_.capturing()) nodes_.capture(i, in, out, n);
  };
  for (int i = chunked_end; i < plain_end; ++i) whole_batch(i);
  if (p.lean) {
    stack_.forward(x, n, set);
    for (int i = p.pool + 1; i < layers; ++i) whole_batch(i);
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
