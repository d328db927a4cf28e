// Integer-only (compiled with -mgeneral-regs-only in the aarch64 check build).
#include "zotrain/nn/int8_net.hpp"

#include <algorithm>

#include "zotrain/core/error.hpp"
#include "zotrain/core/partition.hpp"

namespace zt::nn {

Int8Net::Int8Net(std::string arch, Shape input, std::vector<Int8Layer> layers, kernels::Isa isa)
    : arch_(std::move(arch)), input_(std::move(input)), layers_(std::move(layers)) {
  ZT_CHECK(!layers_.empty());
  std::size_t offset = 0;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    Int8Layer& l = layers_[i];
    if (l.weight_shape.empty()) continue;
    std::size_t n = 1;
    for (int d : l.weight_shape) n *= static_cast<std::size_t>(d);
    l.weight_offset = offset;
    l.weight_count = n;
    offset += n;
    parametric_.push_back(static_cast<int>(i));
    if (l.norm) {
      ZT_CHECK(l.op == LayerOp::kPointLinear);
      l.norm_state.assign(static_cast<std::size_t>(l.weight_shape[0]), {});
      norm_sums_.resize(std::max(norm_sums_.size(), 5 * l.norm_state.size()));
    }
  }
  // The ZO perturbation indexes weights with 32-bit counters.
  ZT_CHECK(static_cast<std::uint64_t>(offset) < (std::uint64_t{1} << 32));
  weights_.assign(offset, 0);
  linear_fwd_ = kernels::select_linear_forward_s8(isa);
  linear_bwd_in_ = kernels::select_linear_backward_input_s8(isa);
  linear_bwd_w_ = kernels::select_linear_backward_weights_s8(isa);
  conv_fwd_ = kernels::select_conv2d_forward_s8(isa);
  conv_bwd_in_ = kernels::select_conv2d_backward_input_s8(isa);
  conv_bwd_w_ = kernels::select_conv2d_backward_weights_s8(isa);
  requantize_ = kernels::select_requantize_s32_s8(isa);
  requantize_max_ = kernels::select_requantize_max_s32_s8(isa);
  update_ = kernels::select_update_weights_s8(isa);
  relu_fwd_ = kernels::select_relu_forward_s8(isa);
  relu_bwd_ = kernels::select_relu_backward_s8(isa);
  pool_fwd_ = kernels::select_maxpool2x2_forward_s8(isa);
  pool_bwd_ = kernels::select_maxpool2x2_backward_s8(isa);
  points_fwd_ = kernels::select_maxpool_points_forward_s8(isa);
  points_bwd_ = kernels::select_maxpool_points_backward_s8(isa);
}

int Int8Net::bp_segment_start(int partition) const {
  return zt::bp_segment_start(parametric_, size(), partition);
}

NetworkDesc Int8Net::describe() const {
  NetworkDesc net{input_, {}};
  for (const Int8Layer& l : layers_) {
    const bool conv = l.op == LayerOp::kConv2d;
    net.layers.push_back({l.name, {l.op, conv ? l.conv.kernel : 0, conv ? l.conv.pad : 0}, l.in,
                          l.out, l.parametric(), l.weight_count});
  }
  return net;
}

std::size_t Int8Net::num_weights_of_range(int p_begin, int p_end) const {
  std::size_t n = 0;
  for (int p = p_begin; p < p_end; ++p) n += layer(parametric_layer(p)).weight_count;
  return n;
}

std::size_t Int8Net::acc_elems(int i, int batch) const {
  const Int8Layer& l = layer(i);
  if (!l.matmul()) return 0;
  return static_cast<std::size_t>(batch) * std::max(l.in.numel(), l.out.numel());
}

std::size_t Int8Net::scratch_bytes(int i, int batch, int threads) const {
  const Int8Layer& l = layer(i);
  if (l.op != LayerOp::kConv2d) return 0;
  kernels::Conv2dShape s = l.conv;
  s.batch = batch;
  return kernels::conv2d_s8_scratch_bytes(s, threads);
}

std::size_t Int8Net::max_weight_count() const {
  std::size_t m = 0;
  for (const Int8Layer& l : layers_) m = std::max(m, l.weight_count);
  return m;
}

void Int8Net::point_product(int i, std::size_t rows, const std::int8_t* x,
                            std::int32_t* acc) const {
  const Int8Layer& l = layer(i);
  ZT_CHECK(l.op == LayerOp::kPointLinear);
  linear_fwd_(static_cast<int>(rows), l.weight_shape[0], l.weight_shape[1], x,
              weights_.data() + l.weight_offset, acc);
}

void Int8Net::point_backward_input(int i, std::size_t rows, const std::int8_t* e,
                                   std::int32_t* acc) const {
  const Int8Layer& l = layer(i);
  ZT_CHECK(l.op == LayerOp::kPointLinear);
  linear_bwd_in_(static_cast<int>(rows), l.weight_shape[0], l.weight_shape[1], e,
                 weights_.data() + l.weight_offset, acc);
}

void Int8Net::point_backward_weights(int i, std::size_t rows, const std::int8_t* e,
                                     const std::int8_t* x, std::int32_t* grad) const {
  const Int8Layer& l = layer(i);
  ZT_CHECK(l.op == LayerOp::kPointLinear);
  linear_bwd_w_(static_cast<int>(rows), l.weight_shape[0], l.weight_shape[1], e, x, grad);
}

int Int8Net::requantize(const std::int32_t* acc, std::size_t n, std::int8_t* y) const {
  return requantize_(acc, n, y);
}

