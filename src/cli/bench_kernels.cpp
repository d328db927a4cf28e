// `zotrain bench`'s kernel figures: best of a few timing loops of wall time, each loop at least
// `target` seconds long, after one warm-up call; FLOPs / integer OPs count 2 per
// multiply-accumulate (padded taps included).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench_parts.hpp"
#include "zotrain/kernels/conv2d.hpp"
#include "zotrain/kernels/conv2d_s8.hpp"
#include "zotrain/kernels/elementwise_s8.hpp"
#include "zotrain/kernels/gemm.hpp"
#include "zotrain/kernels/linear_s8.hpp"
#include "zotrain/kernels/perturb.hpp"
#include "zotrain/kernels/perturb_s8.hpp"
#include "zotrain/kernels/pool.hpp"
#include "zotrain/kernels/quant.hpp"
#include "zotrain/kernels/relu.hpp"
#include "zotrain/nn/architectures.hpp"
#include "zotrain/nn/int8_setup.hpp"
#include "zotrain/nn/lenet5.hpp"

namespace zt::cli {
namespace {

using namespace zt::kernels;
using Clock = BenchClock;
using nlohmann::json;

// Seconds per call: one warm-up call (grows packing buffers, wakes threads), then the best of
// `reps` loops, each repeating the call for at least `target` seconds.
double time_call(const std::function<void()>& fn, double target, int reps, bool warm_up = true) {
  if (warm_up) fn();
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    long iters = 0;
    const auto t0 = Clock::now();
    double elapsed = 0;
    do {
      fn();
      ++iters;
      elapsed = seconds_since(t0);
    } while (elapsed < target);
    best = std::min(best, elapsed / static_cast<double>(iters));
  }
  return best;
}

// ---- kernels --------------------------------------------------------------------------------

enum class Unit { kFlops, kIntOps, kElements, kNsPerElement };

const char* unit_name(Unit u) {
  switch (u) {
    case Unit::kFlops: return "GFLOP/s";
    case Unit::kIntOps: return "GOP/s";
    case Unit::kElements: return "Gelem/s";
    case Unit::kNsPerElement: return "ns/elem";
  }
  return "?";
}

struct KernelCase {
  std::string family;  // gemm_f32, conv2d_f32, linear_s8, ...
  std::string name;    // layer and direction, e.g. "lenet fc1 fwd 784->120"
  double work;         // FLOPs, integer OPs or elements per call
  Unit unit;
  bool one_path;       // the family has no per-ISA selection: timed once
  std::function<void(Isa)> run;
};

// Owns the benchmark's buffers (deque: element addresses stay valid as it grows).
class Buffers {
 public:
  float* f32(std::size_t n) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    auto& v = f_.emplace_back(n);
    for (auto& x : v) x = u(rng_);
    return v.data();
  }
  std::int8_t* s8(std::size_t n) {
    std::uniform_int_distribution<int> u(-127, 127);
    auto& v = s_.emplace_back(n);
    for (auto& x : v) x = static_cast<std::int8_t>(u(rng_));
    return v.data();
  }
  std::int32_t* s32(std::size_t n, int magnitude = 0) {
    std::uniform_int_distribution<int> u(-magnitude, magnitude);
    auto& v = i_.emplace_back(n);
    if (magnitude > 0)
      for (auto& x : v) x = u(rng_);
    return v.data();
  }
  unsigned char* bytes(std::size_t n) { return b_.emplace_back(n).data(); }

 private:
  std::mt19937 rng_{20240501};
  std::deque<std::vector<float>> f_;
  std::deque<std::vector<std::int8_t>> s_;
  std::deque<std::vector<std::int32_t>> i_;
  std::deque<std::vector<unsigned char>> b_;
};

std::size_t conv_in(const Conv2dShape& s) { return std::size_t(s.batch) * s.in_c * s.in_h * s.in_w; }
std::size_t conv_out(const Conv2dShape& s) { return std::size_t(s.batch) * s.out_c * s.out_h() * s.out_w(); }
std::size_t conv_w(const Conv2dShape& s) { return std::size_t(s.out_c) * s.in_c * s.kernel * s.kernel; }
double conv_macs(const Conv2dShape& s) { return double(conv_out(s)) * s.in_c * s.kernel * s.kernel; }
std::string conv_desc(const Conv2dShape& s) {
  return std::to_string(s.in_c) + "->" + std::to_string(s.out_c) + " " + std::to_string(s.in_h) + "x" +
         std::to_string(s.in_w) + " p" + std::to_string(s.pad);
}

struct Fc {
  std::string name;
  int rows, in, out;  // rows: B (LeNet, PointNet head) or B·points (PointNet per-point layers)
  bool bwd;
};

