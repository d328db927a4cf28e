// int8 linear products (linear_s8.hpp). Integer results are exact, so every path — the
// reference, every optimised path (each runs one micro-kernel: portable plain loops,
// avx512-vnni, avx2, neon, neon-dot; SKIP where the CPU lacks it), any thread count — must match bit
// for bit. The reference is itself checked against
// naive loops written the other way round (scatter instead of gather, int64 sums). Guard values
// after every output must survive.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "../../src/kernels/linear_s8/gemm_s8_internal.hpp"
#include "zotrain/core/rng.hpp"
#include "zotrain/kernels/linear_s8.hpp"
#include "../support.hpp"
#include "s8_product_test_support.hpp"

namespace zt::kernels {
namespace {

using namespace s8_test;

constexpr GuardedS32 kGuards{13};

std::string describe(int B, int N, int K) {
  return "B=" + std::to_string(B) + " N=" + std::to_string(N) + " K=" + std::to_string(K);
}

// ---- naive loops (int64, scatter order) -------------------------------------------------------

// int64 sums as int32, expecting each to fit.
std::vector<std::int32_t> exact_i32(const std::vector<std::int64_t>& acc) {
  std::vector<std::int32_t> out(acc.size());
  for (std::size_t i = 0; i < acc.size(); ++i) {
    EXPECT_TRUE(acc[i] >= INT32_MIN && acc[i] <= INT32_MAX);
    out[i] = static_cast<std::int32_t>(acc[i]);
  }
  return out;
}

std::vector<std::int32_t> naive_forward(int B, int N, int K, const std::vector<std::int8_t>& x,
                                        const std::vector<std::int8_t>& w) {
  std::vector<std::int64_t> acc(static_cast<std::size_t>(B) * N, 0);
  for (int k = 0; k < K; ++k)
    for (int b = 0; b < B; ++b)
      for (int n = 0; n < N; ++n) acc[std::size_t(b) * N + n] += std::int64_t{x[std::size_t(b) * K + k]} * w[std::size_t(n) * K + k];
  return exact_i32(acc);
}

std::vector<std::int32_t> naive_backward_input(int B, int N, int K, const std::vector<std::int8_t>& e,
                                               const std::vector<std::int8_t>& w) {
  std::vector<std::int64_t> acc(static_cast<std::size_t>(B) * K, 0);
  for (int n = 0; n < N; ++n)
    for (int b = 0; b < B; ++b)
      for (int k = 0; k < K; ++k) acc[std::size_t(b) * K + k] += std::int64_t{e[std::size_t(b) * N + n]} * w[std::size_t(n) * K + k];
  return exact_i32(acc);
}

std::vector<std::int32_t> naive_backward_weights(int B, int N, int K, const std::vector<std::int8_t>& e,
                                                 const std::vector<std::int8_t>& x) {
  std::vector<std::int64_t> acc(static_cast<std::size_t>(N) * K, 0);
  for (int b = 0; b < B; ++b)
    for (int n = 0; n < N; ++n)
      for (int k = 0; k < K; ++k) acc[std::size_t(n) * K + k] += std::int64_t{e[std::size_t(b) * N + n]} * x[std::size_t(b) * K + k];
  std::vector<std::int32_t> g(acc.size());
  for (std::size_t i = 0; i < acc.size(); ++i)
    g[i] = static_cast<std::int32_t>(std::clamp<std::int64_t>(acc[i], INT32_MIN, INT32_MAX));
  return g;
}

// ---- the three products behind one interface, for any path --------------------------------

struct Fns {
  std::function<void(int, int, int, const std::int8_t*, const std::int8_t*, std::int32_t*)> fwd, dx, dw;
};

Fns fns_of(Isa isa) {
  return {select_linear_forward_s8(isa), select_linear_backward_input_s8(isa), select_linear_backward_weights_s8(isa)};
}

// Runs the three products of `f` on (x, w, e) and checks them against the reference.
Outputs run_and_check(const Fns& f, int B, int N, int K, const std::vector<std::int8_t>& x,
                      const std::vector<std::int8_t>& w, const std::vector<std::int8_t>& e) {
  const std::size_t ny = std::size_t(B) * N, nx = std::size_t(B) * K, nw = std::size_t(N) * K;
  Outputs got{kGuards.make(ny), kGuards.make(nx), kGuards.make(nw)};
  auto y_ref = kGuards.make(ny), dx_ref = kGuards.make(nx), g_ref = kGuards.make(nw);
  f.fwd(B, N, K, x.data(), w.data(), got.y.data());
  f.dx(B, N, K, e.data(), w.data(), got.dx.data());
  f.dw(B, N, K, e.data(), x.data(), got.g.data());
  linear_forward_s8_ref(B, N, K, x.data(), w.data(), y_ref.data());
  linear_backward_input_s8_ref(B, N, K, e.data(), w.data(), dx_ref.data());
  linear_backward_weights_s8_ref(B, N, K, e.data(), x.data(), g_ref.data());
  const std::string what = describe(B, N, K);
  kGuards.expect_exact(got.y, y_ref, ny, what + " y");
  kGuards.expect_exact(got.dx, dx_ref, nx, what + " dx");
  kGuards.expect_exact(got.g, g_ref, nw, what + " g");
  return got;
}

Outputs run_random(const Fns& f, int B, int N, int K, std::uint64_t seed) {
  const auto x = random_s8(std::size_t(B) * K, seed), w = random_s8(std::size_t(N) * K, seed + 1),
             e = random_s8(std::size_t(B) * N, seed + 2);
  return run_and_check(f, B, N, K, x, w, e);
}

// Every combination of sizes around the 16-lane vectors and the 4-term quads.
const int kSweep[] = {1, 2, 3, 4, 5, 15, 16, 17, 31, 33, 65};

void size_sweep(const Fns& f) {
  std::uint64_t seed = 1;
  for (int B : {1, 3, 15, 16, 17, 31, 33, 65})
    for (int N : kSweep)
      for (int K : kSweep) {
        run_random(f, B, N, K, seed);
        seed += 3;
      }
}

void lenet_shapes(const Fns& f) {
  std::uint64_t seed = 500;
  for (int B : {1, 32, 256}) {
    run_random(f, B, 120, 400, seed++);  // fc1
    run_random(f, B, 84, 120, seed++);   // fc2
    run_random(f, B, 10, 84, seed++);    // fc3
  }
}

// Shapes that cut the packed operands into several lane blocks and reduction chunks.
void blocked_shapes(const Fns& f) {
  std::uint64_t seed = 900;
  run_random(f, 3, 40, 20000, seed++);   // forward: several K chunks
  run_random(f, 5, 5000, 9, seed++);     // forward: several output blocks; dx: many quads
  run_random(f, 2, 3, 60001, seed++);    // forward: several K chunks; dx: several lane blocks
  run_random(f, 7, 20001, 3, seed++);    // dx: several reduction chunks of N
  run_random(f, 1000, 120, 400, seed++); // dW: several batch chunks
  run_random(f, 33, 1500, 70, seed++);   // dW: several output-row blocks
  run_random(f, 9, 17, 1100, seed++);    // dW: several lane blocks
}

void extreme_values(const Fns& f) {
  for (int B : {1, 17, 64})
    for (int N : {1, 16, 33})
      for (int K : {1, 31, 400}) {
        for (int xv : {-127, 0, 127})
          for (int wv : {-127, 127}) {
            const std::vector<std::int8_t> x(std::size_t(B) * K, static_cast<std::int8_t>(xv)),
                w(std::size_t(N) * K, static_cast<std::int8_t>(wv)), e(std::size_t(B) * N, static_cast<std::int8_t>(-xv));
            run_and_check(f, B, N, K, x, w, e);
          }
        // Alternating extremes.
        std::vector<std::int8_t> x(std::size_t(B) * K), w(std::size_t(N) * K), e(std::size_t(B) * N);
        for (std::size_t i = 0; i < x.size(); ++i) x[i] = i % 3 == 0 ? -127 : 127;
        for (std::size_t i = 0; i < w.size(); ++i) w[i] = i % 2 == 0 ? 127 : -127;
        for (std::size_t i = 0; i < e.size(); ++i) e[i] = i % 5 == 0 ? -127 : 127;
        run_and_check(f, B, N, K, x, w, e);
      }
}

// The weight gradient sums over the batch in int64 and saturates: 140 000 samples of 127·127
// exceed INT32_MAX; a batch whose two halves cancel needs the wide sum to come back to 0.
void weight_gradient_saturates(const Fns& f) {
  const int B = 140000, N = 2, K = 3;
  std::vector<std::int8_t> x(std::size_t(B) * K, 127), e(std::size_t(B) * N, 127);
  for (int b = 0; b < B; ++b) e[std::size_t(b) * N + 1] = -127;  // output 1: −127·127 per sample
  auto g = kGuards.make(std::size_t(N) * K);
  f.dw(B, N, K, e.data(), x.data(), g.data());
  for (int k = 0; k < K; ++k) {
    EXPECT_EQ(g[k], INT32_MAX) << k;
    EXPECT_EQ(g[K + k], INT32_MIN) << k;
  }
  kGuards.expect_intact(g, std::size_t(N) * K);
  // Cancellation: +127·127 for the first half, −127·127 for the second; partial sums pass
  // INT32_MAX on the way. Output 1 gets a small exact remainder.
  for (int b = 0; b < B; ++b) {
    e[std::size_t(b) * N] = b < B / 2 ? 127 : -127;
    e[std::size_t(b) * N + 1] = b % 7 == 0 ? 1 : 0;
  }
  f.dw(B, N, K, e.data(), x.data(), g.data());
  const auto want = naive_backward_weights(B, N, K, e, x);
  for (int i = 0; i < N * K; ++i) EXPECT_EQ(g[i], want[i]) << i;
  EXPECT_EQ(want[0], 0);
}

void empty_dims(const Fns& f) {
  const std::vector<std::int8_t> a(64, 5), b(64, 7);
  auto out = kGuards.make(8, 123);
  f.fwd(0, 4, 5, a.data(), b.data(), out.data());  // nothing to write
  f.dx(0, 4, 5, a.data(), b.data(), out.data());
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], 123);
  f.fwd(2, 4, 0, a.data(), b.data(), out.data());  // K = 0: y = 0
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], 0);
  out = kGuards.make(8, 123);
  f.dx(2, 0, 4, a.data(), b.data(), out.data());  // N = 0: dx = 0
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], 0);
  out = kGuards.make(8, 123);
  f.dw(0, 2, 4, a.data(), b.data(), out.data());  // B = 0: g = 0
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], 0);
  kGuards.expect_intact(out, 8);
}

