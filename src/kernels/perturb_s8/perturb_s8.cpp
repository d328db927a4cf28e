// Portable sparse uniform int8 perturbation and its dispatch. The same z as the reference,
// written in 32-bit lanes so GCC vectorises it at -O3: hash32 is 32-bit multiplies, shifts and
// xors, and the high word of w2 · (2·r_max + 1) is formed from 16-bit halves,
//   floor(w2·c / 2^32) = ((w2 >> 16)·c + (((w2 & 0xffff)·c) >> 16)) >> 16   (exact for c < 2^16),
// so no 64-bit lane is needed. Elementwise and counter-based, so large calls split over OpenMP
// threads in fixed pieces with bit-identical results. Integer arithmetic only.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "zotrain/core/rng.hpp"
#include "zotrain/core/seeds.hpp"
#include "zotrain/kernels/perturb_s8.hpp"
#include "../chunked_parallel.hpp"
#include "../select_isa.hpp"
#include "zotrain/kernels/quant.hpp"

namespace zt::kernels {
namespace {

// Elementwise threading (../chunked_parallel.hpp): fork from this many elements, in pieces.
using Chunks = detail::Chunking<std::size_t{1} << 15, 4096>;

struct ZLanes {
  std::uint32_t k1, k2;
  std::uint32_t threshold;  // low 32 bits of zero_threshold
  std::uint32_t keep;       // 0 when zero_threshold ≥ 2^32 (every m = 0), else 1
  std::uint32_t span;       // 2·r_max + 1
  std::int32_t r;
  explicit ZLanes(const PerturbS8Params& p)
      : k1(hash_key(p.seed, seeds::kPerturbKeepStream)),
        k2(hash_key(p.seed, seeds::kPerturbValueStream)),
        threshold(static_cast<std::uint32_t>(p.zero_threshold)),
        keep(p.zero_threshold > 0xffffffffu ? 0u : 1u),
        span(2u * static_cast<std::uint32_t>(p.r_max) + 1u),
        r(p.r_max) {}
  std::int32_t z(std::uint32_t j) const {
    const std::uint32_t w1 = hash32(k1, j);
    const std::uint32_t w2 = hash32(k2, j);
    const std::uint32_t hi = ((w2 >> 16) * span + (((w2 & 0xffffu) * span) >> 16)) >> 16;
    const std::uint32_t m = (w1 >= threshold ? 1u : 0u) & keep;
    return m ? static_cast<std::int32_t>(hi) - r : 0;
  }
};

// The 32-bit formulation needs 2·r_max + 1 < 2^16; other settings take the reference.
bool lanes_ok(const PerturbS8Params& p) { return p.r_max >= 0 && p.r_max <= kInt8Max; }

// z_of(i): the direction of element i, drawn (ZLanes) or cached. The callers' lambdas capture
// by value: a captured reference may alias θ as far as GCC knows, and the update loop then
// stayed scalar (13× slower on x86-64).
template <class Z>
void perturb_span(std::int8_t* theta, std::size_t n, const Z& z_of, std::int32_t k) {
  for (std::size_t i = 0; i < n; ++i) {
    const std::int32_t z = z_of(i);
    theta[i] = static_cast<std::int8_t>(std::clamp(theta[i] + k * z, -kInt8Max, kInt8Max));
  }
}

// θ = clamp(clamp(θ + z) − PstoShift(g·z, s)) for 0 ≤ s ≤ 31 (s = 0: û = g·z).
template <class Z>
void update_span(std::int8_t* theta, std::size_t n, const Z& z_of, std::int32_t g, int s) {
  const int h = s / 2;
  const std::uint32_t rmask = (std::uint32_t{1} << s) - 1u;
  const std::uint32_t lmask = (std::uint32_t{1} << h) - 1u;
  const int odd = s & 1;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int32_t z = z_of(i);
    const std::int32_t gz = g * z;
    const std::uint32_t sm = static_cast<std::uint32_t>(gz >> 31);
    const std::uint32_t m = (static_cast<std::uint32_t>(gz) ^ sm) - sm;
    const std::uint32_t rem = m & rmask;
    const std::uint32_t up = (rem >> h) > ((rem & lmask) << odd) ? 1u : 0u;
    // |û| clamped to 255: with |clamp(θ + z)| ≤ 127 that cannot change the clamped result.
    const std::uint32_t q = std::min((m >> s) + up, 255u);
    const std::int32_t u_hat = static_cast<std::int32_t>((q ^ sm) - sm);
    const std::int32_t t1 = std::clamp(theta[i] + z, -kInt8Max, kInt8Max);
    theta[i] = static_cast<std::int8_t>(std::clamp(t1 - u_hat, -kInt8Max, kInt8Max));
  }
}

}  // namespace