// FP32 and int8 products of one linear layer: y[rows, out] = x[rows, in] · w[out, in]ᵀ, as
// nn::Linear / nn::Int8Net call them; backward = input gradient + weight gradient.
void add_linear(std::vector<KernelCase>& cases, Buffers& buf, const std::string& model, const Fc& f) {
  const int M = f.rows, N = f.out, K = f.in;
  const std::size_t nx = std::size_t(M) * K, nw = std::size_t(N) * K, ny = std::size_t(M) * N;
  const double macs = double(M) * N * K;
  const std::string shape = std::to_string(K) + "->" + std::to_string(N) + " x" + std::to_string(M);
  float *x = buf.f32(nx), *w = buf.f32(nw), *y = buf.f32(ny), *dy = buf.f32(ny), *dx = buf.f32(nx), *dw = buf.f32(nw);
  cases.push_back({"gemm_f32", model + " " + f.name + " fwd " + shape, 2 * macs, Unit::kFlops, false,
                   [=](Isa i) { select_gemm_f32(i)(false, true, M, N, K, x, K, w, K, y, N, false); }});
  if (f.bwd)
    cases.push_back({"gemm_f32", model + " " + f.name + " bwd dx,dW", 4 * macs, Unit::kFlops, false, [=](Isa i) {
                       const GemmF32Fn g = select_gemm_f32(i);
                       g(false, false, M, K, N, dy, N, w, K, dx, K, false);
                       g(true, false, N, K, M, dy, N, x, K, dw, K, false);
                     }});
  std::int8_t *sx = buf.s8(nx), *sw = buf.s8(nw), *se = buf.s8(ny);
  std::int32_t *sy = buf.s32(ny), *sdx = buf.s32(nx), *sg = buf.s32(nw);
  cases.push_back({"linear_s8", model + " " + f.name + " fwd " + shape, 2 * macs, Unit::kIntOps, false,
                   [=](Isa i) { select_linear_forward_s8(i)(M, N, K, sx, sw, sy); }});
  if (f.bwd)
    cases.push_back({"linear_s8", model + " " + f.name + " bwd dx,dW", 4 * macs, Unit::kIntOps, false, [=](Isa i) {
                       select_linear_backward_input_s8(i)(M, N, K, se, sw, sdx);
                       select_linear_backward_weights_s8(i)(M, N, K, se, sx, sg);
                     }});
}

// FP32 and int8 products of one convolution (LeNet-5); `dx`: the backward also computes the
// input gradient (not for the first layer).
void add_conv(std::vector<KernelCase>& cases, Buffers& buf, const std::string& name, const Conv2dShape& s,
              bool dx_too, int threads) {
  const double macs = conv_macs(s);
  float *x = buf.f32(conv_in(s)), *w = buf.f32(conv_w(s)), *b = buf.f32(std::size_t(s.out_c)),
        *y = buf.f32(conv_out(s)), *dy = buf.f32(conv_out(s)), *dx = buf.f32(conv_in(s)),
        *dw = buf.f32(conv_w(s)), *db = buf.f32(std::size_t(s.out_c)),
        *scratch = buf.f32(conv2d_scratch_floats(s));
  const std::string d = dx_too ? " bwd dx,dW" : " bwd dW";
  cases.push_back({"conv2d_f32", "lenet " + name + " fwd " + conv_desc(s), 2 * macs, Unit::kFlops, false,
                   [=](Isa i) { select_conv2d_forward_f32(i)(s, x, w, b, y, scratch); }});
  cases.push_back({"conv2d_f32", "lenet " + name + d + ",db", (dx_too ? 4 : 2) * macs, Unit::kFlops, false,
                   [=](Isa i) { select_conv2d_backward_f32(i)(s, x, w, dy, dx_too ? dx : nullptr, dw, db, scratch); }});
  std::int8_t *sx = buf.s8(conv_in(s)), *sw = buf.s8(conv_w(s)), *se = buf.s8(conv_out(s));
  std::int32_t *sy = buf.s32(conv_out(s)), *sdx = buf.s32(conv_in(s)), *sg = buf.s32(conv_w(s));
  unsigned char* ss = buf.bytes(conv2d_s8_scratch_bytes(s, threads));
  cases.push_back({"conv2d_s8", "lenet " + name + " fwd " + conv_desc(s), 2 * macs, Unit::kIntOps, false,
                   [=](Isa i) { select_conv2d_forward_s8(i)(s, sx, sw, sy, ss); }});
  cases.push_back({"conv2d_s8", "lenet " + name + d, (dx_too ? 4 : 2) * macs, Unit::kIntOps, false, [=](Isa i) {
                     if (dx_too) select_conv2d_backward_input_s8(i)(s, se, sw, sdx, ss);
                     select_conv2d_backward_weights_s8(i)(s, sx, se, sg, ss);
                   }});
}

