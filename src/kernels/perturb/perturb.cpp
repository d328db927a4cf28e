// Portable fast path of the Gaussian perturbation and its dispatch.
// Blocks of 32 elements (16 Box–Muller pairs) are computed by a 16-lane branch-free loop that GCC
// vectorises at -O3 (AVX2/AVX-512 on x86-64, NEON on aarch64); it inlines the same definition as
// the reference (perturb_internal.hpp), so results are bit-identical. The range is cut into
// blocks and threads by perturb_driver.hpp.

#include <cstring>

#include "../select_isa.hpp"
#include "perturb_driver.hpp"
#include "perturb_internal.hpp"
#include "zotrain/kernels/perturb.hpp"

namespace zt::kernels {

using namespace perturb_detail;

namespace {

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
template <int W, Pass P>
inline void vec_blocks(Dst out, const Keys& k, std::uint32_t c0,
                       typename Vec<kPairsPerBlock>::F scale,
                       typename Vec<kPairsPerBlock>::F prev) {
  using L = Vec<W>;
  using F = Vec<kPairsPerBlock>::F;
  const PairT<L> z = gaussian_pair<L>(k, lane_counters<W>(c0));
  constexpr std::size_t kHalf = kPairsPerBlock * sizeof(float);
  for (int blk = 0; blk < W / kPairsPerBlock; ++blk) {
    F z0, z1;
    std::memcpy(&z0, reinterpret_cast<const char*>(&z.z0) + blk * kHalf, kHalf);
    std::memcpy(&z1, reinterpret_cast<const char*>(&z.z1) + blk * kHalf, kHalf);
    float* o = out.x + blk * kBlock;
    F lo{}, hi{};
    if constexpr (P != Pass::kFill) {
      std::memcpy(&lo, o, kHalf);
      std::memcpy(&hi, o + kPairsPerBlock, kHalf);
    }
    if constexpr (P == Pass::kUpdateTee) {  // the old direction's update, before z' replaces it
      F y0, y1;
      std::memcpy(&y0, out.z + blk * kBlock, kHalf);
      std::memcpy(&y1, out.z + blk * kBlock + kPairsPerBlock, kHalf);
      lo = lo + prev * y0;
      hi = hi + prev * y1;
    }
    if constexpr (P == Pass::kTee || P == Pass::kUpdateTee) {
      std::memcpy(out.z + blk * kBlock, &z0, kHalf);
      std::memcpy(out.z + blk * kBlock + kPairsPerBlock, &z1, kHalf);
    }
    if constexpr (P != Pass::kFill) {
      z0 = lo + scale * z0;
      z1 = hi + scale * z1;
    }
    std::memcpy(o, &z0, kHalf);
    std::memcpy(o + kPairsPerBlock, &z1, kHalf);
  }
}

struct PortableGen {
  using Scale = Vec<kPairsPerBlock>::F;
  static Scale splat(float s) { return Scale{} + s; }
  static constexpr std::uint64_t kStep = kW / kPairsPerBlock;
  template <Pass P>
  static void step(Dst out, const Keys& k, std::uint32_t c0, Scale scale, Scale prev) {
    vec_blocks<kW, P>(out, k, c0, scale, prev);
  }
  template <Pass P>
  static void block(Dst out, const Keys& k, std::uint32_t c0, Scale scale, Scale prev) {
    vec_blocks<kPairsPerBlock, P>(out, k, c0, scale, prev);
  }
};

using PortableDriver = Driver<PortableGen>;

}  // namespace

ZT_PERTURB_F32_PATH(portable, PortableDriver)

ZT_DEFINE_SELECT(PerturbGaussianF32Fn, perturb_gaussian_f32)
ZT_DEFINE_SELECT(FillGaussianF32Fn, fill_gaussian_f32)
ZT_DEFINE_SELECT(PerturbFillF32Fn, perturb_fill_gaussian_f32)
ZT_DEFINE_SELECT(UpdatePerturbFillF32Fn, update_perturb_fill_gaussian_f32)

}  // namespace zt::kernels
