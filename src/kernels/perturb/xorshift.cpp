// Poor Man's Training's XORShift (kernels/xorshift.hpp): the start state and the jump.
// Integer-only.
#include <array>
#include <cstddef>
#include <cstdint>

#include "zotrain/core/rng.hpp"
#include "zotrain/kernels/xorshift.hpp"

namespace zt::kernels {
namespace {

// xorshift32 is linear over GF(2)^32: x ↦ M x. Jumping k states ahead applies M^k, the product
// of the tabled M^(2^j) for the bits j of k (at most 32 matrix-vector products of 32 XORs each),
// so a thread or a layer's slice starts anywhere at once; the sequence itself is stepped.
struct Gf2Matrix {
  std::array<std::uint32_t, 32> col{};  // col[j] = M e_j
  std::uint32_t operator()(std::uint32_t x) const {
    std::uint32_t r = 0;
    for (int j = 0; j < 32; ++j) r ^= (0U - ((x >> j) & 1U)) & col[static_cast<std::size_t>(j)];
    return r;
  }
};

const std::array<Gf2Matrix, 32>& xorshift_powers() {  // [j] = M^(2^j)
  static const std::array<Gf2Matrix, 32> kPowers = [] {
    std::array<Gf2Matrix, 32> p{};
    for (int j = 0; j < 32; ++j) p[0].col[static_cast<std::size_t>(j)] = xorshift32(1U << j);
    for (std::size_t k = 1; k < 32; ++k)
      for (std::size_t j = 0; j < 32; ++j) p[k].col[j] = p[k - 1](p[k - 1].col[j]);
    return p;
  }();
  return kPowers;
}

}  // namespace

std::uint32_t xorshift_state(std::uint64_t seed, std::uint64_t stream) {
  const auto s = static_cast<std::uint32_t>(mix64(seed ^ mix64(stream + 0x786f7273ULL)));
  return s != 0 ? s : 0x6a09e667U;  // 0 is xorshift's fixed point
}

std::uint32_t xorshift_jump(std::uint32_t x, std::uint64_t k) {
  k %= 0xffffffffULL;  // the period of every nonzero state
  const auto& p = xorshift_powers();
  for (std::size_t j = 0; k != 0; ++j, k >>= 1)
    if ((k & 1U) != 0) x = p[j](x);
  return x;
}

}  // namespace zt::kernels