// The cases, grouped by family. LeNet-5 at batch B (docs/design.md §2; the int8 network has the
// same shapes); PointNet's per-point layers on `rows` rows (the lean plan streams chunks of samples
// × points through them) and its head at batch B.
std::vector<KernelCase> kernel_cases(Buffers& buf, int B, int rows, int threads) {
  std::vector<KernelCase> cases;
  const Conv2dShape c1{B, 1, 28, 28, 6, 5, 2}, c2{B, 6, 14, 14, 16, 5, 2};
  add_conv(cases, buf, "conv1", c1, false, threads);
  add_conv(cases, buf, "conv2", c2, true, threads);
  for (const Fc& f : {Fc{"fc1", B, 784, 120, true}, Fc{"fc2", B, 120, 84, true}, Fc{"fc3", B, 84, 10, true}})
    add_linear(cases, buf, "lenet", f);
  for (const Fc& f : {Fc{"mlp1", rows, 3, 64, false}, Fc{"mlp3", rows, 64, 64, true}, Fc{"mlp5", rows, 128, 1024, true},
                      Fc{"fc1", B, 1024, 512, true}, Fc{"fc3", B, 256, 40, false}})
    add_linear(cases, buf, "pointnet", f);
  // Elementwise on conv1's output [B, 6, 28, 28] (the largest activation of LeNet-5).
  const std::size_t n = conv_out(c1);
  const int planes = B * 6;
  float *a = buf.f32(n), *r = buf.f32(n), *g = buf.f32(n), *dg = buf.f32(n), *p = buf.f32(n / 4), *dp = buf.f32(n / 4);
  cases.push_back({"relu_f32", "lenet relu1 fwd", double(n), Unit::kElements, false,
                   [=](Isa i) { select_relu_forward_f32(i)(n, a, r); }});
  cases.push_back({"relu_f32", "lenet relu1 bwd", double(n), Unit::kElements, false,
                   [=](Isa i) { select_relu_backward_f32(i)(n, r, g, dg); }});
  cases.push_back({"maxpool_f32", "lenet pool1 fwd 28x28", double(n), Unit::kElements, false,
                   [=](Isa i) { select_maxpool2x2_forward_f32(i)(planes, 28, 28, a, p); }});
  cases.push_back({"maxpool_f32", "lenet pool1 bwd", double(n), Unit::kElements, false,
                   [=](Isa i) { select_maxpool2x2_backward_f32(i)(planes, 28, 28, a, dp, dg); }});
  std::int32_t* acc = buf.s32(n, 1 << 20);
  std::int8_t *q = buf.s8(n), *q2 = buf.s8(n), *qp = buf.s8(n / 4);
  cases.push_back({"requantize_s8", "lenet conv1 out int32->int8", double(n), Unit::kElements, false,
                   [=](Isa i) { select_requantize_s32_s8(i)(acc, n, q); }});
  cases.push_back({"relu_s8", "lenet relu1 fwd (one path)", double(n), Unit::kElements, true,
                   [=](Isa) { relu_forward_s8(n, q, q2); }});
  cases.push_back({"maxpool_s8", "lenet pool1 fwd (one path)", double(n), Unit::kElements, true,
                   [=](Isa) { maxpool2x2_forward_s8(planes, 28, 28, q, qp); }});
  // One ZO pass over the whole parameter vector (Full ZO): LeNet-5 107,786 FP32 parameters /
  // 107,550 int8 weights; PointNet 816,744 / its int8 weights.
  auto lenet = nn::make_lenet5(Isa::kReference);
  auto pointnet = nn::make_model(Arch::kPointNet, Isa::kReference);
  auto lenet8 = nn::make_int8_net(*lenet, Isa::kReference);
  auto pointnet8 = nn::make_int8_net(*pointnet, Isa::kReference);
  struct Params {
    std::string model;
    std::size_t f32, s8;
  };
  for (const Params& m : {Params{"lenet", lenet->num_params(), lenet8->num_weights()},
                          Params{"pointnet", pointnet->num_params(), pointnet8->num_weights()}}) {
    float* theta = buf.f32(m.f32);
    const std::size_t nf = m.f32, ns = m.s8;
    auto sign = std::make_shared<int>(1);  // alternate ±: keep theta where it started
    // Rademacher and uniform have one fast path for every ISA (generic vectors).
    for (PerturbSource src : {PerturbSource::kGaussian, PerturbSource::kRademacher, PerturbSource::kUniform}) {
      const bool one = src != PerturbSource::kGaussian;
      cases.push_back({"perturb_f32",
                       m.model + " " + perturb_source_name(src) + (one ? " (one path)" : " pass") + " n=" + std::to_string(nf),
                       double(nf), Unit::kNsPerElement, one, [=](Isa i) {
                         *sign = -*sign;
                         select_perturb_f32(src, i)(theta, nf, 1234, 0, 0, 1e-3f * float(*sign));
                       }});
    }
    std::int8_t* w8 = buf.s8(ns);
    PerturbS8Params pp;
    pp.seed = 99;
    pp.zero_threshold = std::uint64_t(0.33 * 4294967296.0);
    pp.r_max = 3;
    cases.push_back({"perturb_s8", m.model + " int8 pass n=" + std::to_string(ns), double(ns), Unit::kNsPerElement,
                     false, [=](Isa i) {
                       *sign = -*sign;
                       select_perturb_s8(i)(w8, ns, 0, pp, *sign);
                     }});
    cases.push_back({"zo_update_s8", m.model + " int8 update n=" + std::to_string(ns), double(ns),
                     Unit::kNsPerElement, false, [=](Isa i) { select_zo_update_s8(i)(w8, ns, 0, pp, 1, 1); }});
  }
  // Families in a fixed order for the table.
  const char* order[] = {"gemm_f32", "conv2d_f32", "linear_s8", "conv2d_s8", "requantize_s8", "relu_f32",
                         "maxpool_f32", "relu_s8", "maxpool_s8", "perturb_f32", "perturb_s8", "zo_update_s8"};
  std::stable_sort(cases.begin(), cases.end(), [&](const KernelCase& a, const KernelCase& b) {
    const auto rank = [&](const std::string& f) { return std::find(std::begin(order), std::end(order), f) - order; };
    return rank(a.family) < rank(b.family);
  });
  return cases;
}

