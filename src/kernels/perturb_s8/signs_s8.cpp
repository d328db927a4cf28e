// Poor Man's Training's Rademacher weight perturbation of int8 layers and its stochastically
// rounded update (kernels/perturb_s8.hpp). Integer arithmetic only.
#include <climits>
#include <cstddef>
#include <cstdint>

#include "zotrain/core/error.hpp"
#include "zotrain/core/rng.hpp"
#include "zotrain/core/seeds.hpp"
#include "zotrain/kernels/perturb_s8.hpp"
#include "zotrain/kernels/quant.hpp"

namespace zt::kernels {
namespace {

constexpr std::int32_t sign_of(std::uint32_t key, std::uint32_t j) {
  return (hash32(key, j) >> 31) != 0 ? -1 : 1;
}

}  // namespace

void rademacher_s8(std::uint64_t seed, std::uint32_t first, std::size_t n, std::int8_t* xi) {
  const std::uint32_t key = hash_key(seed, seeds::kRademacherStream);
  for (std::size_t i = 0; i < n; ++i)
    xi[i] = static_cast<std::int8_t>(sign_of(key, first + static_cast<std::uint32_t>(i)));
}

void perturb_signs_s8(const std::int8_t* theta0, std::int8_t* theta, std::size_t n,
                      std::uint32_t first, std::uint64_t seed) {
  const std::uint32_t key = hash_key(seed, seeds::kRademacherStream);
  for (std::size_t i = 0; i < n; ++i)
    theta[i] = clamp_s8(std::int64_t{theta0[i]} + sign_of(key, first + static_cast<std::uint32_t>(i)));
}

void update_signs_s8(std::int8_t* theta, std::size_t n, std::uint32_t first,
                     const std::uint64_t* seeds, const std::int32_t* coef, int queries, int frac,
                     std::uint64_t rounding_seed) {
  constexpr int kMaxKeys = 64;
  std::uint32_t keys[kMaxKeys];
  ZT_CHECK(queries >= 1 && queries <= kMaxKeys && frac >= 0 && frac < 31);
  for (int q = 0; q < queries; ++q) keys[q] = hash_key(seeds[q], seeds::kRademacherStream);
  const std::uint32_t round_key = hash_key(rounding_seed, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t j = first + static_cast<std::uint32_t>(i);
    std::int64_t s = 0;
    for (int q = 0; q < queries; ++q) s += std::int64_t{coef[q]} * sign_of(keys[q], j);
    s = s > INT32_MAX ? INT32_MAX : (s < -INT32_MAX ? -INT32_MAX : s);
    const std::int32_t u = sto_shift(static_cast<std::int32_t>(s), frac, hash32(round_key, j));
    theta[i] = clamp_s8(std::int64_t{theta[i]} - u);
  }
}

}  // namespace zt::kernels
