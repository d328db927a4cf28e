#include "zotrain/train/fp32_trainer.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "zotrain/core/error.hpp"
#include "zotrain/core/seeds.hpp"
#include "zotrain/kernels/softmax_xent.hpp"
#include "zotrain/nn/activation.hpp"
#include "zotrain/nn/batchnorm.hpp"
#include "zotrain/nn/linear.hpp"

#ifdef ZT_OPENMP
#include <omp.h>
#endif

namespace zt::train {

using telemetry::Phase;
using telemetry::ScopedPhase;

Fp32Trainer::Fp32Trainer(nn::Model& model, const Fp32TrainerOptions& options)
    : model_(model),
      opt_(options),
      perturb_(kernels::select_perturb_gaussian_f32(options.isa)),
      estimator_(make_estimator(options.estimator, options.queries)) {
  const int L = model_.num_parametric();
  ZT_CHECK(opt_.partition >= 0 && opt_.partition <= L);
  ZT_CHECK(opt_.batch_size >= 1);
  const int n = model_.size();
  const std::size_t B = static_cast<std::size_t>(opt_.batch_size);
  seg_ = model_.bp_segment_start(opt_.partition);
  // Outputs from keep_from_ on get their own buffer: the segment's input (output seg−1) and
  // everything after it, and always the logits.
  keep_from_ = std::min(std::max(seg_ - 1, 0), n - 1);
  chunked_until_ = n;
  for (int i = 0; i < n; ++i)
    if (model_.layer(i).prefers_whole_batch()) {
      chunked_until_ = i;
      break;
    }
  // Layers after the chunked prefix run on the whole batch and read [B, ...] layouts, so the
  // prefix's last output gets its own buffer instead of a (chunk-strided) ping-pong slice.
  if (chunked_until_ >= 1) keep_from_ = std::min(keep_from_, chunked_until_ - 1);
  zo_params_ = model_.num_params_of_range(0, opt_.partition);
  bp_params_ = model_.num_params() - zo_params_;
  bp_theta_ = model_.param_data() + zo_params_;
  const bool zo = opt_.partition > 0;
  const bool bp = opt_.partition < L;
  sets_ = (zo && bp && opt_.bp_activations == BpActivations::kAverage) ? 2 : 1;

  // Lean plan: a per-point stack (nn/network_desc.hpp) wholly in the ZO part streams; with
  // backprop into the stack, its tail PointLinear → BatchNorm → ReLU → pool is streamed and
  // recomputed in backward (the layers below it keep their activations).
  if (opt_.plan == MemoryPlan::kLean) {
    using nn::LayerOp;
    const nn::NetworkDesc net = model_.describe();
    const nn::PointStack stack = nn::find_point_stack(net);
    const bool bn_relu_tail =
        stack.between == std::vector<LayerOp>{LayerOp::kBatchNorm, LayerOp::kRelu};
    if (stack.found() && stack.pool < seg_) {
      lean_ = true;
    } else if (stack.found() && bn_relu_tail && seg_ <= stack.tail && sets_ == 1) {
      lean_ = lean_bp_ = true;
      stream_from_ = stack.tail;
    }
    if (lean_) {
      pool_ = stack.pool;
      points_ = model_.input_shape().dims[0];
      in_channels_ = stream_from_ == 0 ? model_.input_shape().dims[1]
                                       : model_.output_shape(stream_from_ - 1).dims.back();
      for (int i : stack.batchnorms)
        if (i >= stream_from_) stack_bn_.push_back(i);
      fuse_tail_ = !stack_bn_.empty() && stack_bn_.back() == pool_ - 2 &&
                   net.layers[static_cast<std::size_t>(pool_ - 1)].desc.op == LayerOp::kRelu;
    }
  }
  std::size_t chunk_width = 0;  // widest per-point activation of the stack
  if (lean_) {
    for (int i = stream_from_; i < pool_; ++i)
      chunk_width = std::max(chunk_width, static_cast<std::size_t>(model_.output_shape(i).dims.back()));
    constexpr int kBlock = nn::BatchNorm::kStatRowBlock;
    int p = opt_.chunk_points;
    if (p <= 0) {
      const std::size_t fit = kLeanChunkFloats / (B * chunk_width);
      p = std::max(kBlock, static_cast<int>(std::min<std::size_t>(fit, 1u << 24)) / kBlock * kBlock);
    }
    ZT_CHECK_MSG(p >= points_ || p % kBlock == 0,
                 "chunk_points must be a multiple of " + std::to_string(kBlock));
    chunk_points_ = std::min(p, points_);
    if (lean_bp_) {  // backward row chunks: whole GEMM depth blocks (PointLinear::backward_rows)
      constexpr std::size_t kDepth = kernels::kGemmDepthBlock;
      const std::size_t rows = std::max(kDepth, kLeanChunkFloats / chunk_width / kDepth * kDepth);
      tail_rows_ = std::min(rows, B * static_cast<std::size_t>(points_));
    }
  }

#ifdef ZT_OPENMP
  threads_ = std::max(1, omp_get_max_threads());
#endif
  std::size_t pp_floats = 0, err_floats = 0, scratch_floats = 0;
  const int chunk = std::min(kForwardChunk, opt_.batch_size);
  // Outputs of chunked layers that the next chunked layer consumes (all but the last chunked
  // layer, and only before the kept ones) live in small per-thread chunk buffers; the last
  // chunked layer writes the whole-batch input of the first whole-batch layer.
  local_until_ = lean_ ? 0 : std::max(0, std::min(keep_from_, chunked_until_ - 1));
  for (int i = 0; i < n; ++i) {
    // Lean: the streamed layers' activations live in the chunk buffers (and their errors in the
    // backward chunks); the pool's [B, C] and what follows are whole-batch.
    const bool chunk_only = streamed_layer(i) && i < pool_;
    if (i < local_until_)
      local_per_sample_ = std::max(local_per_sample_, model_.output_floats(i));
    else if (i < keep_from_ && !chunk_only)
      pp_per_sample_ = std::max(pp_per_sample_, model_.output_floats(i));
    if (i >= seg_ && !chunk_only) err_floats = std::max(err_floats, model_.output_floats(i) * B);
    const bool streamed = streamed_layer(i);  // chunk-level calls, no scratch
    if (!streamed && (i >= seg_ || i >= chunked_until_))  // these run on the whole batch
      scratch_floats = std::max(scratch_floats, model_.layer(i).scratch_floats(opt_.batch_size));
    chunk_scratch_floats_ = std::max(chunk_scratch_floats_, model_.layer(i).scratch_floats(chunk));
  }
  pp_floats = pp_per_sample_ * B;
  // One region serves both: forward chunks use threads_ slices, backward the whole of it.
  chunk_scratch_floats_ = (chunk_scratch_floats_ + 15) / 16 * 16;
  scratch_floats = std::max(scratch_floats, chunk_scratch_floats_ * static_cast<std::size_t>(threads_));
  if (seg_ > 0 && seg_ < n) err_floats = std::max(err_floats, model_.output_floats(seg_ - 1) * B);
  for (int s = 0; s < sets_; ++s) {
    h_kept_[s].assign(static_cast<std::size_t>(n), -1);
    for (int i = keep_from_; i < n; ++i)
      if (!(streamed_layer(i) && i < pool_))
        h_kept_[s][static_cast<std::size_t>(i)] = arena_.reserve(
          "activation." + model_.layer(i).name() + (s ? ".plus" : ""), model_.output_floats(i) * B);
  }
  if (pp_floats > 0)
    for (int k = 0; k < 2; ++k) h_pingpong_[k] = arena_.reserve("activation.pingpong", pp_floats);
  local_floats_ = local_per_sample_ * static_cast<std::size_t>(chunk);
  if (local_floats_ > 0)
    h_local_ = arena_.reserve("activation.chunk.per_thread",
                              2 * local_floats_ * static_cast<std::size_t>(threads_));
  if (lean_) {
    const std::size_t rows = B * static_cast<std::size_t>(chunk_points_);
    h_chunk_in_ = arena_.reserve("activation.chunk.input", rows * static_cast<std::size_t>(in_channels_));
    for (int k = 0; k < 2; ++k) h_chunk_[k] = arena_.reserve("activation.chunk", rows * chunk_width);
    if (fuse_tail_)
      h_extremes_ = arena_.reserve("activation.pool.extremes", 2 * B * model_.output_floats(pool_));
    if (lean_bp_) {
      for (int k = 0; k < 2; ++k) h_tail_[k] = arena_.reserve("backward.chunk", tail_rows_ * chunk_width);
      h_tail_argmax_ = arena_.reserve("backward.pool.argmax", 3 * B * model_.output_floats(pool_));
    }
  }
  if (bp) {
    for (int k = 0; k < 2; ++k) h_err_[k] = arena_.reserve("error.pingpong", err_floats);
    h_grad_ = arena_.reserve("grad", bp_params_);
    if (opt_.optimizer == OptimizerKind::kAdam) {
      h_adam_m_ = arena_.reserve("adam.m", bp_params_);
      h_adam_v_ = arena_.reserve("adam.v", bp_params_);
    }
  }
  const std::size_t classes = static_cast<std::size_t>(model_.num_classes());
  h_dlogits_[0] = arena_.reserve("dlogits", classes * B);
  if (sets_ == 2) h_dlogits_[1] = arena_.reserve("dlogits.plus", classes * B);
  if (scratch_floats > 0) h_scratch_ = arena_.reserve("scratch", scratch_floats);
  arena_.allocate();

  scratch_ = h_scratch_ >= 0 ? arena_.get(h_scratch_) : nullptr;
  if (bp) {
    grad_ = arena_.get(h_grad_);
    float* g = grad_;
    for (nn::ParamTensor* p : model_.params_of_range(opt_.partition, L)) {
      p->grad = g;
      g += p->size();
    }
    if (h_adam_m_ >= 0) {
      adam_m_ = arena_.get(h_adam_m_);
      adam_v_ = arena_.get(h_adam_v_);
    }
  }
  for (nn::ParamTensor* p : model_.params_of_range(0, opt_.partition)) p->grad = nullptr;
}

std::size_t Fp32Trainer::planned_bytes() const {
  return arena_.planned_bytes() + model_.num_params() * sizeof(float);
}

float* Fp32Trainer::layer_output(int i, int set) const {
  if (i >= keep_from_) return arena_.get(h_kept_[set][static_cast<std::size_t>(i)]);
  return arena_.get(h_pingpong_[i % 2]);
}

const float* Fp32Trainer::layer_input(const float* x, int i, int set) const {
  return i == 0 ? x : layer_output(i - 1, set);
}

// A chunk's slice of a layer's output: kept buffers are [B, out...]; the ping-pong buffers are
// sliced with one fixed per-sample stride, so concurrent chunks at different layers never
// overlap.
float* Fp32Trainer::chunk_output(int i, int set, int b0, int thread) const {
  if (i < local_until_)  // this thread's chunk buffers, alternating by layer
    return arena_.get(h_local_) +
           (2 * static_cast<std::size_t>(thread) + static_cast<std::size_t>(i % 2)) * local_floats_;
  const std::size_t per = i >= keep_from_ ? model_.output_floats(i) : pp_per_sample_;
  return layer_output(i, set) + per * static_cast<std::size_t>(b0);
}

const float* Fp32Trainer::chunk_input(const float* x, int i, int set, int b0, int thread) const {
  if (i == 0) return x + model_.input_floats() * static_cast<std::size_t>(b0);
  return chunk_output(i - 1, set, b0, thread);
}

namespace {

// Running per-channel max and min over chunks of points: x [B, np, C]; mx, mn [B, C]; first
// starts them. Same `v > best` scan as the max-pool.
void running_extremes(int batch, std::size_t np, std::size_t C, bool first, const float* x,
                      float* mx, float* mn) {
#pragma omp parallel for schedule(static) if (batch > 1 && np * C >= (std::size_t{1} << 16))
  for (int b = 0; b < batch; ++b) {
    const float* xb = x + static_cast<std::size_t>(b) * np * C;
    float* hi = mx + static_cast<std::size_t>(b) * C;
    float* lo = mn + static_cast<std::size_t>(b) * C;
    if (first)
      for (std::size_t c = 0; c < C; ++c) hi[c] = lo[c] = xb[c];
    for (std::size_t n = first ? 1 : 0; n < np; ++n)
      for (std::size_t c = 0; c < C; ++c) {
        const float v = xb[n * C + c];
        hi[c] = v > hi[c] ? v : hi[c];
        lo[c] = v < lo[c] ? v : lo[c];
      }
  }
}

}  // namespace

// Lean: the per-point stack on chunks of points into the running max-pool (see the header).
void Fp32Trainer::forward_point_stack(const float* x, int n, int set) {
  const bool training = model_.training();
  const std::size_t C0 = static_cast<std::size_t>(in_channels_);
  const std::size_t N = static_cast<std::size_t>(points_);
  const std::size_t nbn = stack_bn_.size();
  float* in = arena_.get(h_chunk_in_);
  const float* src = layer_input(x, stream_from_, set);  // [n, N, C0]
  float* pool_out = layer_output(pool_, set);
  auto& pool = static_cast<nn::MaxPoolPoints&>(model_.layer(pool_));
  const std::size_t pool_c = model_.output_floats(pool_);
  float* ext_max = fuse_tail_ ? arena_.get(h_extremes_) : nullptr;
  float* ext_min = fuse_tail_ ? ext_max + static_cast<std::size_t>(n) * pool_c : nullptr;
  if (!training)  // evaluation: every BatchNorm normalises with its running statistics
    for (int i : stack_bn_) static_cast<nn::BatchNorm&>(model_.layer(i)).finish_statistics();
  // Training: one pass per BatchNorm (accumulating its statistics), then the pass to the pool —
  // folded into the last BatchNorm's pass when fuse_tail_. Evaluation: the last pass only.
  const std::size_t last = fuse_tail_ ? nbn - 1 : nbn;
  for (std::size_t k = training ? 0 : last; k <= last; ++k) {
    const int target = k < nbn ? stack_bn_[k] : pool_;
    nn::BatchNorm* bn =
        training && k < nbn ? &static_cast<nn::BatchNorm&>(model_.layer(target)) : nullptr;
    const bool to_pool = k == last;
    if (bn != nullptr) bn->begin_statistics();
    for (std::size_t p0 = 0; p0 < N; p0 += static_cast<std::size_t>(chunk_points_)) {
      const std::size_t np = std::min(static_cast<std::size_t>(chunk_points_), N - p0);
      for (int b = 0; b < n; ++b)  // [n, np, C0] ← points [p0, p0 + np) of every sample
        std::memcpy(in + static_cast<std::size_t>(b) * np * C0,
                    src + (static_cast<std::size_t>(b) * N + p0) * C0, np * C0 * sizeof(float));
      const float* cur = in;
      for (int i = stream_from_; i < target; ++i) {
        float* out = arena_.get(h_chunk_[i % 2]);
        model_.layer(i).forward_rows(static_cast<std::size_t>(n) * np, cur, out, scratch_);
        cur = out;
      }
      if (bn != nullptr) bn->accumulate_statistics(n, np, cur);
      if (to_pool && fuse_tail_)
        running_extremes(n, np, pool_c, p0 == 0, cur, ext_max, ext_min);
      else if (to_pool)
        pool.forward_points(n, static_cast<int>(np), p0 == 0, cur, pool_out);
    }
    if (bn != nullptr) bn->finish_statistics();
  }
  if (fuse_tail_) {  // pool = ReLU(BN(max x)) where BN increases, ReLU(BN(min x)) where it falls
    auto& bn = static_cast<nn::BatchNorm&>(model_.layer(pool_ - 2));
    const float* scale = bn.scale();
    for (int b = 0; b < n; ++b)
      for (std::size_t c = 0; c < pool_c; ++c) {
        const std::size_t i = static_cast<std::size_t>(b) * pool_c + c;
        if (scale[c] < 0.0f) ext_max[i] = ext_min[i];
      }
    bn.forward_rows(static_cast<std::size_t>(n), ext_max, pool_out, scratch_);
    model_.layer(pool_ - 1).forward_rows(static_cast<std::size_t>(n), pool_out, pool_out, scratch_);
  }
}

const float* Fp32Trainer::forward(const float* x, int n, int set) {
  ZT_CHECK(n >= 1 && n <= opt_.batch_size);
  input_ = x;
  const int layers = model_.size();
  // Lean: the layers before the streamed stack (if any) as usual, the stack streamed, the rest.
  const int plain_end = lean_ ? stream_from_ : layers;
  const int chunked_end = std::min(chunked_until_, plain_end);
  const int chunks = (n + kForwardChunk - 1) / kForwardChunk;
  auto run_chunk = [&](int c, float* scratch, int thread) {
    const int b0 = c * kForwardChunk, nb = std::min(kForwardChunk, n - b0);
    for (int i = 0; i < chunked_end; ++i) {
      model_.layer(i).forward(nb, chunk_input(x, i, set, b0, thread),
                              chunk_output(i, set, b0, thread), scratch);
    }
  };
  bool done = false;
#ifdef ZT_OPENMP
  if (threads_ > 1 && chunks > 1 && chunked_end > 0) {
#pragma omp parallel num_threads(threads_)
    {
      float* scratch = scratch_ ? scratch_ + chunk_scratch_floats_ * omp_get_thread_num() : nullptr;
#pragma omp for schedule(static)
      for (int c = 0; c < chunks; ++c) run_chunk(c, scratch, omp_get_thread_num());
    }
    done = true;
  }
#endif
  if (!done && chunked_end > 0)
    for (int c = 0; c < chunks; ++c) run_chunk(c, scratch_, 0);
  for (int i = chunked_end; i < plain_end; ++i)
    model_.layer(i).forward(n, layer_input(x, i, set), layer_output(i, set), scratch_);
  if (lean_) {
    forward_point_stack(x, n, set);
    for (int i = pool_ + 1; i < layers; ++i)
      model_.layer(i).forward(n, layer_input(x, i, set), layer_output(i, set), scratch_);
  }
  return layer_output(layers - 1, set);
}

void Fp32Trainer::backward(int n, int set, const float* dlogits) {
  // Walk the segment from the logits down to its first layer; errors ping-pong.
  const float* dy = dlogits;
  int cur = 0;
  for (int i = model_.size() - 1; i >= seg_; --i) {
    if (lean_bp_ && i == pool_) {  // the streamed tail, down to the input of its PointLinear
      float* dx = stream_from_ > seg_ ? arena_.get(h_err_[cur]) : nullptr;
      backward_point_tail(n, set, dy, dx);
      i = stream_from_;
      dy = dx;
      cur ^= 1;
      continue;
    }
    float* dx = (i > seg_) ? arena_.get(h_err_[cur]) : nullptr;
    nn::Layer& l = model_.layer(i);
    l.backward(n, layer_input(input_, i, set), layer_output(i, set), dy, dx, scratch_);
    dy = dx;
    cur ^= 1;
  }
}

// Lean backprop through PointLinear → BatchNorm → ReLU → max-pool over points, recomputing the
// tail's activations from its input a [n, N, C_in] in chunks of tail_rows_ rows (whole GEMM
// depth blocks). Pass 1 finds each (sample, channel)'s first maximum over points, as
// MaxPoolPoints::backward does, with the BatchNorm input there; the pool's error flows only
// there (through the ReLU if that maximum is positive), so BatchNorm's batch sums come from
// those n·C entries (BatchNorm::backward_sums_sparse). Pass 2 rebuilds each chunk's dense error
// and runs BatchNorm's and PointLinear's row-wise backward on it. Every value matches the
// whole-batch backward bit for bit (see the header).
void Fp32Trainer::backward_point_tail(int n, int set, const float* dpool, float* dx) {
  auto& lin = static_cast<nn::PointLinear&>(model_.layer(stream_from_));
  auto& bn = static_cast<nn::BatchNorm&>(model_.layer(stream_from_ + 1));
  nn::Layer& relu = model_.layer(stream_from_ + 2);
  const float* a = layer_input(input_, stream_from_, set);
  const std::size_t N = static_cast<std::size_t>(points_);
  const std::size_t Cin = static_cast<std::size_t>(in_channels_);
  const std::size_t C = model_.output_floats(pool_);
  const std::size_t rows = static_cast<std::size_t>(n) * N, R = tail_rows_;
  const std::size_t nc = static_cast<std::size_t>(n) * C;
  float* z = arena_.get(h_tail_[0]);   // the BatchNorm input of a chunk
  float* t = arena_.get(h_tail_[1]);   // a chunk's pooled activation, then its error
  float* at = arena_.get(h_tail_argmax_);  // [n, C]: point index of the first maximum
  float* best = at + nc;                   // the maximum, then the error at it
  float* z_at = best + nc;                 // the BatchNorm input there
  constexpr std::size_t kCb = 64;          // channels per thread block of the scan
  const std::size_t cblocks = (C + kCb - 1) / kCb;
  for (std::size_t r0 = 0; r0 < rows; r0 += R) {
    const std::size_t nr = std::min(R, rows - r0);
    lin.forward_rows(nr, a + r0 * Cin, z, scratch_);
    bn.forward_rows(nr, z, t, scratch_);
    relu.forward_rows(nr, t, t, scratch_);
#pragma omp parallel for schedule(static) if (cblocks > 1 && nr * C >= (std::size_t{1} << 16))
    for (std::size_t cb = 0; cb < cblocks; ++cb) {
      const std::size_t c0 = cb * kCb, c1 = std::min(C, c0 + kCb);
      for (std::size_t r = r0; r < r0 + nr; ++r) {
        const std::size_t p = r % N, base = (r / N) * C;
        const float* tr = t + (r - r0) * C;
        const float* zr = z + (r - r0) * C;
        for (std::size_t c = c0; c < c1; ++c) {
          const std::size_t i = base + c;
          if (p == 0 || tr[c] > best[i]) {
            best[i] = tr[c];
            at[i] = static_cast<float>(p);
            z_at[i] = zr[c];
          }
        }
      }
    }
  }
  for (std::size_t i = 0; i < nc; ++i) best[i] = best[i] > 0.0f ? dpool[i] : 0.0f;  // ReLU
  bn.backward_sums_sparse(n, at, best, z_at);
  for (std::size_t r0 = 0; r0 < rows; r0 += R) {
    const std::size_t nr = std::min(R, rows - r0);
    lin.forward_rows(nr, a + r0 * Cin, z, scratch_);
    std::memset(t, 0, nr * C * sizeof(float));
    for (std::size_t b = r0 / N; b <= (r0 + nr - 1) / N; ++b)
      for (std::size_t c = 0; c < C; ++c) {
        const std::size_t r = b * N + static_cast<std::size_t>(at[b * C + c]);
        if (r >= r0 && r < r0 + nr) t[(r - r0) * C + c] = best[b * C + c];
      }
    bn.backward_rows(nr, z, t, t);
    lin.backward_rows(nr, a + r0 * Cin, t, dx != nullptr ? dx + r0 * Cin : nullptr);
  }
}

// The FP32 ZoExecutor of one step: θ_{1..C} perturbed in place by the ε-scaled Gaussian z_i
// (stream fp32_perturbation_stream(i) of the step seed), probes that keep the loss (and, for
// backprop, the error signal of the last pass), g_i the clipped finite difference, and the
// update merged with the last query's restore.
class Fp32Trainer::ZoStep final : public ZoExecutor {
 public:
  ZoStep(Fp32Trainer& t, const float* x, const std::uint8_t* labels, int n,
         std::uint64_t step_seed, float lr_zo, bool bp, telemetry::PhaseTimes& times)
      : t_(t), x_(x), labels_(labels), n_(n), seed_(step_seed), lr_(lr_zo), bp_(bp),
        times_(times), theta_(t.model_.param_data()) {}