#ifdef ZT_OPENMP
// 1, 2 and 3 threads, and a call from inside a parallel region (serial), give the same bits.
void thread_count_independent(const Fns& f) {
  struct Shape {
    int B, N, K;
  };
  const Shape shapes[] = {{256, 120, 400}, {256, 84, 120}, {67, 33, 129}, {1000, 17, 65}, {5, 700, 300}};
  std::uint64_t seed = 4242;
  for (const Shape& s : shapes) {
    const auto x = random_s8(std::size_t(s.B) * s.K, seed), w = random_s8(std::size_t(s.N) * s.K, seed + 1),
               e = random_s8(std::size_t(s.B) * s.N, seed + 2);
    seed += 3;
    expect_thread_count_independent(describe(s.B, s.N, s.K), [&] { return run_and_check(f, s.B, s.N, s.K, x, w, e); });
  }
}
#endif

// ---- public paths, by ISA --------------------------------------------------------------------

using LinearS8Test = test::IsaPathTest<Fns, fns_of>;

TEST_P(LinearS8Test, SelectsTheRequestedPath) { ZT_EXPECT_S8_SELECTED(linear, GetParam()); }

TEST_P(LinearS8Test, SizeSweep) { size_sweep(f_); }
TEST_P(LinearS8Test, LeNetShapes) { lenet_shapes(f_); }
TEST_P(LinearS8Test, BlockedShapes) { blocked_shapes(f_); }
TEST_P(LinearS8Test, ExtremeValues) { extreme_values(f_); }
TEST_P(LinearS8Test, WeightGradientSaturates) { weight_gradient_saturates(f_); }
TEST_P(LinearS8Test, EmptyDimensions) { empty_dims(f_); }
#ifdef ZT_OPENMP
TEST_P(LinearS8Test, ThreadCountIndependent) { thread_count_independent(f_); }
#endif