double rate(const KernelCase& c, double seconds) {
  return c.unit == Unit::kNsPerElement ? seconds * 1e9 / c.work : c.work / seconds * 1e-9;
}

}  // namespace

json bench_kernels(const BenchOptions& o, int threads, bool print) {
  const int B = o.quick ? 4 : 32, rows = o.quick ? 64 : 1024;
  const double target = o.quick ? 0.0 : 0.05;
  const int reps = o.quick ? 1 : 3;
  Buffers buf;
  const std::vector<KernelCase> cases = kernel_cases(buf, B, rows, threads);
  const std::vector<Isa> isas = available_isas();
  const Isa best = best_isa();
  if (print) {
    std::printf("\n== kernels: LeNet-5 batch %d, PointNet per-point layers x%d rows, %d thread%s "
                "(best of %d loops of >= %.0f ms; 2 ops per MAC; best = %s, the trainers' path) ==\n",
                B, rows, threads, threads == 1 ? "" : "s", reps, target * 1e3, isa_name(best));
    std::printf("%-14s %-40s %7s %8s", "family", "case", "Mop", "unit");
    for (Isa i : isas) std::printf(" %10s", isa_name(i));
    std::printf(" %9s\n", "best/port");
  }
  json rows_json = json::array();
  std::string family;
  for (const KernelCase& c : cases) {
    json res = json::object();
    double r_port = 0, r_best = 0;
    if (print) std::printf("%-14s %-40s %7.2f %8s", c.family == family ? "" : c.family.c_str(), c.name.c_str(),
                           c.work * 1e-6, unit_name(c.unit));
    family = c.family;
    for (Isa i : isas) {
      if (c.one_path && i != Isa::kPortable) {
        if (print) std::printf(" %10s", "-");
        continue;
      }
      // The reference paths are plain loops (the definition of correct, up to seconds per call on
      // a board): one call, no warm-up.
      const double s = i == Isa::kReference ? time_call([&] { c.run(i); }, 0.0, 1, false)
                                            : time_call([&] { c.run(i); }, target, reps);
      const double r = rate(c, s);
      if (i == Isa::kPortable) r_port = r;
      if (i == best) r_best = r;
      if (print) std::printf(" %10.3f", r);
      json e = {{"seconds", s}};
      if (c.unit == Unit::kNsPerElement) {
        e["ns_per_element"] = r;
        e["elements_per_second"] = c.work / s;
      } else {
        e[c.unit == Unit::kFlops ? "gflops" : c.unit == Unit::kIntOps ? "gops" : "gelements_per_second"] = r;
      }
      res[isa_name(i)] = e;
    }
    // Speed-up of the trainers' path over portable (> 1 = faster; ns/elem is inverted).
    const double speedup = c.one_path || r_port <= 0 || r_best <= 0
                               ? 1.0
                               : (c.unit == Unit::kNsPerElement ? r_port / r_best : r_best / r_port);
    if (print) std::printf(" %8.2fx\n", speedup);
    rows_json.push_back({{"family", c.family}, {"case", c.name}, {"work", c.work},
                         {"unit", unit_name(c.unit)}, {"paths", res}, {"speedup_best_vs_portable", speedup}});
  }
  return {{"batch", B}, {"pointnet_rows", rows}, {"cases", rows_json}};
}

}  // namespace zt::cli