  void perturb(int query, int k) override {
    telemetry::ScopedPhase p(times_, telemetry::Phase::kZoPerturb);
    t_.perturb_(theta_, t_.zo_params_, seed_, seeds::fp32_perturbation_stream(query), 0,
                static_cast<float>(k) * t_.opt_.eps);
  }

  void probe(int, ProbeSide side) override {
    const int classes = t_.model_.num_classes();
    const float* logits;
    if (side == ProbeSide::kPlus) {
      // BatchNorm running statistics move once per step, from the − pass (the one backprop
      // uses); both passes normalise with their batch statistics.
      {
        telemetry::ScopedPhase p(times_, telemetry::Phase::kForward);
        t_.model_.set_update_running_stats(false);
        logits = t_.forward(x_, n_, t_.sets_ == 2 ? 1 : 0);
        t_.model_.set_update_running_stats(true);
      }
      telemetry::ScopedPhase p(times_, telemetry::Phase::kLoss);
      float* dlogits_plus = t_.sets_ == 2 ? t_.arena_.get(t_.h_dlogits_[1]) : nullptr;
      loss_plus_ = kernels::softmax_xent_f32(n_, classes, logits, labels_, dlogits_plus, nullptr);
    } else {
      {
        telemetry::ScopedPhase p(times_, telemetry::Phase::kForward);
        logits = t_.forward(x_, n_, 0);
      }
      telemetry::ScopedPhase p(times_, telemetry::Phase::kLoss);
      loss_minus_ = kernels::softmax_xent_f32(n_, classes, logits, labels_,
                                              bp_ ? t_.arena_.get(t_.h_dlogits_[0]) : nullptr,
                                              &correct_);
    }
  }

