// What the int8 product tests (linear_s8_test.cpp, conv2d_s8_test.cpp) share: int8 operands from
// the project's generator, guarded int32 outputs compared exactly, the three products' outputs
// compared across thread counts and the expected path of every ISA.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "zotrain/core/rng.hpp"
#include "zotrain/kernels/isa.hpp"
#include "../support.hpp"

namespace zt::kernels::s8_test {

inline constexpr std::int32_t kGuard32 = static_cast<std::int32_t>(test::kGuard);

// n values uniform in [lo, hi] from the project's generator (replayable from the seed).
inline std::vector<std::int8_t> random_s8(std::size_t n, std::uint64_t seed, int lo = -127, int hi = 127) {
  SplitMix64 rng(seed);
  std::vector<std::int8_t> v(n);
  for (auto& x : v) x = static_cast<std::int8_t>(lo + static_cast<int>(rng.next() % static_cast<std::uint64_t>(hi - lo + 1)));
  return v;
}

// int32 outputs followed by `tail` guard values (kGuard32) that a kernel must leave untouched.
struct GuardedS32 {
  std::size_t tail;

  // n values of `fill`, then the guards.
  std::vector<std::int32_t> make(std::size_t n, std::int32_t fill = 0x5a5a5a5a) const {
    std::vector<std::int32_t> v(n + tail, kGuard32);
    std::fill_n(v.begin(), n, fill);
    return v;
  }
  // Expects the guards after the first n values intact.
  void expect_intact(const std::vector<std::int32_t>& got, std::size_t n, const std::string& what = "") const {
    for (std::size_t t = 0; t < tail; ++t) EXPECT_EQ(got[n + t], kGuard32) << what << " guard " << t;
  }
  // Expects got == want on the first n values (the first five differences reported) and intact
  // guards after them.
  void expect_exact(const std::vector<std::int32_t>& got, const std::vector<std::int32_t>& want, std::size_t n,
                    const std::string& what) const {
    int bad = 0;
    for (std::size_t i = 0; i < n && bad < 5; ++i)
      if (got[i] != want[i]) {
        ADD_FAILURE() << what << " [" << i << "] " << got[i] << " vs " << want[i];
        ++bad;
      }
    expect_intact(got, n, what);
  }
};

// The outputs of the three products: y (forward), dx (input gradient), g (weight gradient).
struct Outputs {
  std::vector<std::int32_t> y, dx, g;
};

// Runs run() (which returns Outputs) on 1, 2 and 3 threads and from inside a parallel region
// (serial), and expects the same bits every time.
template <class Run>
void expect_thread_count_independent(const std::string& what, Run run) {
  std::vector<Outputs> outs;
  test::for_thread_counts({1, 2, 3, 0}, [&](int) { outs.push_back(run()); });
  for (std::size_t i = 1; i < outs.size(); ++i) {
    EXPECT_EQ(outs[0].y, outs[i].y) << what << " y, run " << i;
    EXPECT_EQ(outs[0].dx, outs[i].dx) << what << " dx, run " << i;
    EXPECT_EQ(outs[0].g, outs[i].g) << what << " g, run " << i;
  }
}

// The forward, input-gradient and weight-gradient functions of one path.
template <class Fwd, class Dx, class Dw>
struct Paths {
  Fwd fwd;
  Dx dx;
  Dw dw;
};
template <class Fwd, class Dx, class Dw>
Paths(Fwd, Dx, Dw) -> Paths<Fwd, Dx, Dw>;

// Expects `selected` to be the paths `own` lists for isa, or `portable` for an ISA not listed.
template <class P>
void expect_selected(Isa isa, const P& selected, const P& portable, std::initializer_list<std::pair<Isa, P>> own) {
  P want = portable;
  for (const auto& [i, p] : own)
    if (i == isa) want = p;
  EXPECT_EQ(selected.fwd, want.fwd);
  EXPECT_EQ(selected.dx, want.dx);
  EXPECT_EQ(selected.dw, want.dw);
}

}  // namespace zt::kernels::s8_test

// The paths named `sfx` (ref, portable, neon, ...) of the int8 product family `fam` (linear,
// conv2d), and the ones its selectors return for `isa`.
#define ZT_S8_PATHS(fam, sfx) \
  ::zt::kernels::s8_test::Paths{&fam##_forward_s8_##sfx, &fam##_backward_input_s8_##sfx, &fam##_backward_weights_s8_##sfx}
#define ZT_S8_SELECTED(fam, isa) \
  ::zt::kernels::s8_test::Paths{select_##fam##_forward_s8(isa), select_##fam##_backward_input_s8(isa), \
                                select_##fam##_backward_weights_s8(isa)}

// {ISA, paths} for every ISA of family `fam` with paths of its own in this build.
#ifdef ZT_HAVE_NEON
#define ZT_S8_OWN_NEON(fam) {::zt::kernels::Isa::kNeon, ZT_S8_PATHS(fam, neon)},
#else
#define ZT_S8_OWN_NEON(fam)
#endif
#ifdef ZT_HAVE_NEON_DOT
#define ZT_S8_OWN_NEON_DOT(fam) {::zt::kernels::Isa::kNeonDot, ZT_S8_PATHS(fam, neon_dot)},
#else
#define ZT_S8_OWN_NEON_DOT(fam)
#endif
#ifdef ZT_HAVE_AVX512_VNNI
#define ZT_S8_OWN_AVX512_VNNI(fam) {::zt::kernels::Isa::kAvx512Vnni, ZT_S8_PATHS(fam, avx512_vnni)},
#else
#define ZT_S8_OWN_AVX512_VNNI(fam)
#endif
#ifdef ZT_HAVE_AVX2
#define ZT_S8_OWN_AVX2(fam) {::zt::kernels::Isa::kAvx2, ZT_S8_PATHS(fam, avx2)},
#else
#define ZT_S8_OWN_AVX2(fam)
#endif

// Expects the selectors of family `fam` to return, for isa, the ISA's own paths where this build
// has them (the reference for kReference), the portable ones otherwise.
#define ZT_EXPECT_S8_SELECTED(fam, isa)                                                              \
  ::zt::kernels::s8_test::expect_selected(isa, ZT_S8_SELECTED(fam, isa), ZT_S8_PATHS(fam, portable), \
                                          {{::zt::kernels::Isa::kReference, ZT_S8_PATHS(fam, ref)},  \
                                           ZT_S8_OWN_NEON(fam) ZT_S8_OWN_NEON_DOT(fam)               \
                                               ZT_S8_OWN_AVX512_VNNI(fam) ZT_S8_OWN_AVX2(fam)})
