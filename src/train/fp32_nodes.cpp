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
#include <algorithm>
#include <cmath>

#include "zotrain/core/error.hpp"
#include "zotrain/core/seeds.hpp"
#include "zotrain/kernels/softmax_xent.hpp"
#include "zotrain/train/fp32_trainer.hpp"

namespace zt::train {

void Fp32Trainer::init_nodes() {
  if (!opt_.node_perturbation) return;
  const auto B = static_cast<std::size_t>(opt_.batch_size);
  const auto q = static_cast<std::size_t>(opt_.queries);
  const Fp32Plan& p = plan_;
  std::size_t widest = 0;
  nodes_.resize(static_cast<std::size_t>(opt_.partition));
  for (int b = 0; b < opt_.partition; ++b) {
    const int li = model_.parametric_layer(b);
    nn::Layer& layer = model_.layer(li);
    // A Linear alone in its θ_b (no BatchNorm joined), run on the whole batch outside the
    // streamed stack, so that a pass can restart from its output buffer.
    const bool whole_batch = p.lean ? li > p.pool : li >= p.chunked_until;
    if (layer.desc().op != nn::LayerOp::kLinear || !whole_batch ||
        model_.params_of_range(b, b + 1).size() != 2)
      continue;
    NodeBlock& nb = nodes_[static_cast<std::size_t>(b)];
    nb.layer = li;
    nb.in = li == 0 ? model_.input_floats() : model_.output_floats(li - 1);
    nb.out = model_.output_floats(li);
    nb.relu_after = li + 1 < model_.size() && model_.layer(li + 1).desc().op == nn::LayerOp::kRelu;
    nb.input.resize(B * nb.in);
    nb.clean.resize(B * nb.out);
    nb.losses.resize(q * B);
    widest = std::max(widest, nb.out);
  }
  clean_losses_.resize(B);
  node_xi_.resize(B * widest);
  node_dy_.resize(B * widest);
}

std::size_t Fp32Trainer::node_bytes() const {
  std::size_t floats = node_xi_.size() + node_dy_.size(), doubles = clean_losses_.size();
  for (const NodeBlock& nb : nodes_) {
    floats += nb.input.size() + nb.clean.size();
    doubles += nb.losses.size();
  }
  return floats * sizeof(float) + doubles * sizeof(double);
}

void Fp32Trainer::capture_node(int layer, const float* in, const float* out, int n) {
  for (NodeBlock& nb : nodes_) {
    if (nb.layer != layer) continue;
    const auto rows = static_cast<std::size_t>(n);
    std::copy(in, in + rows * nb.in, nb.input.begin());
    std::copy(out, out + rows * nb.out, nb.clean.begin());
    std::size_t active = 0;
    for (std::size_t k = 0; k < rows * nb.out; ++k) active += !nb.relu_after || out[k] > 0.0f;
    nb.active = static_cast<double>(active) / static_cast<double>(rows);
  }
}

void Fp32Trainer::keep_clean_losses(const float* logits, const std::uint8_t* labels, int n) {
  kernels::softmax_xent_rows_f32(n, model_.num_classes(), logits, labels, clean_losses_.data());
}

void Fp32Trainer::draw_nodes(int b, int query, std::uint64_t seed, int n) {
  const NodeBlock& nb = nodes_[static_cast<std::size_t>(b)];
  const std::size_t m = static_cast<std::size_t>(n) * nb.out;
  perturber_.fill(node_xi_.data(), m, seed, seeds::fp32_node_stream(b, query), 0);
  for (std::size_t k = 0; k < m; ++k) {
    const bool active = !nb.relu_after || nb.clean[k] > 0.0f;
    node_xi_[k] = active ? opt_.eps * node_xi_[k] : 0.0f;
  }
}

double Fp32Trainer::probe_nodes(int b, int query, std::uint64_t seed, const std::uint8_t* labels,
                                int n) {
  NodeBlock& nb = nodes_[static_cast<std::size_t>(b)];
  ZT_CHECK(nb.layer >= 0);
  sync_weights();
  draw_nodes(b, query, seed, n);
  const Fp32Plan& p = plan_;
  float* z = p.layer_output(nb.layer, 0);
  const std::size_t m = static_cast<std::size_t>(n) * nb.out;
  for (std::size_t k = 0; k < m; ++k) z[k] = nb.clean[k] + node_xi_[k];
  model_.set_update_running_stats(false);
  for (int i = nb.layer + 1; i < model_.size(); ++i)
    model_.layer(i).forward(n, p.layer_input(input_, i, 0), p.layer_output(i, 0), p.scratch());
  model_.set_update_running_stats(true);
  double* losses = nb.losses.data() + static_cast<std::size_t>(query) * static_cast<std::size_t>(n);
  kernels::softmax_xent_rows_f32(n, model_.num_classes(), p.layer_output(model_.size() - 1, 0),
                                 labels, losses);
  double mean = 0;
  for (int s = 0; s < n; ++s) mean += losses[s];
  return mean / n;
}

void Fp32Trainer::update_nodes(int b, int queries, std::uint64_t seed, int n, float lr) {
  NodeBlock& nb = nodes_[static_cast<std::size_t>(b)];
  ZT_CHECK(nb.layer >= 0);
  sync_weights();
  const std::size_t m = static_cast<std::size_t>(n) * nb.out;
  std::fill(node_dy_.begin(), node_dy_.begin() + static_cast<std::ptrdiff_t>(m), 0.0f);
  // dy = −lr · ĝ_z; node_xi_ holds ε ξ, hence the 1/ε².
  const double c = -static_cast<double>(lr) /
                   (static_cast<double>(n) * queries * static_cast<double>(opt_.eps) * opt_.eps);
  for (int i = 0; i < queries; ++i) {
    draw_nodes(b, i, seed, n);
    const double* li = nb.losses.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(n);
    for (int s = 0; s < n; ++s) {
      const auto f = static_cast<float>(c * (li[s] - clean_losses_[static_cast<std::size_t>(s)]));
      float* dy = node_dy_.data() + static_cast<std::size_t>(s) * nb.out;
      const float* xi = node_xi_.data() + static_cast<std::size_t>(s) * nb.out;
      for (std::size_t j = 0; j < nb.out; ++j) dy[j] += f * xi[j];
    }
  }
  const std::vector<nn::ParamTensor*> ps = model_.params_of_range(b, b + 1);
  for (nn::ParamTensor* t : ps) t->grad = t->data;  // backward's "+= gradient" lands on θ_b
  model_.layer(nb.layer).backward(n, nb.input.data(), nb.clean.data(), node_dy_.data(), nullptr,
                                  plan_.scratch());
  for (nn::ParamTensor* t : ps) t->grad = nullptr;
}

}  // namespace zt::train
