// A BatchSource that fills the next batch of another source on a background thread while the
// current one trains, so reading from disk (data/samples.hpp) and preparing a batch overlap
// compute. One batch ahead, double-buffered: after batch i is taken, batch i + 1 of the same kind
// (FP32 or raw) is filled into the other of two buffers, so take() hands batch i out where it is
// (no copy; valid until the next call) while i + 1 is prepared. Every batch is a function of
// (epoch, index) of the inner source, so the batches, and the trained weights, are the same with
// or without it.
#pragma once

#include <memory>

#include "zotrain/run/engine.hpp"

namespace zt::run {

// batch: the most samples one fill() returns (the batch size).
std::unique_ptr<BatchSource> prefetched(std::unique_ptr<BatchSource> inner, int batch);

// Bytes a prefetched source of that batch holds beside its inner source: its two buffers of FP32
// batches, or of raw ones (int8 images), with their labels.
std::size_t prefetch_bytes(std::size_t sample_floats, int batch, bool raw);

}  // namespace zt::run
