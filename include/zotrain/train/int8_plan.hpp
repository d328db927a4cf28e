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
//
// Deep streaming (when that whole int32 input error would exceed
// Int8PlanOptions::deep_stream_bytes, e.g. PointNet at batch 256): no int32 tensor of the
// backward is whole either. Each streamed per-point product's input error is formed twice, chunk
// by chunk — its largest magnitude first, then requantised with that shift into the int8 error
// (for the tail this recomputes each chunk's output and error once more) — and its weight
// gradient is summed over chunks. A ReLU between two kept per-point products stores nothing:
// its readers (the next product, forward and backward) apply max(0, ·) to a chunk of its input
// (relu_chunk), and its backward needs only that input. Same bits again.
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
// Deep streaming from this size of the tail's whole int32 input error (32 MiB: PointNet above
// batch 64 at 1,024 points); below it the whole tensors are kept, which is faster.
inline constexpr std::size_t kDeepStreamBytes = std::size_t{32} << 20;

struct Int8PlanOptions {
  int partition = 0;  // C
  int batch_size = 256;
  int threads = 1;    // kernel scratch is sized for them
  bool lean = true;   // stream the per-point tail (see above)
  std::size_t tail_chunk_elems = kTailChunkElems;  // tests use small chunks
  std::size_t deep_stream_bytes = kDeepStreamBytes;  // tests use 0 (always deep)
  // Layer-wise weight perturbation (Poor Man's Training): a copy of the largest ZO layer's
  // weights, restored after each of its probes (exact, where ±1 clamped at ±127 is not).
  bool layer_backup = false;
};

// The plan reserves its buffers when constructed; the training components reserve theirs in
// arena() (train/int8_nodes.hpp, train/int8_direction.hpp); allocate() then allocates
// them all at once, before the first step.
class Int8Plan {
 public:
  Int8Plan(const nn::Int8Net& net, const Int8PlanOptions& options);
  void allocate() { arena_.allocate(); }

  int seg = 0;                // first layer of the backprop segment
  int keep_from = 0;          // outputs from here on have their own buffer
  int tail = -1;              // lean tail: its PointLinear (−1 = none)
  bool tail_bp = false;       // the lean tail is in the backprop part
  std::size_t tail_rows = 0;  // rows per streamed chunk
  // Per layer: rows per chunk of a lower per-point product formed in two streamed passes
  // (statistics and shift, then output), 0 = formed whole.
  std::vector<std::size_t> chunk_rows;
  bool deep = false;  // deep streaming (see above)
  // Per layer: a ReLU whose output is never stored (deep streaming); output(i) is null.
  std::vector<std::uint8_t> relu_on_read;

  // Layer i's output (a ping-pong buffer before keep_from; null for a ReLU read on the fly).
  std::int8_t* output(int i) const;
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
  // The tail's BatchNorm backward coefficients [3C] (kernels::BatchNormBackward), in the
  // backprop part; null otherwise.
  std::int64_t* tail_norm_coef() const {
    return h_tail_coef_ >= 0 ? arena_.get<std::int64_t>(h_tail_coef_) : nullptr;
  }
  // Lean tail in the backprop part: one chunk's recomputed product, output and error, and a
  // streamed layer's weight gradient summed over chunks.
  std::int32_t* tail_chunk_product() const { return arena_.get<std::int32_t>(h_tail_prod_); }
  std::int8_t* tail_chunk_output() const { return arena_.get<std::int8_t>(h_tail_y_); }
  std::int8_t* tail_chunk_error() const { return arena_.get<std::int8_t>(h_tail_e_); }
  std::int64_t* grad_sum() const { return arena_.get<std::int64_t>(h_grad_sum_); }
  // Deep streaming: one chunk of a ReLU's output formed on the fly.
  std::int8_t* relu_chunk() const { return arena_.get<std::int8_t>(h_relu_chunk_); }
  std::int8_t* layer_backup() const { return arena_.get<std::int8_t>(h_backup_); }
  const Arena& arena() const { return arena_; }
  Arena& arena() { return arena_; }  // to reserve in, before allocate()

 private:
  Arena arena_;
  std::vector<int> h_kept_;  // per layer: handle of its kept output, −1 = ping-pong
  int h_pingpong_[2] = {-1, -1}, h_acc_ = -1, h_grad_ = -1, h_err_[2] = {-1, -1},
      h_scratch_ = -1, h_plus_ = -1, h_tail_max_ = -1, h_tail_sums_ = -1, h_tail_ext_ = -1,
      h_tail_prod_ = -1, h_tail_y_ = -1, h_tail_e_ = -1, h_grad_sum_ = -1, h_relu_chunk_ = -1,
      h_backup_ = -1, h_tail_coef_ = -1;
};

}  // namespace zt::train
