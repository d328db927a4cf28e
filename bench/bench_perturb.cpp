// Micro-benchmark of the seeded Gaussian perturbation (the ZO hot spot): ns per element per pass
// for the reference, portable and (where available) NEON paths, LeNet-5-sized (107,786
// parameters) by default, and the time of one ZO step's three passes (+ε, −2ε, +ε−ηg) with the
// fastest path.
// Also "cold": the same pass timed after streaming ~3 MB of other memory on every thread (as the
// forward/backward passes of a training step do, evicting theta from L2).
//   bench_perturb [n] [reps]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "zotrain/kernels/perturb.hpp"

#ifdef ZT_OPENMP
#include <omp.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;
using zt::kernels::PerturbGaussianF32Fn;

// Median over `reps` timed calls, in ns per element.
double time_pass(PerturbGaussianF32Fn fn, std::vector<float>& theta, int reps) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    fn(theta.data(), theta.size(), 1234 + static_cast<std::uint64_t>(r), 3, 0,
       r % 2 ? -1e-3f : 1e-3f);
    t.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2] / static_cast<double>(theta.size());
}

// Reads and writes `buf` (split across the threads), to evict theta from the private caches.
float stream_other(std::vector<float>& buf) {
  float acc = 0.0f;
  const auto n = static_cast<std::int64_t>(buf.size());
#ifdef ZT_OPENMP
#pragma omp parallel for schedule(static) reduction(+ : acc)
#endif
  for (std::int64_t i = 0; i < n; ++i) {
    buf[static_cast<std::size_t>(i)] = buf[static_cast<std::size_t>(i)] * 0.5f + 1.0f;
    acc += buf[static_cast<std::size_t>(i)];
  }
  return acc;
}

// Like time_pass, with `other` streamed before every timed call.
double time_pass_cold(PerturbGaussianF32Fn fn, std::vector<float>& theta,
                      std::vector<float>& other, int reps, float& sink) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    sink += stream_other(other);
    const auto t0 = Clock::now();
    fn(theta.data(), theta.size(), 1234 + static_cast<std::uint64_t>(r), 3, 0,
       r % 2 ? -1e-3f : 1e-3f);
    t.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2] / static_cast<double>(theta.size());
}

double time_step_us(zt::kernels::PerturbGaussianF32Fn fn, std::vector<float>& theta, int reps) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    const std::uint64_t seed = 99 + static_cast<std::uint64_t>(r);
    fn(theta.data(), theta.size(), seed, 0, 0, 1e-3f);
    fn(theta.data(), theta.size(), seed, 0, 0, -2e-3f);
    fn(theta.data(), theta.size(), seed, 0, 0, 0.9e-3f);
    t.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 107786;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 200;
  std::vector<float> theta(n, 0.5f);
  std::vector<float> other(3u << 18, 1.0f);  // 3 MB
  float sink = 0.0f;
  std::printf("n = %zu, median of %d reps\n", n, reps);
  int max_threads = 1;
#ifdef ZT_OPENMP
  max_threads = omp_get_max_threads();
#endif
  for (int threads = 1; threads <= std::min(max_threads, 2); ++threads) {
#ifdef ZT_OPENMP
    omp_set_num_threads(threads);
#endif
    const double ref = time_pass(zt::kernels::perturb_gaussian_f32_ref, theta, std::max(reps / 20, 3));
    const double fast = time_pass(zt::kernels::perturb_gaussian_f32_portable, theta, reps);
    const double cold = time_pass_cold(zt::kernels::perturb_gaussian_f32_portable, theta, other,
                                       reps, sink);
    std::printf("threads %d: ref %.3f ns/elem/pass  portable %.3f ns/elem/pass (cold %.3f)",
                threads, ref, fast, cold);
    using zt::kernels::Isa;
    if (zt::kernels::isa_available(Isa::kNeon)) {
      const auto neon_fn = zt::kernels::select_perturb_gaussian_f32(Isa::kNeon);
      const double neon = time_pass(neon_fn, theta, reps);
      const double neon_cold = time_pass_cold(neon_fn, theta, other, reps, sink);
      std::printf("  neon %.3f ns/elem/pass (cold %.3f)", neon, neon_cold);
    }
    const double step = time_step_us(zt::kernels::select_perturb_gaussian_f32(zt::kernels::best_isa()),
                                     theta, reps);
    std::printf("  3-pass step (%s) %.1f us\n", zt::kernels::isa_name(zt::kernels::best_isa()), step);
  }
  return sink == 12345.0f ? 1 : 0;  // keeps the streaming alive
}
