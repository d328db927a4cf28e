// Internal to the perturb family: how a range [offset, offset + n) is cut into the 32-element
// blocks of perturb_internal.hpp and spread over threads, shared by the portable path
// (perturb.cpp) and the NEON path (perturb_neon.cpp), which differ only in how they compute
// whole blocks. Partial blocks at the ends of a range are computed whole into a scratch block and
// copied out. With OpenMP, work is split into fixed groups of kGroupBlocks blocks, so the bits
// never depend on the thread count (nor on the path: each block is bit-exact by construction).
//
// A Gen policy provides:
//   Scale, splat(float)      the perturbation scale in the form the block code wants it
//   kStep                    blocks computed together by step()
//   step<P>(dst, k, c0, scale, prev)   kStep consecutive full blocks starting at pair counter c0
//   block<P>(dst, k, c0, scale, prev)  one full block
// where P (a Pass) says what is written at dst (prev: kUpdateTee's scale of the old direction).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#ifdef ZT_OPENMP
#include <omp.h>
#endif

#include "../chunked_parallel.hpp"
#include "perturb_internal.hpp"
#include "zotrain/core/error.hpp"

namespace zt::kernels::perturb_detail {

// What a pass writes. kPerturb: x = x + scale · z, the product rounded on its own; kFill: x = z;
// kTee: both, x = x + scale · z and z copied to the second array (a cached direction drawn by
// its first perturbation: one pass where fill and add were two); kUpdateTee: x = (x + prev · z)
// + scale · z' with z the direction the second array holds and z' the new one, stored over it
// (the deferred update of one step's cached direction and the next step's first perturbation:
// add_scaled_f32 then kTee in one pass, each product and sum rounded as there).
enum class Pass { kPerturb, kFill, kTee, kUpdateTee };

// Where a pass writes: x (θ or the fill's output) and, for kTee, z at the same element offsets.
struct Dst {
  float* x;
  float* z = nullptr;
  Dst operator+(std::size_t n) const { return {x + n, z != nullptr ? z + n : nullptr}; }
};

// Blocks per parallel work item (2048 elements). A power of two dividing 2^28, so the high half
// of the pair index (and with it the keys) is constant within a group.
inline constexpr std::uint64_t kGroupBlocks = 64;
// Below this many elements a call stays on the calling thread (a pass over 16k elements costs
// a few µs, comparable with waking a team).
inline constexpr std::size_t kParallelMin = 16384;

inline Keys keys_for_block(std::uint64_t seed, std::uint64_t stream, std::uint64_t block) {
  return derive_keys(seed, stream, static_cast<std::uint32_t>((block * kPairsPerBlock) >> 32));
}

template <class Gen>
struct Driver {
  // Elements [first, last) of block `block` (0 ≤ first < last ≤ 32); out points at `first`.
  template <Pass P>
  static void partial_block(Dst out, std::uint64_t seed, std::uint64_t stream,
                            std::uint64_t block, unsigned first, unsigned last, float scale,
                            float prev) {
    alignas(64) float z[kBlock];
    const Keys k = keys_for_block(seed, stream, block);
    Gen::template block<Pass::kFill>(Dst{z}, k, static_cast<std::uint32_t>(block * kPairsPerBlock),
                                     Gen::splat(0.0f), Gen::splat(0.0f));
    for (unsigned e = first; e < last; ++e) {
      if constexpr (P == Pass::kUpdateTee)
        out.x[e - first] = out.x[e - first] + prev * out.z[e - first];
      if constexpr (P == Pass::kFill) {
        out.x[e - first] = z[e];
      } else {
        out.x[e - first] = out.x[e - first] + scale * z[e];
      }
      if constexpr (P == Pass::kTee || P == Pass::kUpdateTee) out.z[e - first] = z[e];
    }
  }

  // Full blocks [b_begin, b_end) with constant keys; out points at element 32·b_begin.
  template <Pass P>
  static void full_blocks(Dst out, std::uint64_t seed, std::uint64_t stream,
                          std::uint64_t b_begin, std::uint64_t b_end, float scale, float prev) {
    constexpr std::uint64_t kStep = Gen::kStep;
    const Keys k = keys_for_block(seed, stream, b_begin);
    const typename Gen::Scale sv = Gen::splat(scale), pv = Gen::splat(prev);
    std::uint64_t b = b_begin;
    for (; b + kStep <= b_end; b += kStep, out = out + kStep * kBlock)
      Gen::template step<P>(out, k, static_cast<std::uint32_t>(b * kPairsPerBlock), sv, pv);
    for (; b < b_end; ++b, out = out + kBlock)
      Gen::template block<P>(out, k, static_cast<std::uint32_t>(b * kPairsPerBlock), sv, pv);
  }

