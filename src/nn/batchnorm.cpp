#include "zotrain/nn/batchnorm.hpp"

#include <algorithm>
#include <cmath>

#include "zotrain/core/error.hpp"

namespace zt::nn {
namespace {

// Channels are reduced in blocks of kBlock (one thread per block: each channel's sums are formed
// in a fixed order by one thread, so results do not depend on the thread count); rows are summed
// in float over kRowChunk rows, then into double.
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

// y[r, c] = (x[r, c] − mean[c])·scale[c] + beta[c]; the one formula of every normalisation.
void normalise(std::size_t rows, std::size_t C, const float* x, float* y, const float* mean,
               const float* scale, const float* beta) {
#pragma omp parallel for schedule(static) if (rows * C >= kParallelMin)
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * C;
    float* yr = y + r * C;
    for (std::size_t c = 0; c < C; ++c) yr[c] = (xr[c] - mean[c]) * scale[c] + beta[c];
  }
}

}  // namespace

static_assert(BatchNorm::kStatRowBlock == static_cast<int>(kRowChunk));

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
  const std::size_t C = static_cast<std::size_t>(channels);
  acc_mean_.assign(C, 0.0);
  acc_m2_.assign(C, 0.0);
  mean_.assign(C, 0.0f);
  inv_std_.assign(C, 1.0f);
  scale_.assign(C, 1.0f);
  sum_dy_.assign(C, 0.0f);
  sum_dy_xhat_.assign(C, 0.0f);
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

void BatchNorm::begin_statistics() {
  acc_n_ = 0;
  std::fill(acc_mean_.begin(), acc_mean_.end(), 0.0);
  std::fill(acc_m2_.begin(), acc_m2_.end(), 0.0);
}

void BatchNorm::accumulate_statistics(int segments, std::size_t seg_rows, const float* x) {
  if (segments <= 0 || seg_rows == 0) return;
  const std::size_t C = static_cast<std::size_t>(c_);
  const std::size_t S = static_cast<std::size_t>(segments);
  const int blocks = (c_ + kBlock - 1) / kBlock;
  const double n0 = acc_n_;
#pragma omp parallel for schedule(static) if (blocks > 1 && S * seg_rows * C >= kParallelMin)
  for (int blk = 0; blk < blocks; ++blk) {
    const int c0 = blk * kBlock, nc = std::min(kBlock, c_ - c0);
    double* am = acc_mean_.data() + c0;
    double* a2 = acc_m2_.data() + c0;
    double n = n0;
    for (std::size_t r0 = 0; r0 < seg_rows; r0 += kRowChunk) {
      const std::size_t r1 = std::min(seg_rows, r0 + kRowChunk);
      const float nb = static_cast<float>(r1 - r0);
      const double dnb = static_cast<double>(r1 - r0);
      for (std::size_t s = 0; s < S; ++s) {
        const float* xb = x + (s * seg_rows) * C + c0;
        float sum[kBlock] = {}, q[kBlock] = {}, mb[kBlock];
        for (std::size_t r = r0; r < r1; ++r)
          for (int j = 0; j < nc; ++j) sum[j] += xb[r * C + j];
        for (int j = 0; j < nc; ++j) mb[j] = sum[j] / nb;
        for (std::size_t r = r0; r < r1; ++r)
          for (int j = 0; j < nc; ++j) {
            const float d = xb[r * C + j] - mb[j];
            q[j] += d * d;
          }
        // Merge the block (count nb, mean sum/nb, M2 about that mean) into the running totals.
        const double nn = n + dnb;
        for (int j = 0; j < nc; ++j) {
          const double bm = static_cast<double>(sum[j]) / dnb;
          const double off = bm - static_cast<double>(mb[j]);
          const double m2b = static_cast<double>(q[j]) - dnb * off * off;
          const double delta = bm - am[j];
          am[j] += delta * (dnb / nn);
          a2[j] += std::max(m2b, 0.0) + delta * delta * (n * dnb / nn);
        }
        n = nn;
      }
    }
  }
  acc_n_ = n0 + static_cast<double>(S * seg_rows);
}

void BatchNorm::finish(bool update_running) {
  const std::size_t C = static_cast<std::size_t>(c_);
  if (!training_) {
    for (std::size_t c = 0; c < C; ++c) {
      mean_[c] = running_mean_.data[c];
      inv_std_[c] = 1.0f / std::sqrt(running_var_.data[c] + eps_);
    }
  } else {
    ZT_CHECK(acc_n_ >= 1);
    const double rows = acc_n_;
    const float m = momentum_;
    const float unbias = rows > 1 ? static_cast<float>(rows) / static_cast<float>(rows - 1) : 1.0f;
    for (std::size_t c = 0; c < C; ++c) {
      const float mu = static_cast<float>(acc_mean_[c]);
      const float v = static_cast<float>(acc_m2_[c] / rows);
      mean_[c] = mu;
      inv_std_[c] = 1.0f / std::sqrt(v + eps_);
      if (update_running) {
        running_mean_.data[c] = (1 - m) * running_mean_.data[c] + m * mu;
        running_var_.data[c] = (1 - m) * running_var_.data[c] + m * v * unbias;
      }
    }
  }
  for (std::size_t c = 0; c < C; ++c) scale_[c] = weight_.data[c] * inv_std_[c];
}