void Int8Net::point_backward_norm(int i, std::size_t rows, const std::int8_t* y,
                                  std::int8_t* e) const {
  const Int8Layer& l = layer(i);
  ZT_CHECK(l.op == LayerOp::kPointLinear && l.norm);
  kernels::batchnorm_backward_s8(rows, l.weight_shape[0], y, l.norm_exp, e, l.norm_state.data(),
                                 norm_sums_.data());
}

void Int8Net::update(int i, const std::int32_t* grad, int b_bp) {
  const Int8Layer& l = layer(i);
  update_(weights_.data() + l.weight_offset, grad, l.weight_count, b_bp);
}

int Int8Net::forward(int i, int batch, const std::int8_t* x, int ex, std::int8_t* y,
                     std::int32_t* acc, void* scratch, Ranks* ranks) const {
  const Int8Layer& l = layer(i);
  const std::size_t out_n = static_cast<std::size_t>(batch) * l.out.numel();
  // §5.1 over the whole batch: with ranks, the maximum of every rank's rows.
  const auto requantize = [&] {
    if (ranks == nullptr) return requantize_(acc, out_n, y);
    const std::uint32_t mx = ranks->max(kernels::max_abs_s32(acc, out_n), Exchange::kBatchMax);
    return requantize_max_(acc, out_n, mx, y);
  };
  const std::int8_t* w = weights_.data() + l.weight_offset;
  switch (l.op) {
    case LayerOp::kConv2d: {
      kernels::Conv2dShape s = l.conv;
      s.batch = batch;
      conv_fwd_(s, x, w, acc, scratch);
      return ex + l.exponent + requantize();
    }
    case LayerOp::kLinear:
    case LayerOp::kPointLinear: {
      const int rows = l.op == LayerOp::kLinear ? batch : batch * l.in.dims.at(0);
      linear_fwd_(rows, l.weight_shape[0], l.weight_shape[1], x, w, acc);
      if (l.norm) {
        ZT_CHECK_MSG(ranks == nullptr, "int8 BatchNorm of a batch spread over ranks");
        ZT_CHECK_MSG(kernels::batchnorm_sums_fit(static_cast<std::size_t>(rows), l.weight_shape[1]),
                     "int8 BatchNorm: batch × points too large for its int64 sums");
        kernels::batchnorm_forward_s32(static_cast<std::size_t>(rows), l.weight_shape[0], acc,
                                       l.norm_state.data(), norm_sums_.data());
        l.norm_exp = -kernels::kNormFracBits + requantize_(acc, out_n, y);
        return l.norm_exp;
      }
      return ex + l.exponent + requantize();
    }
    case LayerOp::kRelu:
      relu_fwd_(out_n, x, y);
      return ex;
    case LayerOp::kMaxPool2x2: {
      const auto& d = l.in.dims;
      pool_fwd_(batch * d[0], d[1], d[2], x, y);
      return ex;
    }
    case LayerOp::kMaxPoolPoints:
      points_fwd_(batch, l.in.dims.at(0), l.in.dims.at(1), x, y);
      return ex;
    case LayerOp::kBatchNorm: break;  // never in an int8 network (nn/int8_setup.cpp)
  }
  return ex;
}

void Int8Net::backward(int i, int batch, const std::int8_t* x, const std::int8_t* y, std::int8_t* e_out,
                       std::int8_t* e_in, std::int32_t* acc, std::int32_t* grad, int b_bp,
                       void* scratch) {
  const Int8Layer& l = layer(i);
  const std::size_t in_n = static_cast<std::size_t>(batch) * l.in.numel();
  std::int8_t* w = weights_.data() + l.weight_offset;
  switch (l.op) {
    case LayerOp::kConv2d: {
      kernels::Conv2dShape s = l.conv;
      s.batch = batch;
      if (e_in != nullptr) {
        conv_bwd_in_(s, e_out, w, acc, scratch);
        requantize_(acc, in_n, e_in);
      }
      conv_bwd_w_(s, x, e_out, grad, scratch);
      update_(w, grad, l.weight_count, b_bp);
      return;
    }
    case LayerOp::kLinear:
    case LayerOp::kPointLinear: {
      const int rows = l.op == LayerOp::kLinear ? batch : batch * l.in.dims.at(0);
      const int n = l.weight_shape[0], k = l.weight_shape[1];
      if (l.norm) point_backward_norm(i, static_cast<std::size_t>(rows), y, e_out);
      if (e_in != nullptr) {
        linear_bwd_in_(rows, n, k, e_out, w, acc);
        requantize_(acc, in_n, e_in);
      }
      linear_bwd_w_(rows, n, k, e_out, x, grad);
      update_(w, grad, l.weight_count, b_bp);
      return;
    }
    case LayerOp::kRelu:
      if (e_in != nullptr) relu_bwd_(in_n, x, e_out, e_in);
      return;
    case LayerOp::kMaxPool2x2:
      if (e_in != nullptr) {
        const auto& d = l.in.dims;
        pool_bwd_(batch * d[0], d[1], d[2], x, e_out, e_in);
      }
      return;
    case LayerOp::kMaxPoolPoints:
      if (e_in != nullptr)
        points_bwd_(batch, l.in.dims.at(0), l.in.dims.at(1), x, e_out, e_in);
      return;
    case LayerOp::kBatchNorm: break;  // never in an int8 network (nn/int8_setup.cpp)
  }
}

}  // namespace zt::nn