  // Elements [offset, offset + n) of (seed, stream); x (and x.z) point at element `offset`.
  template <Pass P>
  static void run(Dst x, std::size_t n, std::uint64_t seed, std::uint64_t stream,
                  std::uint64_t offset, float scale, float prev = 0.0f) {
    if (n == 0) return;
    ZT_DCHECK(offset + n >= offset);  // the index range must not wrap
    const std::uint64_t end = offset + n;
    const std::uint64_t b_first = offset / kBlock;
    const std::uint64_t b_last = (end - 1) / kBlock;
    const unsigned head_from = static_cast<unsigned>(offset % kBlock);
    const unsigned tail_to = static_cast<unsigned>((end - 1) % kBlock) + 1;
    if (b_first == b_last) {
      partial_block<P>(x, seed, stream, b_first, head_from, tail_to, scale, prev);
      return;
    }
    // Full blocks [fb, lb); the first and last blocks may be partial.
    std::uint64_t fb = b_first, lb = b_last + 1;
    if (head_from != 0) {
      partial_block<P>(x, seed, stream, b_first, head_from, kBlock, scale, prev);
      ++fb;
    }
    if (tail_to != kBlock) {
      partial_block<P>(x + (b_last * kBlock - offset), seed, stream, b_last, 0, tail_to, scale,
                       prev);
      --lb;
    }
    if (fb >= lb) return;
    const Dst base = x + (fb * kBlock - offset);  // element 32·fb
    const std::uint64_t g_first = fb / kGroupBlocks;
    const std::uint64_t g_last = (lb - 1) / kGroupBlocks;
    const auto n_groups = static_cast<std::int64_t>(g_last - g_first + 1);
    auto do_group = [&](std::int64_t t) {
      const std::uint64_t g = g_first + static_cast<std::uint64_t>(t);
      const std::uint64_t b0 = std::max(fb, g * kGroupBlocks);
      const std::uint64_t b1 = std::min(lb, (g + 1) * kGroupBlocks);
      full_blocks<P>(base + (b0 - fb) * kBlock, seed, stream, b0, b1, scale, prev);
    };
#ifdef ZT_OPENMP
    if (detail::go_parallel(static_cast<std::size_t>(n), static_cast<std::size_t>(kParallelMin))) {
#pragma omp parallel for schedule(static)
      for (std::int64_t t = 0; t < n_groups; ++t) do_group(t);
      return;
    }
#endif
    for (std::int64_t t = 0; t < n_groups; ++t) do_group(t);
  }
};

}  // namespace zt::kernels::perturb_detail

// The public functions of a path (perturb.hpp: perturb_gaussian_f32_<path>,
// perturb_fill_gaussian_f32_<path>, update_perturb_fill_gaussian_f32_<path>,
// fill_gaussian_f32_<path>) on its Driver<Gen> D, at namespace zt::kernels.
#define ZT_PERTURB_F32_PATH(path, D)                                                              \
  void perturb_gaussian_f32_##path(float* theta, std::size_t n, std::uint64_t seed,               \
                                   std::uint64_t stream, std::uint64_t offset, float scale) {     \
    D::run<perturb_detail::Pass::kPerturb>(perturb_detail::Dst{theta}, n, seed, stream, offset,   \
                                           scale);                                                \
  }                                                                                               \
  void perturb_fill_gaussian_f32_##path(float* theta, float* z, std::size_t n, std::uint64_t seed, \
                                        std::uint64_t stream, std::uint64_t offset, float scale) { \
    D::run<perturb_detail::Pass::kTee>(perturb_detail::Dst{theta, z}, n, seed, stream, offset,    \
                                       scale);                                                    \
  }                                                                                               \
  void update_perturb_fill_gaussian_f32_##path(float* theta, float* z, std::size_t n,             \
                                               std::uint64_t seed, std::uint64_t stream,          \
                                               std::uint64_t offset, float prev, float scale) {   \
    D::run<perturb_detail::Pass::kUpdateTee>(perturb_detail::Dst{theta, z}, n, seed, stream,      \
                                             offset, scale, prev);                                \
  }                                                                                               \
  void fill_gaussian_f32_##path(float* out, std::size_t n, std::uint64_t seed,                    \
                                std::uint64_t stream, std::uint64_t offset) {                     \
    D::run<perturb_detail::Pass::kFill>(perturb_detail::Dst{out}, n, seed, stream, offset, 0.0f); \
  }