void perturb_s8_portable(std::int8_t* theta, std::size_t n, std::uint32_t first,
                         const PerturbS8Params& p, int k) {
  if (!lanes_ok(p)) return perturb_s8_ref(theta, n, first, p, k);
  const ZLanes zl(p);
  // |z| ≥ 1 wherever z ≠ 0, so |k| beyond 255 saturates exactly like 255 does.
  const std::int32_t kc = std::clamp(k, -255, 255);
  Chunks::for_each(n, [&](std::size_t b, std::size_t len) {
    const std::uint32_t j = first + static_cast<std::uint32_t>(b);
    perturb_span(theta + b, len, [zl, j](std::size_t i) { return zl.z(j + static_cast<std::uint32_t>(i)); }, kc);
  });
}

void zo_update_s8_portable(std::int8_t* theta, std::size_t n, std::uint32_t first,
                           const PerturbS8Params& p, int g, int b_zo) {
  const int s_l = bitlen(static_cast<std::uint32_t>(p.r_max)) - b_zo;
  if (!lanes_ok(p) || s_l > 31) return zo_update_s8_ref(theta, n, first, p, g, b_zo);
  const ZLanes zl(p);
  const int s = std::max(s_l, 0);
  Chunks::for_each(n, [&](std::size_t b, std::size_t len) {
    const std::uint32_t j = first + static_cast<std::uint32_t>(b);
    update_span(theta + b, len, [zl, j](std::size_t i) { return zl.z(j + static_cast<std::uint32_t>(i)); }, g, s);
  });
}

void fill_perturbation_s8_portable(const PerturbS8Params& p, std::uint32_t first, std::size_t n,
                                   std::int8_t* z) {
  if (!lanes_ok(p)) return perturbation_s8(p, first, n, z);
  const ZLanes zl(p);
  Chunks::for_each(n, [&](std::size_t b, std::size_t len) {
    for (std::size_t i = b; i < b + len; ++i) z[i] = static_cast<std::int8_t>(zl.z(first + static_cast<std::uint32_t>(i)));
  });
}

void perturb_cached_s8_portable(std::int8_t* theta, const std::int8_t* z, std::size_t n, int k) {
  const std::int32_t kc = std::clamp(k, -255, 255);  // as perturb_s8_portable
  Chunks::for_each(n, [&](std::size_t b, std::size_t len) {
    perturb_span(theta + b, len, [d = z + b](std::size_t i) { return std::int32_t{d[i]}; }, kc);
  });
}

void zo_update_cached_s8_portable(std::int8_t* theta, const std::int8_t* z, std::size_t n,
                                  const PerturbS8Params& p, int g, int b_zo) {
  const int s_l = bitlen(static_cast<std::uint32_t>(p.r_max)) - b_zo;
  if (!lanes_ok(p) || s_l > 31) return zo_update_cached_s8_ref(theta, z, n, p, g, b_zo);
  const int s = std::max(s_l, 0);
  Chunks::for_each(n, [&](std::size_t b, std::size_t len) {
    update_span(theta + b, len, [d = z + b](std::size_t i) { return std::int32_t{d[i]}; }, g, s);
  });
}

ZT_DEFINE_SELECT(PerturbS8Fn, perturb_s8)
ZT_DEFINE_SELECT(ZoUpdateS8Fn, zo_update_s8)
ZT_DEFINE_SELECT(FillPerturbationS8Fn, fill_perturbation_s8)
ZT_DEFINE_SELECT(PerturbCachedS8Fn, perturb_cached_s8)
ZT_DEFINE_SELECT(ZoUpdateCachedS8Fn, zo_update_cached_s8)

}  // namespace zt::kernels