  double estimate(int) override {
    telemetry::ScopedPhase p(times_, telemetry::Phase::kLoss);
    const double g = (loss_plus_ - loss_minus_) / (2.0 * t_.opt_.eps);
    const double clip = t_.opt_.grad_clip;
    clipped_ = clipped_ || g > clip || g < -clip;
    loss_sum_ += 0.5 * (loss_plus_ + loss_minus_);
    ++queries_;
    return std::clamp(g, -clip, clip);
  }

  void update(std::span<const double> g) override {
    telemetry::ScopedPhase p(times_, telemetry::Phase::kZoUpdate);
    const int q = static_cast<int>(g.size());
    for (int i = 0; i < q; ++i) {
      const float restore = i == q - 1 ? t_.opt_.eps : 0.0f;
      const double gi = q == 1 ? g[0] : g[static_cast<std::size_t>(i)] / q;
      t_.perturb_(theta_, t_.zo_params_, seed_, seeds::fp32_perturbation_stream(i), 0,
                  restore - lr_ * static_cast<float>(gi));
      g_sum_ += g[static_cast<std::size_t>(i)];
    }
  }

  void finish(StepStats& st) const {
    st.loss = loss_sum_ / queries_;
    st.g = g_sum_ / queries_;
    st.clipped = clipped_;
    st.correct = correct_;
  }

