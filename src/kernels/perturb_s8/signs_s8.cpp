// Poor Man's Training's ±1 weight perturbation of int8 layers and its stochastically rounded
// update (kernels/perturb_s8.hpp). Integer arithmetic only.
#include <algorithm>
#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>

#include "zotrain/core/error.hpp"
#include "zotrain/core/rng.hpp"
#include "zotrain/core/seeds.hpp"
#include "zotrain/kernels/perturb_s8.hpp"
#include "zotrain/kernels/quant.hpp"
#include "zotrain/kernels/xorshift.hpp"

namespace zt::kernels {
namespace {

// ξ of elements first, first + 1, … in turn.
class Signs {
 public:
  Signs() = default;
  Signs(SignSource src, std::uint64_t seed, std::uint32_t first)
      : xorshift_(src == SignSource::kXorshift), j_(first) {
    if (xorshift_) {
      x_ = xorshift_jump(xorshift_state(seed, seeds::kRademacherStream), first);
    } else {
      key_ = hash_key(seed, seeds::kRademacherStream);
    }
  }
  std::int32_t next() {
    if (xorshift_) {
      x_ = xorshift32(x_);
      return (x_ & 1U) != 0 ? -1 : 1;
    }
    return (hash32(key_, j_++) >> 31) != 0 ? -1 : 1;
  }

 private:
  bool xorshift_ = false;
  std::uint32_t j_ = 0, key_ = 0, x_ = 0;
};

}  // namespace

void signs_s8(SignSource src, std::uint64_t seed, std::uint32_t first, std::size_t n,
              std::int8_t* xi) {
  Signs s(src, seed, first);
  for (std::size_t i = 0; i < n; ++i) xi[i] = static_cast<std::int8_t>(s.next());
}

void perturb_signs_s8(SignSource src, const std::int8_t* theta0, std::int8_t* theta,
                      std::size_t n, std::uint32_t first, std::uint64_t seed) {
  Signs s(src, seed, first);
  for (std::size_t i = 0; i < n; ++i) theta[i] = clamp_s8(std::int64_t{theta0[i]} + s.next());
}

void update_signs_s8(SignSource src, std::int8_t* theta, std::size_t n, std::uint32_t first,
                     const std::uint64_t* seeds, const std::int32_t* coef, int queries, int frac,
                     std::uint64_t rounding_seed) {
  constexpr int kMaxQueries = 64;
  ZT_CHECK(queries >= 1 && queries <= kMaxQueries && frac >= 0 && frac < 31);
  std::array<Signs, kMaxQueries> xi;
  for (int q = 0; q < queries; ++q) xi[static_cast<std::size_t>(q)] = Signs(src, seeds[q], first);
  const std::uint32_t round_key = hash_key(rounding_seed, 0);
  for (std::size_t i = 0; i < n; ++i) {
    std::int64_t s = 0;
    for (int q = 0; q < queries; ++q)
      s += std::int64_t{coef[q]} * xi[static_cast<std::size_t>(q)].next();
    s = std::clamp<std::int64_t>(s, -INT32_MAX, INT32_MAX);
    const std::uint32_t w = hash32(round_key, first + static_cast<std::uint32_t>(i));
    theta[i] = clamp_s8(std::int64_t{theta[i]} - sto_shift(static_cast<std::int32_t>(s), frac, w));
  }
}

void update_nodes_s8(std::int8_t* theta, std::size_t M, std::size_t K, const std::int32_t* G,
                     const std::int8_t* x, std::size_t n, int frac, std::int64_t* row,
                     std::uint32_t first, std::uint64_t rounding_seed) {
  ZT_CHECK(frac >= 0 && frac < 31);
  const std::uint32_t round_key = hash_key(rounding_seed, 0);
  for (std::size_t k = 0; k < M; ++k) {
    std::fill(row, row + K, std::int64_t{0});  // Σ_n G[n, k] · x[n, :] of one output k
    for (std::size_t r = 0; r < n; ++r) {
      const std::int64_t g = G[r * M + k];
      if (g == 0) continue;
      const std::int8_t* xr = x + r * K;
      for (std::size_t j = 0; j < K; ++j) row[j] += g * xr[j];
    }
    std::int8_t* t = theta + k * K;
    for (std::size_t j = 0; j < K; ++j) {
      const std::int64_t s = std::clamp<std::int64_t>(row[j], -INT32_MAX, INT32_MAX);
      const auto at = static_cast<std::uint32_t>(k * K + j);
      const std::int32_t u =
          sto_shift(static_cast<std::int32_t>(s), frac, hash32(round_key, first + at));
      t[j] = clamp_s8(std::int64_t{t[j]} - u);
    }
  }
}

}  // namespace zt::kernels
