// The buffer plan of FP32 training: which layer outputs get a buffer of their own, which share
// ping-pong buffers, what the lean plan streams and in what chunks, and every buffer's size —
// decided once from the model's description and the options and reserved in one Arena, beside the
// buffers of the trainer's other components (train/fp32_trainer.hpp), which reserve theirs in the
// same arena before allocate(); a training step only reads the plan.
//
// Kept and ping-pong: layers before the backprop segment write into two ping-pong buffers (a
// ZO forward is inference: an activation is dead once the next layer has read it); the
// segment's input and every output from there on are kept for backprop. With
// BpActivations::kAverage there are two sets of kept buffers (the + and the − pass).
//
// Forward chunks: the per-sample layers before the first layer that prefers the whole batch run
// on chunks of kForwardChunk samples, one per thread; outputs that only the next chunked layer
// reads live in small per-thread buffers (local), the last chunked layer writes [B, ...].
//
// Lean plan (MemoryPlan::kLean): when the model starts with a per-point stack
// (nn/network_desc.hpp) wholly in the ZO part, the stack streams chunks of chunk_points points
// of all samples through two chunk buffers into the pool; with backprop into the stack
// (C ≤ 4 for PointNet, one set of activations), only its tail PointLinear → BatchNorm → ReLU →
// pool streams, and backward recomputes it in chunks of tail_rows rows (train/point_stack.hpp).
#pragma once

#include <cstddef>
#include <vector>

#include "zotrain/config/options.hpp"
#include "zotrain/core/arena.hpp"
#include "zotrain/nn/model.hpp"

namespace zt::train {

using config::BpActivations;
using config::MemoryPlan;

inline constexpr int kForwardChunk = 4;
// Lean plan: the automatic point chunk keeps its widest activation near this many floats.
inline constexpr std::size_t kLeanChunkFloats = std::size_t{1} << 20;

struct Fp32PlanOptions {
  int partition = 0;  // C
  int batch_size = 32;
  MemoryPlan plan = MemoryPlan::kLean;
  BpActivations bp_activations = BpActivations::kMinus;
  bool adam = false;     // reserve Adam's m and v for the backprop parameters
  int chunk_points = 0;  // lean: points per chunk, 0 = automatic (see Fp32TrainerOptions)
};

class Fp32Plan {
 public:
  // Decides and reserves the plan's buffers; the arena is allocated by allocate(), once every
  // other component has reserved its own (no buffer can be read before).
  Fp32Plan(nn::Model& model, const Fp32PlanOptions& options);
  void allocate() { arena_.allocate(); }

  // ---- the decisions (read-only after construction) ----
  int seg = 0;            // first layer of the backprop segment
  int keep_from = 0;      // outputs from here on have their own buffer
  int sets = 1;           // activation sets (2: BpActivations::kAverage with ZO and BP)
  int chunked_until = 0;  // layers [0, chunked_until) run on sample chunks
  int local_until = 0;    // layers [0, local_until) write per-thread chunk buffers
  int threads = 1;        // forward threads (scratch slots)
  std::size_t chunk_scratch_floats = 0;  // per thread
  // Lean plan.
  bool lean = false;       // the stack (or its tail) streams
  bool lean_bp = false;    // backprop into the stack: only its tail streams
  bool fuse_tail = false;  // the stack ends BatchNorm → ReLU → pool (train/point_stack.hpp)
  int pool = -1, stream_from = 0, points = 0, in_channels = 0, chunk_points = 0;
  std::vector<int> stack_bn;  // BatchNorm layers that stream, in order
  std::size_t tail_rows = 0;  // lean_bp: rows per backward chunk

  // ---- the buffers ----
  // Layers whose forward streams in chunks (the stack from stream_from, and the pool).
  bool streamed_layer(int i) const { return lean && i >= stream_from && i <= pool; }
  float* layer_output(int i, int set) const;
  const float* layer_input(const float* x, int i, int set) const;  // x: the batch
  // A sample chunk's slice of layer i's output (or of its input), starting at sample b0.
  float* chunk_output(int i, int set, int b0, int thread) const;
  const float* chunk_input(const float* x, int i, int set, int b0, int thread) const;
  float* error(int k) const { return arena_.get(h_err_[k]); }  // k = 0, 1: backward ping-pong
  float* dlogits(int set) const { return arena_.get(h_dlogits_[set]); }
  float* grad() const { return h_grad_ >= 0 ? arena_.get(h_grad_) : nullptr; }
  float* adam_m() const { return h_adam_m_ >= 0 ? arena_.get(h_adam_m_) : nullptr; }
  float* adam_v() const { return h_adam_v_ >= 0 ? arena_.get(h_adam_v_) : nullptr; }
  float* scratch() const { return h_scratch_ >= 0 ? arena_.get(h_scratch_) : nullptr; }
  // Lean: the stack's chunk input [B, P, C0], its two ping-pong chunks [B, P, widest], the
  // pool's running extremes (max, min [B, C]); backward chunks and the tail's argmax record.
  float* chunk_in() const { return arena_.get(h_chunk_in_); }
  float* chunk(int k) const { return arena_.get(h_chunk_[k]); }
  float* extremes() const { return arena_.get(h_extremes_); }
  float* tail(int k) const { return arena_.get(h_tail_[k]); }
  float* tail_argmax() const { return arena_.get(h_tail_argmax_); }

  const Arena& arena() const { return arena_; }
  Arena& arena() { return arena_; }  // for the other components' reservations

 private:
  nn::Model& model_;
  Arena arena_;
  std::size_t pp_per_sample_ = 0;     // ping-pong stride per sample
  std::size_t local_per_sample_ = 0;  // per-thread chunk buffer
  std::size_t local_floats_ = 0;
  std::vector<int> h_kept_[2];  // per layer, handle of its kept output (−1 if ping-pong)
  int h_pingpong_[2] = {-1, -1}, h_err_[2] = {-1, -1}, h_scratch_ = -1, h_dlogits_[2] = {-1, -1};
  int h_grad_ = -1, h_adam_m_ = -1, h_adam_v_ = -1, h_local_ = -1;
  int h_chunk_in_ = -1, h_chunk_[2] = {-1, -1}, h_extremes_ = -1;
  int h_tail_[2] = {-1, -1}, h_tail_argmax_ = -1;
};

}  // namespace zt::train