INSTANTIATE_TEST_SUITE_P(LinearS8, LinearS8Test, ::testing::ValuesIn(kAllIsas),
                         [](const auto& info) { return test::param_name(isa_name(info.param)); });

// Each optimised path runs its own micro-kernel, chosen as every family chooses; kPortable is
// the plain-loop one on every machine.
TEST(LinearS8MicroTest, PortableIsThePlainLoopKernel) {
  EXPECT_EQ(&s8::micro_kernel(Isa::kPortable), &s8::micro_kernel_portable);
  EXPECT_EQ(&s8::micro_kernel(Isa::kReference), &s8::micro_kernel_portable);
#ifdef ZT_HAVE_AVX512_VNNI
  EXPECT_EQ(&s8::micro_kernel(Isa::kAvx512Vnni), &s8::micro_kernel_avx512_vnni);
#else
  EXPECT_EQ(&s8::micro_kernel(Isa::kAvx512Vnni), &s8::micro_kernel_portable);
#endif
#ifdef ZT_HAVE_AVX2
  EXPECT_EQ(&s8::micro_kernel(Isa::kAvx2), &s8::micro_kernel_avx2);
#else
  EXPECT_EQ(&s8::micro_kernel(Isa::kAvx2), &s8::micro_kernel_portable);
#endif
}

