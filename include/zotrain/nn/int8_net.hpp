// An int8 network for NITI training (docs/design.md §5): the layer sequence of an FP32 model
// without biases, int8 weights in one contiguous storage (θ_1..θ_L in order, so a ZO range is
// one span), one power-of-two exponent per weight tensor (real value = v · 2^e, never changed
// by training). Activations are int8 tensors with one exponent for the whole batch.
//
// This header and src/nn/int8_net.cpp are integer-only: the aarch64 test build compiles them
// with -mgeneral-regs-only. Construction from an FP32 model, NITI initialisation and the
// paper's footprint live in src/nn/int8_setup.cpp (floating point allowed there).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "zotrain/core/ranks.hpp"
#include "zotrain/core/shape.hpp"
#include "zotrain/kernels/batchnorm_s8.hpp"
#include "zotrain/kernels/conv2d_s8.hpp"
#include "zotrain/kernels/elementwise_s8.hpp"
#include "zotrain/kernels/isa.hpp"
#include "zotrain/kernels/linear_s8.hpp"
#include "zotrain/kernels/quant.hpp"
#include "zotrain/nn/network_desc.hpp"

namespace zt::nn {

// A layer's op is the FP32 layer's (nn/network_desc.hpp) minus BatchNorm, which an int8 network
// folds into the PointLinear before it (Int8Layer::norm) or leaves out: kPointLinear is a linear layer applied to every point ([N, K] → [N, M] per
// sample), kMaxPoolPoints the max over points ([N, C] → [C]).

struct Int8Layer {
  std::string name;
  LayerOp op = LayerOp::kRelu;
  Shape in, out;                    // per sample
  kernels::Conv2dShape conv;        // kConv geometry (its batch field is set per call)
  std::vector<int> weight_shape;    // parametric layers: [O, C, k, k] or [N, K]
  std::size_t weight_offset = 0, weight_count = 0;
  int exponent = 0;                 // e_W
  // kPointLinear followed by BatchNorm in the FP32 model: its product is standardised per
  // channel with the batch's statistics (integer BatchNorm, docs/design.md §5.8) before the
  // requantisation; the statistics and x̂'s exponent of the last forward pass are kept here for
  // the backward pass.
  bool norm = false;
  mutable std::vector<kernels::ChannelNorm> norm_state;
  mutable int norm_exp = 0;
  bool parametric() const { return weight_count > 0; }
  bool matmul() const {
    return op == LayerOp::kConv2d || op == LayerOp::kLinear || op == LayerOp::kPointLinear;
  }
};

class Int8Net {
 public:
  // Lays out the weights (zero) of `layers` in order; kernels are selected once for `isa`.
  Int8Net(std::string arch, Shape input, std::vector<Int8Layer> layers, kernels::Isa isa);

  const std::string& arch() const { return arch_; }
  int size() const { return static_cast<int>(layers_.size()); }
  const Int8Layer& layer(int i) const { return layers_[static_cast<std::size_t>(i)]; }
  Int8Layer& layer(int i) { return layers_[static_cast<std::size_t>(i)]; }
  const Shape& input_shape() const { return input_; }
  int num_classes() const { return static_cast<int>(layers_.back().out.numel()); }

  int num_parametric() const { return static_cast<int>(parametric_.size()); }
  int parametric_layer(int p) const { return parametric_[static_cast<std::size_t>(p)]; }
  int bp_segment_start(int partition) const;  // layer index of θ_{C+1} (size() when C = L)
  NetworkDesc describe() const;  // nn/network_desc.hpp
  std::size_t num_weights() const { return weights_.size(); }
  std::size_t num_weights_of_range(int p_begin, int p_end) const;  // θ_{p_begin+1..p_end}
  std::int8_t* weights() { return weights_.data(); }
  const std::int8_t* weights() const { return weights_.data(); }
  std::int8_t* weights_of(int i) { return weights_.data() + layer(i).weight_offset; }

  // Work space of layer i for a batch of B: int32 elements of its product (matmul layers:
  // forward output, backward input error; 0 otherwise) and kernel scratch bytes.
  std::size_t acc_elems(int i, int batch) const;
  std::size_t scratch_bytes(int i, int batch, int threads) const;
  std::size_t max_weight_count() const;

