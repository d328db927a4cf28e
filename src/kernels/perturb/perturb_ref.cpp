// Reference Gaussian perturbation: one element at a time, straight from the definition in
// perturb_internal.hpp. This *is* correct; the portable path must match it bit for bit.
#include "zotrain/kernels/perturb.hpp"

#include "perturb_internal.hpp"

namespace zt::kernels {

using namespace perturb_detail;

float gaussian_ref(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  const std::uint64_t p = pair_index(index);
  const Keys k = derive_keys(seed, stream, static_cast<std::uint32_t>(p >> 32));
  const Pair z = gaussian_pair<Scalar>(k, static_cast<std::uint32_t>(p));
  return takes_sin(index) ? z.z1 : z.z0;
}

void perturb_gaussian_f32_ref(float* theta, std::size_t n, std::uint64_t seed,
                              std::uint64_t stream, std::uint64_t offset, float scale) {
  for (std::size_t i = 0; i < n; ++i) {
    const float z = gaussian_ref(seed, stream, offset + i);
    theta[i] = theta[i] + scale * z;
  }
}

void fill_gaussian_f32_ref(float* out, std::size_t n, std::uint64_t seed, std::uint64_t stream,
                           std::uint64_t offset) {
  for (std::size_t i = 0; i < n; ++i) out[i] = gaussian_ref(seed, stream, offset + i);
}

void perturb_fill_gaussian_f32_ref(float* theta, float* z, std::size_t n, std::uint64_t seed,
                                   std::uint64_t stream, std::uint64_t offset, float scale) {
  for (std::size_t i = 0; i < n; ++i) {
    z[i] = gaussian_ref(seed, stream, offset + i);
    theta[i] = theta[i] + scale * z[i];
  }
}

void update_perturb_fill_gaussian_f32_ref(float* theta, float* z, std::size_t n,
                                          std::uint64_t seed, std::uint64_t stream,
                                          std::uint64_t offset, float prev, float scale) {
  for (std::size_t i = 0; i < n; ++i) {
    const float t = theta[i] + prev * z[i];
    z[i] = gaussian_ref(seed, stream, offset + i);
    theta[i] = t + scale * z[i];
  }
}

namespace perturb_detail {

float neg2_log_from_bits_exact(std::uint32_t a24) { return neg2_log_from_bits<Scalar>(a24); }
float radius_from_bits_exact(std::uint32_t a24) { return radius_from_bits<Scalar>(a24); }
CosSin cossin_from_bits_exact(std::uint32_t b24) { return cossin_from_bits<Scalar>(b24); }
std::uint32_t pair_hash_exact(std::uint32_t x, std::uint32_t k0, std::uint32_t k1) {
  return pair_hash<Scalar>(x, k0, k1);
}

}  // namespace perturb_detail

}  // namespace zt::kernels
