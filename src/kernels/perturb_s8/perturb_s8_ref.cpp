// Reference sparse uniform int8 perturbation (docs/design.md §6): the plain loops, the definition
// of z and of the perturb / merged restore+update steps. Integer arithmetic only.
#include <cstddef>
#include <cstdint>

#include "zotrain/core/rng.hpp"
#include "zotrain/core/seeds.hpp"
#include "zotrain/kernels/perturb_s8.hpp"
#include "zotrain/kernels/quant.hpp"

namespace zt::kernels {
namespace {

struct ZGen {
  std::uint32_t k1, k2;
  std::uint64_t threshold, span;
  std::int64_t r;
  explicit ZGen(const PerturbS8Params& p)
      : k1(hash_key(p.seed, seeds::kPerturbKeepStream)),
        k2(hash_key(p.seed, seeds::kPerturbValueStream)),
        threshold(p.zero_threshold),
        span(2 * static_cast<std::uint64_t>(p.r_max) + 1),
        r(p.r_max) {}
  std::int32_t operator()(std::uint32_t j) const {
    const std::uint32_t w1 = hash32(k1, j);
    const std::uint32_t w2 = hash32(k2, j);
    const bool m = std::uint64_t{w1} >= threshold;
    const std::int64_t u = static_cast<std::int64_t>((std::uint64_t{w2} * span) >> 32) - r;
    return m ? static_cast<std::int32_t>(u) : 0;
  }
};

}  // namespace

void perturbation_s8(const PerturbS8Params& p, std::uint32_t first, std::size_t n, std::int8_t* z) {
  const ZGen gen(p);
  for (std::size_t i = 0; i < n; ++i) {
    z[i] = static_cast<std::int8_t>(gen(first + static_cast<std::uint32_t>(i)));
  }
}

void perturb_s8_ref(std::int8_t* theta, std::size_t n, std::uint32_t first,
                    const PerturbS8Params& p, int k) {
  const ZGen gen(p);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t z = gen(first + static_cast<std::uint32_t>(i));
    theta[i] = clamp_s8(theta[i] + std::int64_t{k} * z);
  }
}

namespace {
// θ after the merged restore+update of one element with direction z (zo_update's definition).
std::int8_t updated(std::int8_t theta, std::int32_t z, int g, int s_l) {
  const std::int32_t gz = g * z;
  const std::int32_t u_hat = s_l >= 1 ? psto_shift(gz, s_l) : gz;
  return clamp_s8(std::int64_t{clamp_s8(std::int64_t{theta} + z)} - u_hat);
}
}  // namespace

void zo_update_s8_ref(std::int8_t* theta, std::size_t n, std::uint32_t first,
                      const PerturbS8Params& p, int g, int b_zo) {
  const ZGen gen(p);
  const int s_l = bitlen(static_cast<std::uint32_t>(p.r_max)) - b_zo;
  for (std::size_t i = 0; i < n; ++i) theta[i] = updated(theta[i], gen(first + static_cast<std::uint32_t>(i)), g, s_l);
}

void fill_perturbation_s8_ref(const PerturbS8Params& p, std::uint32_t first, std::size_t n,
                              std::int8_t* z) {
  perturbation_s8(p, first, n, z);
}

void perturb_cached_s8_ref(std::int8_t* theta, const std::int8_t* z, std::size_t n, int k) {
  for (std::size_t i = 0; i < n; ++i) theta[i] = clamp_s8(theta[i] + std::int64_t{k} * z[i]);
}

void zo_update_cached_s8_ref(std::int8_t* theta, const std::int8_t* z, std::size_t n,
                             const PerturbS8Params& p, int g, int b_zo) {
  const int s_l = bitlen(static_cast<std::uint32_t>(p.r_max)) - b_zo;
  for (std::size_t i = 0; i < n; ++i) theta[i] = updated(theta[i], z[i], g, s_l);
}

}  // namespace zt::kernels