// ---- every micro-kernel tile and dot tile directly, against plain loops -------------------------
// Each (A mode, mr, nv) tile of every available implementation, with and without the rows-mode
// tail quad, quad offsets (b_off), accumulation and a partial last vector; A bytes cover the
// full int8 range and B values [−127, 127] (the contract: gemm_s8_neon.cpp adds two products in an
// int16), so the int32 sums reach their extremes. nq 7 has an odd quad left over after the pairs.
TEST(LinearS8MicroTileTest, EveryTileMatchesPlainLoops) {
  std::uint64_t seed = 31;
  for (Isa isa : kAllIsas) {
    if (isa == Isa::kReference || !isa_available(isa)) continue;  // the reference has no micro-kernel
    const s8::MicroKernel& m = s8::micro_kernel(isa);
    for (bool rows : {false, true})
      for (int nv = 1; nv <= s8::kMaxNv; ++nv)
        for (int mr = 1; mr <= m.max_mr(rows, nv); ++mr)
          for (int nq : {1, 2, 3, 4, 7})
            for (int variant = 0; variant < 5; ++variant) {
              const bool tail = rows && (variant & 1), offsets = variant & 2, accumulate = variant == 3;
              const bool extreme = variant == 4;  // every product −128 · −127: the int16 pair sums at their limit
              const int lanes = nv * s8::kLanes, n_valid = variant == 1 ? lanes - 5 : lanes;
              const std::string what = std::string(isa_name(isa)) + (rows ? " rows" : " packed") +
                                       " mr=" + std::to_string(mr) + " nv=" + std::to_string(nv) +
                                       " nq=" + std::to_string(nq) + " variant=" + std::to_string(variant);
              // A: [nq][mr][4] packed, or mr rows of 4·nq bytes (+ a separate tail quad).
              auto a = random_s8(static_cast<std::size_t>(nq) * mr * 4, seed++, -128, 127);
              const auto a_tail = random_s8(static_cast<std::size_t>(mr) * 4, seed++, -128, 127);
              auto b_s8 = random_s8(static_cast<std::size_t>(nq + 1) * lanes * 4, seed++, -127, 127);
              if (extreme) {
                std::fill(a.begin(), a.end(), std::int8_t{-128});
                std::fill(b_s8.begin(), b_s8.end(), std::int8_t{-127});
              }
              std::vector<std::uint8_t> b(b_s8.size());
              for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::uint8_t>(b_s8[i]) ^ m.b_bias;
              // Quad q of B at b + off[q]: reversed order when offsets are used.
              std::vector<std::int32_t> off(nq);
              for (int q = 0; q < nq; ++q) off[q] = (offsets ? nq - q : q) * lanes * 4;
              const auto a_byte = [&](int row, int q, int sub) -> int {
                if (rows && tail && q == nq - 1) return a_tail[4 * row + sub];
                return rows ? a[(static_cast<std::size_t>(row) * nq + q) * 4 + sub] : a[(static_cast<std::size_t>(q) * mr + row) * 4 + sub];
              };
              std::vector<const std::int8_t*> row_ptr(mr);
              for (int r = 0; r < mr; ++r) row_ptr[r] = a.data() + static_cast<std::size_t>(r) * nq * 4;
              std::vector<std::int32_t> corr(mr, 0);
              for (int r = 0; r < mr; ++r)
                for (int q = 0; q < nq; ++q)
                  for (int sub = 0; sub < 4; ++sub) corr[r] += 128 * a_byte(r, q, sub);
              const int ldc = lanes + 3;
              auto c = kGuards.make(static_cast<std::size_t>(mr) * ldc, 0);
              for (std::size_t i = 0; i < c.size() - kGuards.tail; ++i) c[i] = static_cast<std::int32_t>(i * 7919 % 100003) - 50000;
              auto want = c;
              for (int r = 0; r < mr; ++r)
                for (int l = 0; l < n_valid; ++l) {
                  std::int64_t sum = 0;
                  for (int q = 0; q < nq; ++q)
                    for (int sub = 0; sub < 4; ++sub)
                      sum += a_byte(r, q, sub) * b_s8[off[q] + (l / s8::kLanes) * s8::kVecBytes + 4 * (l % s8::kLanes) + sub];
                  std::int32_t& wv = want[static_cast<std::size_t>(r) * ldc + l];
                  wv = static_cast<std::int32_t>(accumulate ? wv + sum : sum);
                }
              s8::MicroArgs args;
              args.nq = nq;
              if (rows) {
                args.a_rows = row_ptr.data();
                args.a_step = 4;
                args.a_tail = tail ? a_tail.data() : nullptr;
              } else {
                args.a = a.data();
                args.a_step = 4 * mr;
              }
              args.b = b.data();
              args.b_vec = s8::kVecBytes;
              if (offsets) args.b_off = off.data();
              else args.b_step = static_cast<std::ptrdiff_t>(lanes) * 4;
              args.c = c.data();
              args.ldc = ldc;
              args.n_valid = n_valid;
              args.corr = corr.data();
              args.accumulate = accumulate;
              m.tile_fn(rows, mr, nv)(args);
              kGuards.expect_exact(c, want, c.size() - kGuards.tail, what);
            }
  }
}

