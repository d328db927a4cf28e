// The buffer plan of int8 training, decided and allocated once for the batch size (one Arena).
// Integer-only, like the int8 trainer.
//
// Layers before the backprop segment write into two ping-pong buffers; the segment's input and every output from there on are
// kept; one int32 accumulator, one int32 gradient and two int8 error buffers are shared by all
// layers (each layer requantises or updates before the next one runs).
//
// Lean tail (Int8PlanOptions::lean, the default): when a network's per-point stack ends in
// PointLinear → ReLU → max over points and that tail lies wholly in the ZO part (PointNet,
// C ≥ 5) or wholly in the backprop part (C ≤ 4), the tail's product streams in chunks of rows through a chunk-sized int32 accumulator, keeping the
// batch's largest magnitude (for the requantisation shift) and each (sample, channel)'s largest
// int32 value. Requantisation (RoundShift with one shift for the tensor), clamping and ReLU are
// monotone non-decreasing, so max-pooling commutes with them: the pool is ReLU(requantise(max))
// — bit-identical to the whole-batch forward — and neither the [B, N, C] int32 accumulator nor
// the int8 output of the widest layer ever exists. The lower per-point products that span more
// than one chunk are formed in two passes over chunks — statistics, extremes and the largest
// magnitude first, then each chunk again, normalised and requantised with the tensor's shift
// into the whole int8 output — so their int32 products are never whole either. In the backprop part the tail's backward
// recomputes each chunk's output from the kept input with the forward's shift and BatchNorm
// statistics (the same bits), finds each (sample, channel)'s first maximum as the pool's backward
// does, and forms the error of the product chunk by chunk (two passes with BatchNorm: its
// backward needs the tensor's largest error for one shift); only the error into the tail's input,
// [B, N, K], is whole. Bit-identical to the whole-batch backward; it costs up to two more
// products of the widest layer per step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "zotrain/core/arena.hpp"
#include "zotrain/nn/int8_net.hpp"

namespace zt::train {

// Lean tail: int32 elements of one chunk of the streamed product (4 MiB), and at most this many
// rows (127² · rows < 2^31: a chunk's int32 weight gradient is exact).
inline constexpr std::size_t kTailChunkElems = std::size_t{1} << 20;
inline constexpr std::size_t kTailMaxRows = std::size_t{1} << 17;

struct Int8PlanOptions {
  int partition = 0;  // C
  int batch_size = 256;
  int threads = 1;    // kernel scratch is sized for them
  bool lean = true;   // stream the per-point tail (see above)
  std::size_t tail_chunk_elems = kTailChunkElems;  // tests use small chunks
};

class Int8Plan {
 public:
  Int8Plan(const nn::Int8Net& net, const Int8PlanOptions& options);

  int seg = 0;                // first layer of the backprop segment
  int keep_from = 0;          // outputs from here on have their own buffer
  int tail = -1;              // lean tail: its PointLinear (−1 = none)
  bool tail_bp = false;       // the lean tail is in the backprop part
  std::size_t tail_rows = 0;  // rows per streamed chunk
  // Per layer: rows per chunk of a lower per-point product formed in two streamed passes
  // (statistics and shift, then output), 0 = formed whole.
  std::vector<std::size_t> chunk_rows;

  std::int8_t* output(int i) const;  // layer i's output (a ping-pong buffer before keep_from)
  std::int32_t* acc() const { return arena_.get<std::int32_t>(h_acc_); }
  std::int32_t* grad() const { return arena_.get<std::int32_t>(h_grad_); }
  std::int8_t* error(int k) const { return arena_.get<std::int8_t>(h_err_[k]); }
  void* scratch() const { return h_scratch_ >= 0 ? arena_.get<std::int8_t>(h_scratch_) : nullptr; }
  std::int8_t* plus_logits() const {
    return h_plus_ >= 0 ? arena_.get<std::int8_t>(h_plus_) : nullptr;
  }
  std::int32_t* tail_max() const { return arena_.get<std::int32_t>(h_tail_max_); }  // [B, C]
  // Streamed normalised PointLinears (docs/design.md §5.8): per channel Σy, Σy² [2C] and
  // min, max of y [2C] (C: the widest such layer); null otherwise.
  std::int64_t* tail_norm_sums() const {
    return h_tail_sums_ >= 0 ? arena_.get<std::int64_t>(h_tail_sums_) : nullptr;
  }
  std::int32_t* tail_norm_extremes() const {
    return h_tail_ext_ >= 0 ? arena_.get<std::int32_t>(h_tail_ext_) : nullptr;
  }
  // Lean tail in the backprop part: one chunk's recomputed product, output and error, and the
  // layer's weight gradient summed over chunks.
  std::int32_t* tail_chunk_product() const { return arena_.get<std::int32_t>(h_tail_prod_); }
  std::int8_t* tail_chunk_output() const { return arena_.get<std::int8_t>(h_tail_y_); }
  std::int8_t* tail_chunk_error() const { return arena_.get<std::int8_t>(h_tail_e_); }
  std::int64_t* tail_grad() const { return arena_.get<std::int64_t>(h_tail_grad_); }
  const Arena& arena() const { return arena_; }

 private:
  Arena arena_;
  std::vector<int> h_kept_;  // per layer: handle of its kept output, −1 = ping-pong
  int h_pingpong_[2] = {-1, -1}, h_acc_ = -1, h_grad_ = -1, h_err_[2] = {-1, -1},
      h_scratch_ = -1, h_plus_ = -1, h_tail_max_ = -1, h_tail_sums_ = -1, h_tail_ext_ = -1,
      h_tail_prod_ = -1, h_tail_y_ = -1, h_tail_e_ = -1, h_tail_grad_ = -1;
};

}  // namespace zt::train