  // Forward of layer i on a batch: x [B, in] with exponent ex → y [B, out]; returns y's
  // exponent. Matmul layers go through acc [B, out] int32 and requantise (docs/design.md §5.1).
  // `ranks`: the B rows are this rank's share of a batch spread over the ranks of a
  // data-parallel run (docs/design.md §15); a matmul requantises with the maximum over every
  // rank's rows, so each rank's rows get the bits a single process gives them. Not for
  // normalised PointLinear layers (their statistics are the whole batch's).
  int forward(int i, int batch, const std::int8_t* x, int ex, std::int8_t* y, std::int32_t* acc,
              void* scratch, Ranks* ranks = nullptr) const;
  // The int32 product of PointLinear layer i for any rows x [rows, K] → acc [rows, M], without
  // requantising (lets a trainer stream chunks of points; each row is what forward() forms).
  void point_product(int i, std::size_t rows, const std::int8_t* x, std::int32_t* acc) const;
  // Backward of layer i: e_out [B, out] → e_in [B, in] (skipped when e_in is null; matmul
  // layers via acc [B, in] int32 and RoundShift requantisation, with the pre-update weights),
  // then, for a parametric layer, G = Σ e_out ⊗ x in grad [weight_count] int32 and the b_bp-bit
  // update of its weights (docs/design.md §5.5). x is the layer's forward input, y its forward
  // output. A normalised PointLinear first turns e_out (the error of x̂) into the error of its
  // product, in place (docs/design.md §5.8).
  void backward(int i, int batch, const std::int8_t* x, const std::int8_t* y, std::int8_t* e_out,
                std::int8_t* e_in, std::int32_t* acc, std::int32_t* grad, int b_bp,
                void* scratch);
  // The pieces of a PointLinear's backward for any rows (a trainer streaming chunks of points;
  // each is what backward() forms for those rows): e [rows, M] → the unrequantised input error
  // acc [rows, K]; the weight gradient of those rows, grad [M·K] (int32, saturated); the
  // requantisation of an int32 tensor; the b_bp-bit update of layer i's weights from grad.
  void point_backward_input(int i, std::size_t rows, const std::int8_t* e, std::int32_t* acc) const;
  void point_backward_weights(int i, std::size_t rows, const std::int8_t* e, const std::int8_t* x,
                              std::int32_t* grad) const;
  int requantize(const std::int32_t* acc, std::size_t n, std::int8_t* y) const;
  // A normalised PointLinear's first backward step for rows of y (its x̂): e, the error of x̂,
  // becomes the error of its product, in place (what backward() does first).
  void point_backward_norm(int i, std::size_t rows, const std::int8_t* y, std::int8_t* e) const;
  void update(int i, const std::int32_t* grad, int b_bp);

 private:
  std::string arch_;
  Shape input_;
  std::vector<Int8Layer> layers_;
  std::vector<int> parametric_;
  std::vector<std::int8_t> weights_;
  mutable std::vector<std::int64_t> norm_sums_;  // scratch of the integer BatchNorm: 5·C
  kernels::LinearForwardS8Fn linear_fwd_;
  kernels::LinearBackwardInputS8Fn linear_bwd_in_;
  kernels::LinearBackwardWeightsS8Fn linear_bwd_w_;
  kernels::Conv2dForwardS8Fn conv_fwd_;
  kernels::Conv2dBackwardInputS8Fn conv_bwd_in_;
  kernels::Conv2dBackwardWeightsS8Fn conv_bwd_w_;
  kernels::RequantizeS32S8Fn requantize_;
  kernels::RequantizeMaxS32S8Fn requantize_max_;
  kernels::UpdateWeightsS8Fn update_;
  kernels::ReluForwardS8Fn relu_fwd_;
  kernels::ReluBackwardS8Fn relu_bwd_;
  kernels::MaxPool2x2ForwardS8Fn pool_fwd_;
  kernels::MaxPool2x2BackwardS8Fn pool_bwd_;
  kernels::MaxPoolPointsForwardS8Fn points_fwd_;
  kernels::MaxPoolPointsBackwardS8Fn points_bwd_;
};

}  // namespace zt::nn
