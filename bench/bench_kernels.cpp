// zotrain_bench_kernels [batch [int8]] — GFLOP/s of reference vs portable (and NEON, where the
// CPU has it) FP32 kernels on the
// LeNet-5 shapes (conv fwd/bwd, linear fwd/bwd) with 1 and 2 threads, and the time of a whole
// portable LeNet-5 forward (conv, ReLU, pool, linear). FLOPs count 2 per multiply-accumulate,
// padded taps included. Each figure is the best of 5 repetitions of a ~50 ms timing loop.
// Then the int8 products (linear_s8, conv2d_s8) on the int8 trainer's LeNet-5 shapes (conv2
// without padding, fc1 400→120) next to the FP32 kernels on the same shapes: GOP/s (2 per
// multiply-accumulate) and the int8 / FP32 speed ratio, with 1 and 2 threads.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <time.h>

#ifdef ZT_OPENMP
#include <omp.h>
#endif

#include "zotrain/kernels/conv2d.hpp"
#include "zotrain/kernels/conv2d_s8.hpp"
#include "zotrain/kernels/gemm.hpp"
#include "zotrain/kernels/linear_s8.hpp"
#include "zotrain/kernels/pool.hpp"
#include "zotrain/kernels/relu.hpp"

namespace {

using namespace zt::kernels;
using Clock = std::chrono::steady_clock;

std::vector<float> random_vec(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// Seconds per call: best over 5 repetitions of a loop lasting ≥ target seconds.
double time_call(const std::function<void()>& fn, double target = 0.05) {
  fn();  // warm up (grows packing buffers, wakes threads)
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    long iters = 0;
    const auto t0 = Clock::now();
    double elapsed = 0.0;
    do {
      fn();
      ++iters;
      elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    } while (elapsed < target);
    best = std::min(best, elapsed / iters);
  }
  return best;
}

// Microseconds of this thread's CPU time per call: minimum over many calls (robust to a shared,
// noisy machine; valid for single-threaded runs only).
double min_cpu_us(const std::function<void()>& fn, double target = 0.1) {
  const auto now = [] {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
  };
  fn();
  double best = 1e30, spent = 0.0;
  for (int rep = 0; rep < 20000 && (rep < 20 || spent < target); ++rep) {
    const double t0 = now();
    fn();
    const double dt = now() - t0;
    best = std::min(best, dt), spent += dt;
  }
  return best * 1e6;
}

void set_threads(int t) {
#ifdef ZT_OPENMP
  omp_set_num_threads(t);
#else
  (void)t;
#endif
}

struct Row {
  std::string name;
  double flops;
  std::function<void(Isa)> run;
};

std::vector<std::int8_t> random_s8(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(-127, 127);
  std::vector<std::int8_t> v(n);
  for (auto& x : v) x = static_cast<std::int8_t>(u(rng));
  return v;
}

// One line of the int8 table: the same product in FP32 and in int8 (portable paths).
struct PairRow {
  std::string name;
  double ops;
  std::function<void()> f32, s8;
};

int max_threads() {
#ifdef ZT_OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// int8 vs FP32 on the int8 LeNet-5 (NITI) shapes: conv1 1→6 28x28 pad 2, conv2 6→16 14x14 pad 0,
// fc1 400→120, fc2 120→84, fc3 84→10. The first layer's backward has no input gradient.
void bench_int8(int batch) {
  const Conv2dShape c1{batch, 1, 28, 28, 6, 5, 2}, c2{batch, 6, 14, 14, 16, 5, 0};
  set_threads(2);
  const int threads = std::max(2, max_threads());
  std::vector<float> f_scratch(std::max(conv2d_scratch_floats(c1), conv2d_scratch_floats(c2)));
  std::vector<unsigned char> s_scratch(std::max(conv2d_s8_scratch_bytes(c1, threads), conv2d_s8_scratch_bytes(c2, threads)));
  struct Conv {
    const char* name;
    Conv2dShape s;
    bool dx;
    std::size_t nx, nw, ny;
  };
  const auto conv_of = [](const char* name, const Conv2dShape& s, bool dx) {
    return Conv{name, s, dx, std::size_t(s.batch) * s.in_c * s.in_h * s.in_w, std::size_t(s.out_c) * s.in_c * s.kernel * s.kernel,
                std::size_t(s.batch) * s.out_c * s.out_h() * s.out_w()};
  };
  const Conv convs[] = {conv_of("conv1", c1, false), conv_of("conv2", c2, true)};
  struct Fc {
    const char* name;
    int in, out;
  };
  const Fc fcs[] = {{"fc1", 400, 120}, {"fc2", 120, 84}, {"fc3", 84, 10}};
  // Buffers (kept alive for the whole table).
  std::vector<std::vector<float>> fb;
  std::vector<std::vector<std::int8_t>> sb;
  std::vector<std::vector<std::int32_t>> ib;
  unsigned seed = 100;
  const auto fvec = [&](std::size_t n) { fb.push_back(random_vec(n, seed++)); return fb.back().data(); };
  const auto svec = [&](std::size_t n) { sb.push_back(random_s8(n, seed++)); return sb.back().data(); };
  const auto ivec = [&](std::size_t n) { ib.emplace_back(n); return ib.back().data(); };
  fb.reserve(64), sb.reserve(64), ib.reserve(64);
  std::vector<PairRow> rows;
  for (const Conv& c : convs) {
    const double macs = double(c.ny) * c.s.in_c * c.s.kernel * c.s.kernel;
    float *fx = fvec(c.nx), *fw = fvec(c.nw), *fy = fvec(c.ny), *fdy = fvec(c.ny), *fdx = fvec(c.nx), *fdw = fvec(c.nw);
    std::int8_t *sx = svec(c.nx), *sw = svec(c.nw), *se = svec(c.ny);
    std::int32_t *sy = ivec(c.ny), *sdx = ivec(c.nx), *sg = ivec(c.nw);
    const Conv2dShape s = c.s;
    const bool dx = c.dx;
    std::string shape = std::to_string(s.in_c) + "->" + std::to_string(s.out_c) + " " + std::to_string(s.in_h) + "x" +
                        std::to_string(s.in_w) + " p" + std::to_string(s.pad);
    rows.push_back({std::string(c.name) + " fwd  " + shape, 2 * macs,
                    [=, &f_scratch] { conv2d_forward_f32_portable(s, fx, fw, nullptr, fy, f_scratch.data()); },
                    [=, &s_scratch] { conv2d_forward_s8_portable(s, sx, sw, sy, s_scratch.data()); }});
    rows.push_back({std::string(c.name) + (dx ? " bwd  dx,dW" : " bwd  dW"), (dx ? 4 : 2) * macs,
                    [=, &f_scratch] {
                      conv2d_backward_f32_portable(s, fx, fw, fdy, dx ? fdx : nullptr, fdw, nullptr, f_scratch.data());
                    },
                    [=, &s_scratch] {
                      if (dx) conv2d_backward_input_s8_portable(s, se, sw, sdx, s_scratch.data());
                      conv2d_backward_weights_s8_portable(s, sx, se, sg, s_scratch.data());
                    }});
  }
  for (const Fc& f : fcs) {
    const double macs = double(batch) * f.in * f.out;
    const int B = batch, N = f.out, K = f.in;
    float *fx = fvec(std::size_t(B) * K), *fw = fvec(std::size_t(N) * K), *fy = fvec(std::size_t(B) * N),
          *fdy = fvec(std::size_t(B) * N), *fdx = fvec(std::size_t(B) * K), *fdw = fvec(std::size_t(N) * K);
    std::int8_t *sx = svec(std::size_t(B) * K), *sw = svec(std::size_t(N) * K), *se = svec(std::size_t(B) * N);
    std::int32_t *sy = ivec(std::size_t(B) * N), *sdx = ivec(std::size_t(B) * K), *sg = ivec(std::size_t(N) * K);
    rows.push_back({std::string(f.name) + " fwd  " + std::to_string(K) + "->" + std::to_string(N), 2 * macs,
                    [=] { gemm_f32_portable(false, true, B, N, K, fx, K, fw, K, fy, N, false); },
                    [=] { linear_forward_s8_portable(B, N, K, sx, sw, sy); }});
    rows.push_back({std::string(f.name) + " bwd  dx,dW", 4 * macs,
                    [=] {
                      gemm_f32_portable(false, false, B, K, N, fdy, N, fw, K, fdx, K, false);
                      gemm_f32_portable(true, false, N, K, B, fdy, N, fx, K, fdw, K, false);
                    },
                    [=] {
                      linear_backward_input_s8_portable(B, N, K, se, sw, sdx);
                      linear_backward_weights_s8_portable(B, N, K, se, sx, sg);
                    }});
  }
  std::printf("\nint8 vs FP32 (portable paths), int8 LeNet-5 shapes, batch %d: GOP/s and int8/FP32 ratio\n"
              "(1t: minimum thread CPU time per call; 2t: best wall time of 5 loops)\n", batch);
  std::printf("%-26s %8s %11s %11s %6s %11s %11s %6s\n", "kernel", "MOP", "f32 1t", "s8 1t", "x", "f32 2t", "s8 2t", "x");
  double sum_f1 = 0, sum_s1 = 0, sum_f2 = 0, sum_s2 = 0;
  for (const PairRow& r : rows) {
    set_threads(1);  // 1 thread: minimum thread CPU time per call (robust on a shared machine)
    const double f1 = min_cpu_us(r.f32) * 1e-6, s1 = min_cpu_us(r.s8) * 1e-6;
    set_threads(2);
    const double f2 = time_call(r.f32), s2 = time_call(r.s8);
    sum_f1 += f1, sum_s1 += s1, sum_f2 += f2, sum_s2 += s2;
    std::printf("%-26s %8.2f %6.1f GF/s %6.1f GOP/s %5.2fx %6.1f GF/s %6.1f GOP/s %5.2fx\n", r.name.c_str(), r.ops * 1e-6,
                r.ops / f1 * 1e-9, r.ops / s1 * 1e-9, f1 / s1, r.ops / f2 * 1e-9, r.ops / s2 * 1e-9, f2 / s2);
  }
  std::printf("%-26s %8s %8.0f us %8.0f us  %5.2fx %8.0f us %8.0f us  %5.2fx\n", "sum of the rows (time)", "", sum_f1 * 1e6,
              sum_s1 * 1e6, sum_f1 / sum_s1, sum_f2 * 1e6, sum_s2 * 1e6, sum_f2 / sum_s2);
}

}  // namespace

int main(int argc, char** argv) {
  const int batch = argc > 1 ? std::atoi(argv[1]) : 32;
  if (argc > 2 && std::string(argv[2]) == "int8") {  // zotrain_bench_kernels 256 int8: the int8 table only
    bench_int8(batch);
    return 0;
  }
#ifdef ZT_OPENMP
  const bool have_omp = true;
#else
  const bool have_omp = false;
#endif
  std::printf("zotrain_bench_kernels: LeNet-5 shapes, batch %d, OpenMP %s\n", batch, have_omp ? "on" : "off");

  const Conv2dShape c1{batch, 1, 28, 28, 6, 5, 2}, c2{batch, 6, 14, 14, 16, 5, 2};
  const auto conv_macs = [](const Conv2dShape& s) {
    return double(s.batch) * s.out_c * s.out_h() * s.out_w() * s.in_c * s.kernel * s.kernel;
  };
  std::vector<float> scratch(std::max(conv2d_scratch_floats(c1), conv2d_scratch_floats(c2)));
  // Buffers for the whole network.
  auto x0 = random_vec(std::size_t(batch) * 784, 1);
  auto w1 = random_vec(150, 2), b1 = random_vec(6, 3), w2 = random_vec(2400, 4), b2 = random_vec(16, 5);
  auto f1 = random_vec(120 * 784, 6), fb1 = random_vec(120, 7), f2 = random_vec(84 * 120, 8),
       fb2 = random_vec(84, 9), f3 = random_vec(10 * 84, 10), fb3 = random_vec(10, 11);
  std::vector<float> a1(std::size_t(batch) * 6 * 784), p1(std::size_t(batch) * 6 * 196),
      a2(std::size_t(batch) * 16 * 196), p2(std::size_t(batch) * 784), h1(std::size_t(batch) * 120),
      h2(std::size_t(batch) * 84), out(std::size_t(batch) * 10);
  auto dy1 = random_vec(a1.size(), 12), dy2 = random_vec(a2.size(), 13);
  std::vector<float> dx2(p1.size()), dw1(150), db1(6), dw2(2400), db2(16);
  auto g_h1 = random_vec(h1.size(), 14), g_h2 = random_vec(h2.size(), 15), g_out = random_vec(out.size(), 16);
  std::vector<float> dp2(p2.size()), dh1(h1.size()), dh2(h2.size()), df1(f1.size()), df2(f2.size()), df3(f3.size());

  std::vector<Row> rows;
  rows.push_back({"conv1 fwd  1->6 28x28", 2 * conv_macs(c1), [&](Isa i) {
                    select_conv2d_forward_f32(i)(c1, x0.data(), w1.data(), b1.data(), a1.data(), scratch.data());
                  }});
  rows.push_back({"conv1 bwd  dw,db (no dx)", 2 * conv_macs(c1), [&](Isa i) {
                    select_conv2d_backward_f32(i)(c1, x0.data(), w1.data(), dy1.data(), nullptr, dw1.data(),
                                                  db1.data(), scratch.data());
                  }});
  rows.push_back({"conv2 fwd  6->16 14x14", 2 * conv_macs(c2), [&](Isa i) {
                    select_conv2d_forward_f32(i)(c2, p1.data(), w2.data(), b2.data(), a2.data(), scratch.data());
                  }});
  rows.push_back({"conv2 bwd  dx,dw,db", 4 * conv_macs(c2), [&](Isa i) {
                    select_conv2d_backward_f32(i)(c2, p1.data(), w2.data(), dy2.data(), dx2.data(), dw2.data(),
                                                  db2.data(), scratch.data());
                  }});
  struct Fc { const char* name; int in, out; float *x, *w, *y, *gy, *gx, *gw; };
  const Fc fcs[] = {{"fc1", 784, 120, p2.data(), f1.data(), h1.data(), g_h1.data(), dp2.data(), df1.data()},
                    {"fc2", 120, 84, h1.data(), f2.data(), h2.data(), g_h2.data(), dh1.data(), df2.data()},
                    {"fc3", 84, 10, h2.data(), f3.data(), out.data(), g_out.data(), dh2.data(), df3.data()}};
  for (const Fc& f : fcs) {
    const double macs = double(batch) * f.in * f.out;
    rows.push_back({std::string(f.name) + " fwd  " + std::to_string(f.in) + "->" + std::to_string(f.out), 2 * macs,
                    [&, f](Isa i) { select_gemm_f32(i)(false, true, batch, f.out, f.in, f.x, f.in, f.w, f.in, f.y, f.out, false); }});
    rows.push_back({std::string(f.name) + " bwd  dx,dW", 4 * macs, [&, f](Isa i) {
                      const auto g = select_gemm_f32(i);
                      g(false, false, batch, f.in, f.out, f.gy, f.out, f.w, f.in, f.gx, f.in, false);
                      g(true, false, f.out, f.in, batch, f.gy, f.out, f.x, f.in, f.gw, f.in, true);
                    }});
  }

  const bool neon = isa_available(Isa::kNeon);
  std::printf("%-26s %10s %12s %12s %12s %12s%s\n", "kernel", "MFLOP", "ref 1t", "port 1t", "port 2t", "2t time",
              neon ? "      neon 1t      neon 2t" : "");
  for (const Row& r : rows) {
    set_threads(1);
    const double t_ref = time_call([&] { r.run(Isa::kReference); }, 0.02);
    const double t_p1 = time_call([&] { r.run(Isa::kPortable); });
    const double t_n1 = neon ? time_call([&] { r.run(Isa::kNeon); }) : 0.0;
    set_threads(2);
    const double t_p2 = time_call([&] { r.run(Isa::kPortable); });
    const double t_n2 = neon ? time_call([&] { r.run(Isa::kNeon); }) : 0.0;
    std::printf("%-26s %10.2f %8.2f GF/s %7.2f GF/s %7.2f GF/s %8.1f us", r.name.c_str(), r.flops * 1e-6,
                r.flops / t_ref * 1e-9, r.flops / t_p1 * 1e-9, r.flops / t_p2 * 1e-9, t_p2 * 1e6);
    if (neon) std::printf(" %7.2f GF/s %7.2f GF/s", r.flops / t_n1 * 1e-9, r.flops / t_n2 * 1e-9);
    std::printf("\n");
  }

  // Conv layers alone, one thread, at this batch and at batch 4 (the trainer's per-chunk calls).
  {
    set_threads(1);
    const Isa fast = neon ? Isa::kNeon : Isa::kPortable;
    std::printf("conv (%s), 1 thread, us per call (min thread CPU time): batch %d | batch 4\n",
                isa_name(fast), batch);
    const auto run_conv = [&](const Conv2dShape& s0, int b, bool fwd, bool with_dx) {
      Conv2dShape s = s0;
      s.batch = std::min(b, batch);
      std::vector<float> sc(conv2d_scratch_floats(s));
      const float* x = s.in_c == 1 ? x0.data() : p1.data();
      float* y = s.in_c == 1 ? a1.data() : a2.data();
      const float* w = s.in_c == 1 ? w1.data() : w2.data();
      const float* bias = s.in_c == 1 ? b1.data() : b2.data();
      const float* dy = s.in_c == 1 ? dy1.data() : dy2.data();
      float* dw = s.in_c == 1 ? dw1.data() : dw2.data();
      float* db = s.in_c == 1 ? db1.data() : db2.data();
      return min_cpu_us([&] {
        if (fwd)
          select_conv2d_forward_f32(fast)(s, x, w, bias, y, sc.data());
        else
          select_conv2d_backward_f32(fast)(s, x, w, dy, with_dx ? dx2.data() : nullptr, dw, db, sc.data());
      });
    };
    struct ConvCase { const char* name; const Conv2dShape* s; bool fwd, dx; };
    const ConvCase cases[] = {{"conv1 fwd", &c1, true, false}, {"conv1 bwd dw,db", &c1, false, false},
                              {"conv2 fwd", &c2, true, false}, {"conv2 bwd dx,dw,db", &c2, false, true}};
    for (const ConvCase& c : cases)
      std::printf("  %-20s %9.1f us | %8.1f us\n", c.name, run_conv(*c.s, batch, c.fwd, c.dx),
                  run_conv(*c.s, 4, c.fwd, c.dx));
  }

  // Whole forward: conv1, relu, pool, conv2, relu, pool, fc1, relu, fc2, relu, fc3.
  const auto forward = [&](Isa isa) {
    const auto conv = select_conv2d_forward_f32(isa);
    const auto relu = select_relu_forward_f32(isa);
    const auto pool = select_maxpool2x2_forward_f32(isa);
    const auto gemm = select_gemm_f32(isa);
    conv(c1, x0.data(), w1.data(), b1.data(), a1.data(), scratch.data());
    relu(a1.size(), a1.data(), a1.data());
    pool(batch * 6, 28, 28, a1.data(), p1.data());
    conv(c2, p1.data(), w2.data(), b2.data(), a2.data(), scratch.data());
    relu(a2.size(), a2.data(), a2.data());
    pool(batch * 16, 14, 14, a2.data(), p2.data());
    const float* in = p2.data();
    for (const Fc& f : fcs) {  // bias added as a broadcast row before an accumulating GEMM
      const float* bias = f.w == f1.data() ? fb1.data() : f.w == f2.data() ? fb2.data() : fb3.data();
      for (int b = 0; b < batch; ++b) std::copy(bias, bias + f.out, f.y + std::size_t(b) * f.out);
      gemm(false, true, batch, f.out, f.in, in, f.in, f.w, f.in, f.y, f.out, true);
      if (f.y != out.data()) relu(std::size_t(batch) * f.out, f.y, f.y);
      in = f.y;
    }
  };
  const double fwd_macs = conv_macs(c1) + conv_macs(c2) + batch * (784.0 * 120 + 120 * 84 + 84 * 10);
  set_threads(1);
  const double tf_ref = time_call([&] { forward(Isa::kReference); }, 0.02);
  const double tf1 = time_call([&] { forward(Isa::kPortable); }, 0.2);
  set_threads(2);
  const double tf2 = time_call([&] { forward(Isa::kPortable); }, 0.2);
  std::printf("LeNet-5 forward, batch %d (%.1f M MAC): ref 1t %.3f ms | portable 1t %.3f ms (%.1f GF/s) | "
              "portable 2t %.3f ms (%.1f GF/s)\n",
              batch, fwd_macs * 1e-6, tf_ref * 1e3, tf1 * 1e3, 2 * fwd_macs / tf1 * 1e-9, tf2 * 1e3,
              2 * fwd_macs / tf2 * 1e-9);
  if (neon) {
    set_threads(1);
    const double tn1 = time_call([&] { forward(Isa::kNeon); }, 0.2);
    set_threads(2);
    const double tn2 = time_call([&] { forward(Isa::kNeon); }, 0.2);
    std::printf("LeNet-5 forward, batch %d: neon 1t %.3f ms (%.1f GF/s) | neon 2t %.3f ms (%.1f GF/s)\n", batch,
                tn1 * 1e3, 2 * fwd_macs / tn1 * 1e-9, tn2 * 1e3, 2 * fwd_macs / tn2 * 1e-9);
  }

  bench_int8(batch);
  return 0;
}