 private:
  Fp32Trainer& t_;
  const float* x_;
  const std::uint8_t* labels_;
  int n_;
  std::uint64_t seed_;
  float lr_;
  bool bp_;
  telemetry::PhaseTimes& times_;
  float* theta_;
  double loss_plus_ = 0, loss_minus_ = 0, loss_sum_ = 0, g_sum_ = 0;
  int queries_ = 0, correct_ = 0;
  bool clipped_ = false;
};

StepStats Fp32Trainer::step(const float* x, const std::uint8_t* labels, int n,
                            std::uint64_t step_seed, float lr_zo, float lr_bp,
                            telemetry::PhaseTimes& times) {
  StepStats st;
  const int L = model_.num_parametric();
  const bool zo = opt_.partition > 0, bp = opt_.partition < L;
  const int classes = model_.num_classes();
  float* dlogits = arena_.get(h_dlogits_[0]);
  if (bp) std::memset(grad_, 0, bp_params_ * sizeof(float));

  if (!zo) {
    const float* logits;
    {
      ScopedPhase t(times, Phase::kForward);
      logits = forward(x, n, 0);
    }
    {
      ScopedPhase t(times, Phase::kLoss);
      st.loss = kernels::softmax_xent_f32(n, classes, logits, labels, dlogits, &st.correct);
    }
  } else {
    ZoStep zo_step(*this, x, labels, n, step_seed, lr_zo, bp, times);
    std::array<double, kMaxQueries> g{};
    estimator_->step(zo_step, g);
    zo_step.finish(st);
    float* dlogits_plus = sets_ == 2 ? arena_.get(h_dlogits_[1]) : nullptr;
    if (bp && sets_ == 2) {
      // Average of both passes' gradients: halve both error signals and accumulate.
      ScopedPhase t(times, Phase::kBackward);
      const std::size_t m = static_cast<std::size_t>(n) * static_cast<std::size_t>(classes);
      for (std::size_t i = 0; i < m; ++i) {
        dlogits_plus[i] *= 0.5f;
        dlogits[i] *= 0.5f;
      }
      backward(n, 1, dlogits_plus);
    }
  }
  if (bp) {
    ScopedPhase t(times, Phase::kBackward);
    backward(n, 0, dlogits);
    if (opt_.optimizer == OptimizerKind::kAdam)
      adam_update(bp_params_, bp_theta_, grad_, adam_m_, adam_v_, ++adam_t_, lr_bp);
    else
      sgd_update(bp_params_, bp_theta_, grad_, lr_bp);
  }
  return st;
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