// The canvas store's run copy: exactly n values for every run length a 16-lane vector can hold.
TEST(LinearS8MicroTileTest, CopyRunCopiesExactlyTheRun) {
  std::int32_t src[s8::kLanes];
  for (int l = 0; l < s8::kLanes; ++l) src[l] = 1000 + l;
  for (int n = 0; n <= s8::kLanes; ++n) {
    std::vector<std::int32_t> dst(s8::kLanes + 4, -7);
    s8::copy_run(dst.data(), src, n);
    for (int l = 0; l < s8::kLanes + 4; ++l) EXPECT_EQ(dst[l], l < n ? 1000 + l : -7) << "n=" << n << " l=" << l;
  }
}

TEST(LinearS8MicroTileTest, EveryDotTileMatchesPlainLoops) {
  std::uint64_t seed = 77;
  for (Isa isa : kAllIsas) {
    if (isa == Isa::kReference || !isa_available(isa)) continue;  // the reference has no micro-kernel
    const s8::MicroKernel& m = s8::micro_kernel(isa);
    for (int ob = 1; ob <= s8::kDotOb; ++ob)
      for (int tb = 1; tb <= s8::kDotTb; ++tb)
        for (int steps : {1, 3}) {
          const std::size_t bytes = static_cast<std::size_t>(steps) * s8::kVecBytes;
          std::vector<std::vector<std::uint8_t>> xs(tb);
          std::vector<std::vector<std::int8_t>> es(ob);
          std::vector<const std::uint8_t*> xp(tb);
          std::vector<const std::int8_t*> ep(ob);
          for (int t = 0; t < tb; ++t) {
            const auto v = random_s8(bytes, seed++, -128, 127);
            xs[t].assign(v.begin(), v.end());
            xp[t] = xs[t].data();
          }
          for (int o = 0; o < ob; ++o) {
            es[o] = random_s8(bytes, seed++, -128, 127);
            ep[o] = es[o].data();
          }
          const int ld = tb + 1;
          auto part = kGuards.make(static_cast<std::size_t>(ob) * ld * s8::kLanes, 0);
          for (std::size_t i = 0; i < part.size() - kGuards.tail; ++i) part[i] = static_cast<std::int32_t>(i % 1000) - 500;
          auto want = part;
          for (int o = 0; o < ob; ++o)
            for (int t = 0; t < tb; ++t)
              for (int l = 0; l < s8::kLanes; ++l) {
                std::int32_t sum = 0;
                for (int i = 0; i < steps; ++i)
                  for (int sub = 0; sub < 4; ++sub) {
                    const std::size_t at = static_cast<std::size_t>(i) * s8::kVecBytes + 4 * l + sub;
                    // The contract: x's value (its byte ^ b_bias as int8) + 128.
                    sum += (static_cast<std::int8_t>(xs[t][at] ^ m.b_bias) + 128) * es[o][at];
                  }
                want[(static_cast<std::size_t>(o) * ld + t) * s8::kLanes + l] += sum;
              }
          s8::DotArgs args;
          args.steps = steps;
          args.x = xp.data();
          args.e = ep.data();
          args.part = part.data();
          args.ld = ld;
          m.run_dot(ob, tb, args);
          kGuards.expect_exact(part, want, part.size() - kGuards.tail,
                       std::string(isa_name(isa)) + " ob=" + std::to_string(ob) + " tb=" + std::to_string(tb));
        }
  }
}