void BatchNorm::batch_statistics(int batch, const float* x, bool update_running) {
  begin_statistics();
  if (training_) {
    // [B, N, C]: B samples of N rows; [C]: the B rows are one run of rows.
    if (rows_ == 1)
      accumulate_statistics(1, static_cast<std::size_t>(batch), x);
    else
      accumulate_statistics(batch, static_cast<std::size_t>(rows_), x);
  }
  finish(update_running);
}

void BatchNorm::forward(int batch, const float* x, float* y, float* /*scratch*/) {
  const std::size_t rows = static_cast<std::size_t>(batch) * static_cast<std::size_t>(rows_);
  batch_statistics(batch, x, update_stats_);
  normalise(rows, static_cast<std::size_t>(c_), x, y, mean_.data(), scale_.data(), bias_.data);
}

void BatchNorm::forward_rows(std::size_t rows, const float* x, float* y, float* /*scratch*/) {
  normalise(rows, static_cast<std::size_t>(c_), x, y, mean_.data(), scale_.data(), bias_.data);
}

void BatchNorm::backward(int batch, const float* x, const float* /*y*/, const float* dy, float* dx,
                         float* /*scratch*/) {
  const std::size_t rows = static_cast<std::size_t>(batch) * static_cast<std::size_t>(rows_);
  const std::size_t C = static_cast<std::size_t>(c_);
  batch_statistics(batch, x, false);  // the forward's μ, σ² again; running stats untouched
  const float* mean = mean_.data();
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
      sum_dy_[c0 + j] = static_cast<float>(s[j]);
      sum_dy_xhat_[c0 + j] = static_cast<float>(q[j]);
    }
  }
  finish_backward_sums(rows);
  if (dx != nullptr) backward_rows(rows, x, dy, dx);
}

void BatchNorm::backward_sums_sparse(int batch, const float* at, const float* val,
                                     const float* x_at) {
  ZT_CHECK(training_);
  const std::size_t C = static_cast<std::size_t>(c_);
  const std::size_t N = static_cast<std::size_t>(rows_);
  const float* mean = mean_.data();
  // The dense reduction's float partial per kRowChunk rows, then double: the non-zero terms of a
  // channel come in row order (sample b's row is b·N + at[b, c]), and adding the zero terms
  // changes no partial sum, so grouping the non-zero ones by row chunk repeats it exactly.
#pragma omp parallel for schedule(static) if (C >= 2 * kBlock && static_cast<std::size_t>(batch) * C >= 4096)
  for (std::size_t c = 0; c < C; ++c) {
    double s = 0, q = 0;
    float ps = 0.0f, pq = 0.0f;
    std::size_t chunk = 0;
    bool open = false;
    for (int b = 0; b < batch; ++b) {
      const std::size_t i = static_cast<std::size_t>(b) * C + c;
      const std::size_t row = static_cast<std::size_t>(b) * N + static_cast<std::size_t>(at[i]);
      if (open && row / kRowChunk != chunk) {
        s += ps;
        q += pq;
        ps = pq = 0.0f;
      }
      chunk = row / kRowChunk;
      open = true;
      ps += val[i];
      pq += val[i] * (x_at[i] - mean[c]);
    }
    if (open) {
      s += ps;
      q += pq;
    }
    sum_dy_[c] = static_cast<float>(s);
    sum_dy_xhat_[c] = static_cast<float>(q);
  }
  finish_backward_sums(static_cast<std::size_t>(batch) * N);
}

void BatchNorm::finish_backward_sums(std::size_t rows) {
  const std::size_t C = static_cast<std::size_t>(c_);
  for (std::size_t c = 0; c < C; ++c) sum_dy_xhat_[c] *= inv_std_[c];  // Σ dy · x̂
  if (weight_.grad != nullptr) {
    for (std::size_t c = 0; c < C; ++c) {
      weight_.grad[c] += sum_dy_xhat_[c];
      bias_.grad[c] += sum_dy_[c];
    }
  }
  if (!training_) return;
  // The factors of backward_rows(): mean of dy, and mean of dy·x̂ times 1/σ (so x − μ multiplies it).
  const float inv_m = 1.0f / static_cast<float>(rows);
  for (std::size_t c = 0; c < C; ++c) {
    sum_dy_[c] *= inv_m;
    sum_dy_xhat_[c] *= inv_m * inv_std_[c];
  }
}

void BatchNorm::backward_rows(std::size_t rows, const float* x, const float* dy, float* dx) const {
  const std::size_t C = static_cast<std::size_t>(c_);
  const float* gamma = weight_.data;
  const float* mean = mean_.data();
  const float* inv_std = inv_std_.data();
  if (!training_) {  // μ, σ² are constants: dx = dy · γ / √(σ²_running + eps)
#pragma omp parallel for schedule(static) if (rows * C >= kParallelMin)
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < C; ++c) dx[r * C + c] = dy[r * C + c] * gamma[c] * inv_std[c];
    return;
  }
  // dx = γ/√(σ² + eps) · (dy − Σdy/M − x̂ · Σ(dy·x̂)/M)
  const float* mean_dy = sum_dy_.data();
  const float* k = sum_dy_xhat_.data();
#pragma omp parallel for schedule(static) if (rows * C >= kParallelMin)
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * C;
    const float* dyr = dy + r * C;
    float* dxr = dx + r * C;
    for (std::size_t c = 0; c < C; ++c)
      dxr[c] = gamma[c] * inv_std[c] * (dyr[c] - mean_dy[c] - (xr[c] - mean[c]) * k[c]);
  }
}

}  // namespace zt::nn
