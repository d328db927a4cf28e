// Integer-only (compiled with -mgeneral-regs-only in the aarch64 check build).
#include "zotrain/train/int8_nodes.hpp"

#include <algorithm>
#include <cstring>

#include "zotrain/core/error.hpp"
#include "zotrain/core/seeds.hpp"
#include "zotrain/kernels/quant.hpp"

namespace zt::train {

// A block is node-perturbed when it is a Linear outside the streamed per-point stack, so that a
// pass can restart from its output buffer (LeNet-5: fc1, fc2, fc3; PointNet: the head after the
// pool).
Int8NodePerturbation::Int8NodePerturbation(nn::Int8Net& net, const Int8Plan& plan, Arena& arena,
                                           const Int8NodeOptions& o)
    : net_(net), arena_(arena), signs_(o.signs) {
  if (!o.enabled) return;
  ZT_CHECK(o.queries >= 1);
  const auto B = static_cast<std::size_t>(o.batch_size);
  std::size_t widest_in = 0;
  blocks_.resize(static_cast<std::size_t>(o.partition));
  for (int b = 0; b < o.partition; ++b) {
    const int li = net.parametric_layer(b);
    const nn::Int8Layer& l = net.layer(li);
    const bool streamed = (plan.tail >= 0 && li <= plan.tail + 2) ||
                          plan.chunk_rows[static_cast<std::size_t>(li)] > 0;
    if (l.op != nn::LayerOp::kLinear || l.norm || li == 0 || streamed) continue;
    Block& nb = blocks_[static_cast<std::size_t>(b)];
    nb.layer = li;
    nb.in = l.in.numel();
    nb.out = l.out.numel();
    nb.relu_after = li + 1 < net.size() && net.layer(li + 1).op == nn::LayerOp::kRelu;
    nb.h_input = arena.reserve<std::int8_t>(l.name + " node input (int8)",
                                            B * nb.in);
    nb.h_clean = arena.reserve<std::int8_t>(l.name + " node output (int8)",
                                            B * nb.out);
    widest_ = std::max(widest_, nb.out);
    widest_in = std::max(widest_in, nb.in);
  }
  if (widest_ == 0) return;
  h_grad_ = arena.reserve<std::int32_t>("node gradient (int32)", B * widest_);
  h_losses_ = arena.reserve<double>(
      "node sample losses (f64)",
      B * (1 + static_cast<std::size_t>(o.partition) * static_cast<std::size_t>(o.queries)));
  h_work_ = arena.reserve<double>("node gradient (f64)", B * widest_);
  h_xi_ = arena.reserve<std::int8_t>("node directions (int8)", B * widest_);
  h_row_ = arena.reserve<std::int64_t>("node row sums (int64)", widest_in);
}

const Int8NodePerturbation::Block& Int8NodePerturbation::block(int b) const {
  ZT_CHECK(nodes(b) > 0);
  return blocks_[static_cast<std::size_t>(b)];
}

std::size_t Int8NodePerturbation::nodes(int b) const {
  return b >= 0 && b < static_cast<int>(blocks_.size()) &&
                 blocks_[static_cast<std::size_t>(b)].layer >= 0
             ? blocks_[static_cast<std::size_t>(b)].out
             : 0;
}

void Int8NodePerturbation::capture(int i, int n, const std::int8_t* x, const std::int8_t* y,
                                   int in_exp, int out_exp) {
  for (Block& nb : blocks_) {
    if (nb.layer != i) continue;
    const auto rows = static_cast<std::size_t>(n);
    std::memcpy(arena_.get<std::int8_t>(nb.h_input), x, rows * nb.in);
    std::memcpy(arena_.get<std::int8_t>(nb.h_clean), y, rows * nb.out);
    nb.in_exp = in_exp;
    nb.out_exp = out_exp;
  }
}

const std::int8_t* Int8NodePerturbation::clean(int b) const {
  return arena_.get<std::int8_t>(block(b).h_clean);
}

const std::int8_t* Int8NodePerturbation::input(int b) const {
  return arena_.get<std::int8_t>(block(b).h_input);
}

int Int8NodePerturbation::scale_exp(int b) const {
  const Block& nb = block(b);
  return nb.in_exp - nb.out_exp - net_.layer(nb.layer).exponent;
}

void Int8NodePerturbation::directions(std::uint64_t step_seed, int b, int query, int n,
                                      std::int8_t* xi) const {
  kernels::signs_s8(signs_, seeds::int8_node_perturbation(step_seed, b, query), 0,
                    static_cast<std::size_t>(n) * nodes(b), xi);
}

void Int8NodePerturbation::perturb(int b, std::uint64_t step_seed, int query, int n,
                                   std::int8_t* y) const {
  const Block& nb = block(b);
  const std::int8_t* c = clean(b);
  const std::size_t count = static_cast<std::size_t>(n) * nb.out;
  directions(step_seed, b, query, n, y);  // ξ, then ȳ + ξ in place
  for (std::size_t k = 0; k < count; ++k)
    y[k] = nb.relu_after && c[k] <= 0 ? c[k] : kernels::clamp_s8(std::int64_t{c[k]} + y[k]);
}

void Int8NodePerturbation::update(int b, int frac, std::uint64_t step_seed, int n) {
  const Block& nb = block(b);
  const nn::Int8Layer& l = net_.layer(nb.layer);
  kernels::update_nodes_s8(net_.weights() + l.weight_offset, nb.out, nb.in, grad(), input(b),
                           static_cast<std::size_t>(n), frac, arena_.get<std::int64_t>(h_row_),
                           static_cast<std::uint32_t>(l.weight_offset),
                           seeds::int8_update_rounding(step_seed));
}

}  // namespace zt::train
