// Node perturbation (Poor Man's Training's NP) for the FP32 trainer's layer-wise estimate: a
// fully connected ZO layer z = W a + b with fewer outputs per sample than weights is estimated
// through its outputs. The clean pass keeps the layer's input a_n and output z_n; probe i
// perturbs the outputs of every sample by its own ε ξ_{i,n} (ξ from zo.perturbation, stream
// seeds::fp32_node_stream; nodes a following ReLU cuts off, z ≤ 0, are inactive and left alone)
// and runs only the layers after it; the node gradient
//   ĝ_{z,n} = (1/(n q)) Σ_i (ℓ_{i,n} − ℓ_n)/ε · ξ_{i,n}
// (the 1/n of the batch-mean loss) goes through the layer's own backward with its gradient
// pointers aimed at its weights, so the layer's weights take θ += Σ_n dy_n a_nᵀ with
// dy = −η·s·ĝ_z in place, no gradient buffer (docs/design.md §4).
#include "zotrain/train/fp32_nodes.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "zotrain/core/error.hpp"
#include "zotrain/core/seeds.hpp"
#include "zotrain/kernels/softmax_xent.hpp"

namespace zt::train {

Fp32NodePerturbation::Fp32NodePerturbation(nn::Model& model, const Fp32Plan& plan, bool enabled,
                                           int partition, int queries, int batch, float eps,
                                           const kernels::Perturber& perturber, Arena& arena)
    : model_(model), plan_(plan), eps_(eps), perturber_(perturber) {
  if (!enabled) return;
  const auto B = static_cast<std::size_t>(batch);
  const auto q = static_cast<std::size_t>(queries);
  const Fp32Plan& p = plan_;
  std::size_t widest = 0;
  blocks_.resize(static_cast<std::size_t>(partition));
  for (int b = 0; b < partition; ++b) {
    const int li = model_.parametric_layer(b);
    nn::Layer& layer = model_.layer(li);
    // A Linear alone in its θ_b (no BatchNorm joined), run on the whole batch outside the
    // streamed stack, so that a pass can restart from its output buffer.
    const bool whole_batch = p.lean ? li > p.pool : li >= p.chunked_until;
    Block& nb = blocks_[static_cast<std::size_t>(b)];
    nb.params = model_.params_of_range(b, b + 1);
    if (layer.desc().op != nn::LayerOp::kLinear || !whole_batch || nb.params.size() != 2) continue;
    nb.layer = li;
    nb.in = li == 0 ? model_.input_floats() : model_.output_floats(li - 1);
    nb.out = model_.output_floats(li);
    nb.relu_after = li + 1 < model_.size() && model_.layer(li + 1).desc().op == nn::LayerOp::kRelu;
    const std::string name = "nodes." + layer.name();
    nb.h_input = arena.reserve(name + ".input", B * nb.in);
    nb.h_clean = arena.reserve(name + ".clean", B * nb.out);
    nb.h_losses = arena.reserve<double>(name + ".losses", q * B);
    widest = std::max(widest, nb.out);
  }
  h_clean_losses_ = arena.reserve<double>("nodes.clean_losses", B);
  h_xi_ = arena.reserve("nodes.noise", B * widest);
  h_dy_ = arena.reserve("nodes.error", B * widest);
}

void Fp32NodePerturbation::bind(const Arena& arena) {
  if (!enabled()) return;
  for (Block& nb : blocks_) {
    if (nb.layer < 0) continue;
    nb.input = arena.get(nb.h_input);
    nb.clean = arena.get(nb.h_clean);
    nb.losses = arena.get<double>(nb.h_losses);
  }
  clean_losses_ = arena.get<double>(h_clean_losses_);
  xi_ = arena.get(h_xi_);
  dy_ = arena.get(h_dy_);
}

std::size_t Fp32NodePerturbation::block_nodes(int b) const {
  if (blocks_.empty()) return 0;
  const Block& nb = blocks_[static_cast<std::size_t>(b)];
  return nb.layer >= 0 ? nb.out : 0;
}

double Fp32NodePerturbation::active_nodes(int b) const {
  return blocks_.empty() ? 0.0 : blocks_[static_cast<std::size_t>(b)].active;
}

void Fp32NodePerturbation::capture(int layer, const float* in, const float* out, int n) {
  for (Block& nb : blocks_) {
    if (nb.layer != layer) continue;
    const auto rows = static_cast<std::size_t>(n);
    std::copy(in, in + rows * nb.in, nb.input);
    std::copy(out, out + rows * nb.out, nb.clean);
    std::size_t active = 0;
    for (std::size_t k = 0; k < rows * nb.out; ++k) active += !nb.relu_after || out[k] > 0.0f;
    nb.active = static_cast<double>(active) / static_cast<double>(rows);
  }
}

void Fp32NodePerturbation::keep_clean_losses(const float* logits, const std::uint8_t* labels,
                                             int n) {
  kernels::softmax_xent_rows_f32(n, model_.num_classes(), logits, labels, clean_losses_);
}

void Fp32NodePerturbation::draw(const Block& nb, int b, int query, std::uint64_t seed, int n) {
  const std::size_t m = static_cast<std::size_t>(n) * nb.out;
  perturber_.fill(xi_, m, seed, seeds::fp32_node_stream(b, query), 0);
  for (std::size_t k = 0; k < m; ++k) {
    const bool active = !nb.relu_after || nb.clean[k] > 0.0f;
    xi_[k] = active ? eps_ * xi_[k] : 0.0f;
  }
}

double Fp32NodePerturbation::probe(int b, int query, std::uint64_t seed, const float* x,
                                   const std::uint8_t* labels, int n) {
  const Block& nb = blocks_[static_cast<std::size_t>(b)];
  ZT_CHECK(nb.layer >= 0);
  draw(nb, b, query, seed, n);
  const Fp32Plan& p = plan_;
  float* z = p.layer_output(nb.layer, 0);
  const std::size_t m = static_cast<std::size_t>(n) * nb.out;
  for (std::size_t k = 0; k < m; ++k) z[k] = nb.clean[k] + xi_[k];
  model_.set_update_running_stats(false);
  for (int i = nb.layer + 1; i < model_.size(); ++i)
    model_.layer(i).forward(n, p.layer_input(x, i, 0), p.layer_output(i, 0), p.scratch());
  model_.set_update_running_stats(true);
  double* losses = nb.losses + static_cast<std::size_t>(query) * static_cast<std::size_t>(n);
  kernels::softmax_xent_rows_f32(n, model_.num_classes(), p.layer_output(model_.size() - 1, 0),
                                 labels, losses);
  double mean = 0;
  for (int s = 0; s < n; ++s) mean += losses[s];
  return mean / n;
}

void Fp32NodePerturbation::update(int b, int queries, std::uint64_t seed, int n, float lr) {
  const Block& nb = blocks_[static_cast<std::size_t>(b)];
  ZT_CHECK(nb.layer >= 0);
  const std::size_t m = static_cast<std::size_t>(n) * nb.out;
  std::fill(dy_, dy_ + m, 0.0f);
  // dy = −lr · ĝ_z; xi_ holds ε ξ, hence the 1/ε².
  const double c = -static_cast<double>(lr) /
                   (static_cast<double>(n) * queries * static_cast<double>(eps_) * eps_);
  for (int i = 0; i < queries; ++i) {
    draw(nb, b, i, seed, n);
    const double* li = nb.losses + static_cast<std::size_t>(i) * static_cast<std::size_t>(n);
    for (int s = 0; s < n; ++s) {
      const auto f = static_cast<float>(c * (li[s] - clean_losses_[static_cast<std::size_t>(s)]));
      float* dy = dy_ + static_cast<std::size_t>(s) * nb.out;
      const float* xi = xi_ + static_cast<std::size_t>(s) * nb.out;
      for (std::size_t j = 0; j < nb.out; ++j) dy[j] += f * xi[j];
    }
  }
  for (nn::ParamTensor* t : nb.params) t->grad = t->data;  // backward's "+= gradient" lands on θ_b
  model_.layer(nb.layer).backward(n, nb.input, nb.clean, dy_, nullptr, plan_.scratch());
  for (nn::ParamTensor* t : nb.params) t->grad = nullptr;
}

}  // namespace zt::train
