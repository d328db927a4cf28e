// Portable fast path of the Gaussian perturbation and its dispatch.
// Blocks of 32 elements (16 Box–Muller pairs) are computed by a 16-lane branch-free loop that GCC
// vectorises at -O3 (AVX2/AVX-512 on x86-64, NEON on aarch64); it inlines the same definition as
// the reference (perturb_internal.hpp), so results are bit-identical. Partial blocks at the ends
// of a range are computed whole into a scratch block and copied out. With OpenMP, work is split
// into fixed groups of kGroupBlocks blocks, so the bits never depend on the thread count.

#include <algorithm>
#include <cstring>

#include "perturb_internal.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/kernels/perturb.hpp"

#ifdef ZT_OPENMP
#include <omp.h>
#endif

namespace zt::kernels {

using namespace perturb_detail;

namespace {

// Blocks per parallel work item (2048 elements). A power of two dividing 2^28, so the high half
// of the pair index (and with it the keys) is constant within a group.
constexpr std::uint64_t kGroupBlocks = 64;
// Below this many elements a call stays on the calling thread (a pass over 16k elements costs
// a few µs, comparable with waking a team).
constexpr std::size_t kParallelMin = 16384;

Keys keys_for_block(std::uint64_t seed, std::uint64_t stream, std::uint64_t block) {
  return derive_keys(seed, stream, static_cast<std::uint32_t>((block * kPairsPerBlock) >> 32));
}

// Lanes per vector step: kW pairs = kW/16 blocks, computed in lockstep (see perturb_internal.hpp).
#if defined(__AVX512F__)
#ifndef ZT_PERTURB_W
#define ZT_PERTURB_W 64
#endif
constexpr int kW = ZT_PERTURB_W;  // 64: 4 × zmm
#elif defined(__AVX__)
constexpr int kW = 32;  // 4 × ymm
#else
constexpr int kW = 16;  // 4 × NEON q-register on aarch64; scalar VFP on armhf (IEEE)
#endif

template <int W>
inline typename Vec<W>::U lane_counters(std::uint32_t c0) {
  typename Vec<W>::U c;
  for (int q = 0; q < W; ++q) c[q] = c0 + static_cast<std::uint32_t>(q);
  return c;
}

// W/16 consecutive full blocks starting at pair counter c0; out points at their first element.
// The update is done in 16-lane pieces with `scale` broadcast once into a 16-lane vector: a
// scalar operand of a W-lane generic vector (W > the native width) makes GCC build the splat with
// W scalar stack stores and reload it, which stalls store forwarding on every step.
template <int W, bool kFill>
inline void vec_blocks(float* __restrict out, const Keys& k, std::uint32_t c0,
                       typename Vec<kPairsPerBlock>::F scale) {
  using L = Vec<W>;
  using P = Vec<kPairsPerBlock>::F;
  const PairT<L> z = gaussian_pair<L>(k, lane_counters<W>(c0));
  constexpr std::size_t kHalf = kPairsPerBlock * sizeof(float);
  for (int blk = 0; blk < W / kPairsPerBlock; ++blk) {
    P z0, z1;
    std::memcpy(&z0, reinterpret_cast<const char*>(&z.z0) + blk * kHalf, kHalf);
    std::memcpy(&z1, reinterpret_cast<const char*>(&z.z1) + blk * kHalf, kHalf);
    float* o = out + blk * kBlock;
    if constexpr (!kFill) {
      P lo, hi;
      std::memcpy(&lo, o, kHalf);
      std::memcpy(&hi, o + kPairsPerBlock, kHalf);
      z0 = lo + scale * z0;
      z1 = hi + scale * z1;
    }
    std::memcpy(o, &z0, kHalf);
    std::memcpy(o + kPairsPerBlock, &z1, kHalf);
  }
}

// Elements [first, last) of block `block` (0 ≤ first < last ≤ 32); out points at element `first`.
template <bool kFill>
void partial_block(float* out, std::uint64_t seed, std::uint64_t stream, std::uint64_t block,
                   unsigned first, unsigned last, float scale) {
  alignas(64) float z[kBlock];
  const Keys k = keys_for_block(seed, stream, block);
  vec_blocks<kPairsPerBlock, true>(z, k, static_cast<std::uint32_t>(block * kPairsPerBlock),
                                    Vec<kPairsPerBlock>::F{});
  for (unsigned e = first; e < last; ++e) {
    if constexpr (kFill) {
      out[e - first] = z[e];
    } else {
      out[e - first] = out[e - first] + scale * z[e];
    }
  }
}

// Full blocks [b_begin, b_end) with constant keys; out points at element 32·b_begin.
template <bool kFill>
void full_blocks(float* out, std::uint64_t seed, std::uint64_t stream, std::uint64_t b_begin,
                 std::uint64_t b_end, float scale) {
  constexpr std::uint64_t kStep = kW / kPairsPerBlock;
  const Keys k = keys_for_block(seed, stream, b_begin);
  const Vec<kPairsPerBlock>::F sv = Vec<kPairsPerBlock>::F{} + scale;
  std::uint64_t b = b_begin;
  for (; b + kStep <= b_end; b += kStep, out += kStep * kBlock) {
    vec_blocks<kW, kFill>(out, k, static_cast<std::uint32_t>(b * kPairsPerBlock), sv);
  }
  for (; b < b_end; ++b, out += kBlock) {
    vec_blocks<kPairsPerBlock, kFill>(out, k, static_cast<std::uint32_t>(b * kPairsPerBlock), sv);
  }
}

template <bool kFill>
void run(float* x, std::size_t n, std::uint64_t seed, std::uint64_t stream, std::uint64_t offset,
         float scale) {
  if (n == 0) return;
  ZT_DCHECK(offset + n >= offset);  // the index range must not wrap
  const std::uint64_t end = offset + n;
  const std::uint64_t b_first = offset / kBlock;
  const std::uint64_t b_last = (end - 1) / kBlock;
  const unsigned head_from = static_cast<unsigned>(offset % kBlock);
  const unsigned tail_to = static_cast<unsigned>((end - 1) % kBlock) + 1;
  if (b_first == b_last) {
    partial_block<kFill>(x, seed, stream, b_first, head_from, tail_to, scale);
    return;
  }
  // Full blocks [fb, lb); the first and last blocks may be partial.
  std::uint64_t fb = b_first, lb = b_last + 1;
  if (head_from != 0) {
    partial_block<kFill>(x, seed, stream, b_first, head_from, kBlock, scale);
    ++fb;
  }
  if (tail_to != kBlock) {
    partial_block<kFill>(x + (b_last * kBlock - offset), seed, stream, b_last, 0, tail_to, scale);
    --lb;
  }
  if (fb >= lb) return;
  float* base = x + (fb * kBlock - offset);  // element 32·fb
  const std::uint64_t g_first = fb / kGroupBlocks;
  const std::uint64_t g_last = (lb - 1) / kGroupBlocks;
  const auto n_groups = static_cast<std::int64_t>(g_last - g_first + 1);
  auto do_group = [&](std::int64_t t) {
    const std::uint64_t g = g_first + static_cast<std::uint64_t>(t);
    const std::uint64_t b0 = std::max(fb, g * kGroupBlocks);
    const std::uint64_t b1 = std::min(lb, (g + 1) * kGroupBlocks);
    full_blocks<kFill>(base + (b0 - fb) * kBlock, seed, stream, b0, b1, scale);
  };
#ifdef ZT_OPENMP
  if (n >= kParallelMin && !omp_in_parallel() && omp_get_max_threads() > 1) {
#pragma omp parallel for schedule(static)
    for (std::int64_t t = 0; t < n_groups; ++t) do_group(t);
    return;
  }
#endif
  for (std::int64_t t = 0; t < n_groups; ++t) do_group(t);
}

}  // namespace

void perturb_gaussian_f32_portable(float* theta, std::size_t n, std::uint64_t seed,
                                   std::uint64_t stream, std::uint64_t offset, float scale) {
  run<false>(theta, n, seed, stream, offset, scale);
}

void fill_gaussian_f32_portable(float* out, std::size_t n, std::uint64_t seed,
                                std::uint64_t stream, std::uint64_t offset) {
  run<true>(out, n, seed, stream, offset, 0.0f);
}

PerturbGaussianF32Fn select_perturb_gaussian_f32(Isa isa) {
  switch (isa) {
    case Isa::kReference: return perturb_gaussian_f32_ref;
    case Isa::kPortable:
    case Isa::kNeon:
    case Isa::kNeonDot:  // no NEON intrinsics: the portable loop vectorises to NEON already
      return perturb_gaussian_f32_portable;
  }
  return perturb_gaussian_f32_ref;
}

FillGaussianF32Fn select_fill_gaussian_f32(Isa isa) {
  switch (isa) {
    case Isa::kReference: return fill_gaussian_f32_ref;
    case Isa::kPortable:
    case Isa::kNeon:
    case Isa::kNeonDot: return fill_gaussian_f32_portable;
  }
  return fill_gaussian_f32_ref;
}

}  // namespace zt::kernels
