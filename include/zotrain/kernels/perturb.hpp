// Seeded Gaussian perturbation — the hot spot of the ZO phases.
//   z(seed, stream, i) ~ N(0, 1) is a pure function of its arguments (counter-based hash of
//   (seed, stream, i), then an exact-in-IEEE transform written in this project: no libm, no FMA
//   contraction), so every path, thread count and architecture produces the same bits.
//   perturb:  theta[i] += scale · z(seed, stream, offset + i),  i ∈ [0, n)
//   fill:     out[i]    =         z(seed, stream, offset + i)
// `stream` identifies the parameter tensor (e.g. 2·layer + {0 weight, 1 bias}).
#pragma once

#include <cstddef>
#include <cstdint>

#include "zotrain/kernels/isa.hpp"

namespace zt::kernels {

// One element, the definition (used by the reference paths and by tests).
float gaussian_ref(std::uint64_t seed, std::uint64_t stream, std::uint64_t index);

using PerturbGaussianF32Fn = void (*)(float* theta, std::size_t n, std::uint64_t seed,
                                      std::uint64_t stream, std::uint64_t offset, float scale);
using FillGaussianF32Fn = void (*)(float* out, std::size_t n, std::uint64_t seed,
                                   std::uint64_t stream, std::uint64_t offset);

void perturb_gaussian_f32_ref(float* theta, std::size_t n, std::uint64_t seed,
                              std::uint64_t stream, std::uint64_t offset, float scale);
void perturb_gaussian_f32_portable(float* theta, std::size_t n, std::uint64_t seed,
                                   std::uint64_t stream, std::uint64_t offset, float scale);
void fill_gaussian_f32_ref(float* out, std::size_t n, std::uint64_t seed, std::uint64_t stream,
                           std::uint64_t offset);
void fill_gaussian_f32_portable(float* out, std::size_t n, std::uint64_t seed,
                                std::uint64_t stream, std::uint64_t offset);
#if defined(ZT_HAVE_NEON)  // built for ARM targets only (CMakeLists.txt)
void perturb_gaussian_f32_neon(float* theta, std::size_t n, std::uint64_t seed,
                               std::uint64_t stream, std::uint64_t offset, float scale);
void fill_gaussian_f32_neon(float* out, std::size_t n, std::uint64_t seed, std::uint64_t stream,
                            std::uint64_t offset);
#endif

// kNeon and kNeonDot select the NEON functions where they are built, else the portable ones.

PerturbGaussianF32Fn select_perturb_gaussian_f32(Isa isa);
FillGaussianF32Fn select_fill_gaussian_f32(Isa isa);

}  // namespace zt::kernels
