#include "zotrain/nn/batchnorm.hpp"

#include <algorithm>
#include <cmath>

#include "zotrain/core/error.hpp"

namespace zt::nn {
namespace {

// Channels are reduced in blocks of kBlock (one thread per block: each channel's sum is formed
// in row order by one thread, so results do not depend on the thread count); rows are summed in
// float over kRowChunk rows, then into double.
constexpr int kBlock = 64;
constexpr std::size_t kRowChunk = 32;
constexpr std::size_t kParallelMin = std::size_t{1} << 16;  // elements

// s[c] += Σ_r f(r, c) for c in [c0, c0 + nc): float partial sums per chunk of rows, double total.
template <class F>
void reduce_rows(std::size_t rows, int nc, double* s, F f) {
  for (std::size_t r0 = 0; r0 < rows; r0 += kRowChunk) {
    float part[kBlock] = {};
    const std::size_t r1 = std::min(rows, r0 + kRowChunk);
    for (std::size_t r = r0; r < r1; ++r)
      for (int j = 0; j < nc; ++j) part[j] += f(r, j);
    for (int j = 0; j < nc; ++j) s[j] += part[j];
  }
}

}  // namespace

BatchNorm::BatchNorm(std::string name, int channels, float momentum, float eps)
    : Layer(std::move(name)),
      c_(channels),
      momentum_(momentum),
      eps_(eps),
      weight_{this->name() + ".weight", {channels}},
      bias_{this->name() + ".bias", {channels}},
      running_mean_{this->name() + ".running_mean", {channels}},
      running_var_{this->name() + ".running_var", {channels}} {
  ZT_CHECK(channels >= 1);
}

Shape BatchNorm::infer(const Shape& in) {
  const auto& d = in.dims;
  const bool ok = (d.size() == 1 && d[0] == c_) || (d.size() == 2 && d[0] >= 1 && d[1] == c_);
  if (!ok)
    throw Error(name() + ": expected input [N, " + std::to_string(c_) + "] or [" +
                std::to_string(c_) + "], got " + in.str());
  rows_ = d.size() == 2 ? d[0] : 1;
  return in;
}

void BatchNorm::init(SplitMix64& /*rng*/) {
  for (int c = 0; c < c_; ++c) {
    weight_.data[c] = 1.0f;
    bias_.data[c] = 0.0f;
    if (running_mean_.data != nullptr) running_mean_.data[c] = 0.0f;
    if (running_var_.data != nullptr) running_var_.data[c] = 1.0f;
  }
}

std::size_t BatchNorm::scratch_floats(int /*batch*/) const {
  return 4 * static_cast<std::size_t>(c_);
}

void BatchNorm::statistics(std::size_t rows, const float* x, float* mean, float* inv_std,
                           float* var) const {
  const std::size_t C = static_cast<std::size_t>(c_);
  if (!training_) {
    for (int c = 0; c < c_; ++c) {
      mean[c] = running_mean_.data[c];
      inv_std[c] = 1.0f / std::sqrt(running_var_.data[c] + eps_);
    }
    return;
  }
  const int blocks = (c_ + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (blocks > 1 && rows * C >= kParallelMin)
  for (int blk = 0; blk < blocks; ++blk) {
    const int c0 = blk * kBlock, nc = std::min(kBlock, c_ - c0);
    const float* xb = x + c0;
    double s[kBlock] = {}, q[kBlock] = {};
    reduce_rows(rows, nc, s, [&](std::size_t r, int j) { return xb[r * C + j]; });
    float m[kBlock];
    for (int j = 0; j < nc; ++j) m[j] = static_cast<float>(s[j] / static_cast<double>(rows));
    reduce_rows(rows, nc, q, [&](std::size_t r, int j) {
      const float d = xb[r * C + j] - m[j];
      return d * d;
    });
    for (int j = 0; j < nc; ++j) {
      const float v = static_cast<float>(q[j] / static_cast<double>(rows));
      mean[c0 + j] = m[j];
      inv_std[c0 + j] = 1.0f / std::sqrt(v + eps_);
      if (var != nullptr) var[c0 + j] = v;
    }
  }
}

void BatchNorm::forward(int batch, const float* x, float* y, float* scratch) {
  const std::size_t rows = static_cast<std::size_t>(batch) * static_cast<std::size_t>(rows_);
  const std::size_t C = static_cast<std::size_t>(c_);
  float* mean = scratch;
  float* inv_std = scratch + C;
  float* var = scratch + 2 * C;
  statistics(rows, x, mean, inv_std, training_ ? var : nullptr);
  if (training_ && update_stats_) {
    const float m = momentum_;
    const float unbias = rows > 1 ? static_cast<float>(rows) / static_cast<float>(rows - 1) : 1.0f;
    for (std::size_t c = 0; c < C; ++c) {
      running_mean_.data[c] = (1 - m) * running_mean_.data[c] + m * mean[c];
      running_var_.data[c] = (1 - m) * running_var_.data[c] + m * var[c] * unbias;
    }
  }
  float* scale = scratch + 3 * C;  // γ / √(σ² + eps)
  for (std::size_t c = 0; c < C; ++c) scale[c] = weight_.data[c] * inv_std[c];
  const float* beta = bias_.data;
#pragma omp parallel for schedule(static) if (rows * C >= kParallelMin)
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * C;
    float* yr = y + r * C;
    for (std::size_t c = 0; c < C; ++c) yr[c] = (xr[c] - mean[c]) * scale[c] + beta[c];
  }
}

void BatchNorm::backward(int batch, const float* x, const float* /*y*/, const float* dy, float* dx,
                         float* scratch) {
  const std::size_t rows = static_cast<std::size_t>(batch) * static_cast<std::size_t>(rows_);
  const std::size_t C = static_cast<std::size_t>(c_);
  float* mean = scratch;
  float* inv_std = scratch + C;
  float* sum_dy = scratch + 2 * C;       // Σ dy
  float* sum_dy_xhat = scratch + 3 * C;  // Σ dy · x̂
  statistics(rows, x, mean, inv_std, nullptr);
  const int blocks = (c_ + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (blocks > 1 && rows * C >= kParallelMin)
  for (int blk = 0; blk < blocks; ++blk) {
    const int c0 = blk * kBlock, nc = std::min(kBlock, c_ - c0);
    const float* xb = x + c0;
    const float* db = dy + c0;
    const float* mb = mean + c0;
    double s[kBlock] = {}, q[kBlock] = {};
    reduce_rows(rows, nc, s, [&](std::size_t r, int j) { return db[r * C + j]; });
    reduce_rows(rows, nc, q,
                [&](std::size_t r, int j) { return db[r * C + j] * (xb[r * C + j] - mb[j]); });
    for (int j = 0; j < nc; ++j) {
      sum_dy[c0 + j] = static_cast<float>(s[j]);
      sum_dy_xhat[c0 + j] = static_cast<float>(q[j]) * inv_std[c0 + j];
    }
  }
  if (weight_.grad != nullptr) {
    for (std::size_t c = 0; c < C; ++c) {
      weight_.grad[c] += sum_dy_xhat[c];
      bias_.grad[c] += sum_dy[c];
    }
  }
  if (dx == nullptr) return;
  const float* gamma = weight_.data;
  if (!training_) {  // μ, σ² are constants: dx = dy · γ / √(σ²_running + eps)
#pragma omp parallel for schedule(static) if (rows * C >= kParallelMin)
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < C; ++c) dx[r * C + c] = dy[r * C + c] * gamma[c] * inv_std[c];
    return;
  }
  // dx = γ/√(σ² + eps) · (dy − Σdy/M − x̂ · Σ(dy·x̂)/M); the per-channel factors go to scratch.
  const float inv_m = 1.0f / static_cast<float>(rows);
  for (std::size_t c = 0; c < C; ++c) {
    sum_dy[c] *= inv_m;                    // mean of dy
    sum_dy_xhat[c] *= inv_m * inv_std[c];  // mean of dy·x̂, times 1/σ (so x − μ multiplies it)
  }
#pragma omp parallel for schedule(static) if (rows * C >= kParallelMin)
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * C;
    const float* dyr = dy + r * C;
    float* dxr = dx + r * C;
    for (std::size_t c = 0; c < C; ++c)
      dxr[c] = gamma[c] * inv_std[c] * (dyr[c] - sum_dy[c] - (xr[c] - mean[c]) * sum_dy_xhat[c]);
  }
}

}  // namespace zt::nn
