// Poor Man's Training's on-device generator: Marsaglia's xorshift32 with shifts (13, 17, 5).
// The integer pieces, shared by the FP32 source (zo.perturbation xorshift, kernels/perturb.hpp)
// and int8's ±1 probes (kernels/perturb_s8.hpp): one step, the start state of (seed, stream)
// (never 0) and k steps at once (x ↦ M^k x over GF(2), k taken mod the period 2^32 − 1). A
// perturbation's element i is the sign of x_{i+1} (x_0 the start state): −1 where its least
// significant bit is 1. Integer-only.
#pragma once

#include <cstdint>

namespace zt::kernels {

constexpr std::uint32_t xorshift32(std::uint32_t x) {
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return x;
}
std::uint32_t xorshift_state(std::uint64_t seed, std::uint64_t stream);
std::uint32_t xorshift_jump(std::uint32_t x, std::uint64_t k);

}  // namespace zt::kernels
