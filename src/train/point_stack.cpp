#include "zotrain/train/point_stack.hpp"

#include <algorithm>
#include <cstring>

#include "zotrain/nn/activation.hpp"
#include "zotrain/nn/batchnorm.hpp"
#include "zotrain/nn/linear.hpp"

namespace zt::train {

PointStackStreamer::PointStackStreamer(nn::Model& model, const Fp32Plan& plan)
    : model_(model), plan_(plan) {}

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

void PointStackStreamer::forward(const float* x, int n, int set) {
  float* scratch = plan_.scratch();
  const bool training = model_.training();
  const std::size_t C0 = static_cast<std::size_t>(plan_.in_channels);
  const std::size_t N = static_cast<std::size_t>(plan_.points);
  const std::size_t nbn = plan_.stack_bn.size();
  float* in = plan_.chunk_in();
  const float* src = plan_.layer_input(x, plan_.stream_from, set);  // [n, N, C0]
  float* pool_out = plan_.layer_output(plan_.pool, set);
  auto& pool_layer = static_cast<nn::MaxPoolPoints&>(model_.layer(plan_.pool));
  const std::size_t pool_c = model_.output_floats(plan_.pool);
  float* ext_max = plan_.fuse_tail ? plan_.extremes() : nullptr;
  float* ext_min = plan_.fuse_tail ? ext_max + static_cast<std::size_t>(n) * pool_c : nullptr;
  if (!training)  // evaluation: every BatchNorm normalises with its running statistics
    for (int i : plan_.stack_bn) static_cast<nn::BatchNorm&>(model_.layer(i)).finish_statistics();
  // Training: one pass per BatchNorm (accumulating its statistics), then the pass to the pool —
  // folded into the last BatchNorm's pass when fuse_tail. Evaluation: the last pass only.
  const std::size_t last = plan_.fuse_tail ? nbn - 1 : nbn;
  for (std::size_t k = training ? 0 : last; k <= last; ++k) {
    const int target = k < nbn ? plan_.stack_bn[k] : plan_.pool;
    nn::BatchNorm* bn =
        training && k < nbn ? &static_cast<nn::BatchNorm&>(model_.layer(target)) : nullptr;
    const bool to_pool = k == last;
    if (bn != nullptr) bn->begin_statistics();
    for (std::size_t p0 = 0; p0 < N; p0 += static_cast<std::size_t>(plan_.chunk_points)) {
      const std::size_t np = std::min(static_cast<std::size_t>(plan_.chunk_points), N - p0);
      for (int b = 0; b < n; ++b)  // [n, np, C0] ← points [p0, p0 + np) of every sample
        std::memcpy(in + static_cast<std::size_t>(b) * np * C0,
                    src + (static_cast<std::size_t>(b) * N + p0) * C0, np * C0 * sizeof(float));
      const float* cur = in;
      for (int i = plan_.stream_from; i < target; ++i) {
        float* out = plan_.chunk(i % 2);
        model_.layer(i).forward_rows(static_cast<std::size_t>(n) * np, cur, out, scratch);
        cur = out;
      }
      if (bn != nullptr) bn->accumulate_statistics(n, np, cur);
      if (to_pool && plan_.fuse_tail)
        running_extremes(n, np, pool_c, p0 == 0, cur, ext_max, ext_min);
      else if (to_pool)
        pool_layer.forward_points(n, static_cast<int>(np), p0 == 0, cur, pool_out);
    }
    if (bn != nullptr) bn->finish_statistics();
  }
  if (plan_.fuse_tail) {  // pool = ReLU(BN(max x)) where BN increases, ReLU(BN(min x)) where it falls
    auto& bn = static_cast<nn::BatchNorm&>(model_.layer(plan_.pool - 2));
    const float* scale = bn.scale();
    for (int b = 0; b < n; ++b)
      for (std::size_t c = 0; c < pool_c; ++c) {
        const std::size_t i = static_cast<std::size_t>(b) * pool_c + c;
        if (scale[c] < 0.0f) ext_max[i] = ext_min[i];
      }
    bn.forward_rows(static_cast<std::size_t>(n), ext_max, pool_out, scratch);
    model_.layer(plan_.pool - 1).forward_rows(static_cast<std::size_t>(n), pool_out, pool_out, scratch);
  }
}

// Lean backprop through PointLinear → BatchNorm → ReLU → max-pool over points, recomputing the
// tail's activations from its input a [n, N, C_in] in chunks of tail_rows rows (whole GEMM
// depth blocks). Pass 1 finds each (sample, channel)'s first maximum over points, as
// MaxPoolPoints::backward does, with the BatchNorm input there; the pool's error flows only
// there (through the ReLU if that maximum is positive), so BatchNorm's batch sums come from
// those n·C entries (BatchNorm::backward_sums_sparse). Pass 2 rebuilds each chunk's dense error
// and runs BatchNorm's and PointLinear's row-wise backward on it. Every value matches the
// whole-batch backward bit for bit (see the header).
void PointStackStreamer::backward_tail(const float* x, int n, int set, const float* dpool,
                                       float* dx) {
  float* scratch = plan_.scratch();
  auto& lin = static_cast<nn::PointLinear&>(model_.layer(plan_.stream_from));
  auto& bn = static_cast<nn::BatchNorm&>(model_.layer(plan_.stream_from + 1));
  nn::Layer& relu = model_.layer(plan_.stream_from + 2);
  const float* a = plan_.layer_input(x, plan_.stream_from, set);
  const std::size_t N = static_cast<std::size_t>(plan_.points);
  const std::size_t Cin = static_cast<std::size_t>(plan_.in_channels);
  const std::size_t C = model_.output_floats(plan_.pool);
  const std::size_t rows = static_cast<std::size_t>(n) * N, R = plan_.tail_rows;
  const std::size_t nc = static_cast<std::size_t>(n) * C;
  float* z = plan_.tail(0);   // the BatchNorm input of a chunk
  float* t = plan_.tail(1);   // a chunk's pooled activation, then its error
  float* at = plan_.tail_argmax();  // [n, C]: point index of the first maximum
  float* best = at + nc;                   // the maximum, then the error at it
  float* z_at = best + nc;                 // the BatchNorm input there
  constexpr std::size_t kCb = 64;          // channels per thread block of the scan
  const std::size_t cblocks = (C + kCb - 1) / kCb;
  for (std::size_t r0 = 0; r0 < rows; r0 += R) {
    const std::size_t nr = std::min(R, rows - r0);
    lin.forward_rows(nr, a + r0 * Cin, z, scratch);
    bn.forward_rows(nr, z, t, scratch);
    relu.forward_rows(nr, t, t, scratch);
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
    lin.forward_rows(nr, a + r0 * Cin, z, scratch);
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

}  // namespace zt::train