// ---- the reference against the naive loops -----------------------------------------------------

TEST(LinearS8RefTest, MatchesNaiveLoops) {
  std::uint64_t seed = 77;
  for (int B : {1, 4, 17})
    for (int N : {1, 5, 16, 33})
      for (int K : {1, 7, 64, 129}) {
        const auto x = random_s8(std::size_t(B) * K, seed), w = random_s8(std::size_t(N) * K, seed + 1),
                   e = random_s8(std::size_t(B) * N, seed + 2, -128, 127);
        seed += 3;
        std::vector<std::int32_t> y(std::size_t(B) * N), dx(std::size_t(B) * K), g(std::size_t(N) * K);
        linear_forward_s8_ref(B, N, K, x.data(), w.data(), y.data());
        linear_backward_input_s8_ref(B, N, K, e.data(), w.data(), dx.data());
        linear_backward_weights_s8_ref(B, N, K, e.data(), x.data(), g.data());
        EXPECT_EQ(y, naive_forward(B, N, K, x, w)) << describe(B, N, K);
        EXPECT_EQ(dx, naive_backward_input(B, N, K, e, w)) << describe(B, N, K);
        EXPECT_EQ(g, naive_backward_weights(B, N, K, e, x)) << describe(B, N, K);
      }
  // A hand-checked value: x = [1, −2, 3], w = [[4, 5, −6]] → y = 4 − 10 − 18 = −24.
  const std::int8_t x[] = {1, -2, 3}, w[] = {4, 5, -6};
  std::int32_t y = 0;
  linear_forward_s8_ref(1, 1, 3, x, w, &y);
  EXPECT_EQ(y, -24);
}

}  // namespace
}  // namespace zt::kernels
