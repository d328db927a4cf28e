// Streaming an Int8Net's per-point stack under the lean plan: train/int8_plan.hpp decides what
// streams and in what chunks (the lean tail, two-pass lower products, deep streaming) and holds
// the buffers; this runs it, bit-identical to the whole-batch layers. The int8 counterpart of
// train/point_stack.hpp. Integer-only, like the int8 trainer.
#pragma once

#include <cstddef>
#include <cstdint>

#include "zotrain/nn/int8_net.hpp"
#include "zotrain/train/int8_plan.hpp"

namespace zt::train {

class Int8PointStackStreamer {
 public:
  Int8PointStackStreamer(nn::Int8Net& net, const Int8Plan& plan);
  // Layer 0's input of the batch (read by a streamed first layer); valid until the step ends.
  void set_input(const std::int8_t* x) { input_ = x; }

  // Forward, n samples, ex the exponent of the input; each returns its output's exponent.
  // The tail [plan.tail, plan.tail + 2] (PointLinear → ReLU → pool) into the pool's output,
  // keeping the requantisation shift for backward_tail.
  int forward_tail(int n, int ex);
  // PointLinear layer i (plan.chunk_rows[i] > 0) in two passes over chunks of rows.
  int forward_points(int i, int n, int ex);

  // Backward (the tail in the backprop part): from the error of the pool's output, its chunks
  // recomputed as the last forward_tail formed them; e_in the error of the tail's input (null =
  // none). Updates the tail's weights with b_bp.
  void backward_tail(int n, const std::int8_t* e_pool, std::int8_t* e_in, int b_bp);
  // Deep streaming: PointLinear layer i's backward chunk by chunk from the error of its output
  // e_out (with BatchNorm turned into its product's, in place); updates its weights.
  void backward_points(int i, int n, std::int8_t* e_out, std::int8_t* e_in, int b_bp);

 private:
  const std::int8_t* act(int i) const;  // output of layer i (i = −1: the input)
  // Rows [r0, r0 + nr) of layer i's input: act(i − 1), or a ReLU read on the fly (relu_chunk).
  const std::int8_t* input_rows(int i, std::size_t r0, std::size_t nr);
  // Rows [r0, r0 + nr) of PointLinear layer i's int8 output into out: its product (through
  // prod), BatchNorm with the layer's current statistics, RoundShift by shift.
  void point_rows(int i, std::size_t r0, std::size_t nr, int shift, std::int32_t* prod,
                  std::int8_t* out);

  nn::Int8Net& net_;
  const Int8Plan& plan_;
  const std::int8_t* input_ = nullptr;
  int tail_shift_ = 0;  // the last forward_tail's requantisation shift of its product
};

}  // namespace zt::train
