// `zotrain bench` (bench.hpp). Kernel figures: best of a few timing loops of wall time, each
// loop at least `target` seconds long, after one warm-up call; FLOPs / integer OPs count 2 per
// multiply-accumulate (padded taps included). Step figures: wall time of a training engine's step
// (src/run/engine.hpp, as a run makes it) after one warm-up step, split by the trainers' own phase
// timers; the Data phase (the synthetic batch's copy) is not shown.
#include "bench.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "zotrain/config/catalogue.hpp"
#include "zotrain/config/methods.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/kernels/conv2d.hpp"
#include "zotrain/kernels/conv2d_s8.hpp"
#include "zotrain/kernels/elementwise_s8.hpp"
#include "zotrain/kernels/gemm.hpp"
#include "zotrain/kernels/isa.hpp"
#include "zotrain/kernels/linear_s8.hpp"
#include "zotrain/kernels/perturb.hpp"
#include "zotrain/kernels/perturb_s8.hpp"
#include "zotrain/kernels/pool.hpp"
#include "zotrain/kernels/quant.hpp"
#include "zotrain/kernels/relu.hpp"
#include "zotrain/nn/architectures.hpp"
#include "zotrain/nn/int8_setup.hpp"
#include "zotrain/nn/lenet5.hpp"
#include "zotrain/telemetry/phases.hpp"
#include "zotrain/config/config.hpp"
#include "zotrain/run/engine.hpp"
#include "zotrain/run/experiment.hpp"

namespace zt::cli {
namespace {

using namespace zt::kernels;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

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

std::string cpu_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line, part;
  while (std::getline(f, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon), value = line.substr(colon + 1);
    key.erase(key.find_last_not_of(" \t") + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    if (key == "model name" && !value.empty()) return value;
    if (key == "CPU part" && part.empty()) part = value;
  }
  if (part == "0xd03") return "ARM Cortex-A53";
  if (part == "0xd08") return "ARM Cortex-A72";
  if (part == "0xd0b") return "ARM Cortex-A76";
  return part.empty() ? "unknown CPU" : "ARM CPU part " + part;
}

std::vector<Isa> available_isas() {
  std::vector<Isa> v;
  for (Isa isa : kAllIsas)
    if (isa_available(isa)) v.push_back(isa);
  return v;
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

// ---- training steps -------------------------------------------------------------------------

// The paper's four settings (zotrain's method registry, config/methods.hpp).
using Method = config::NamedSetting;

const Method& find_method(const std::string& key) {
  const Method* m = config::find_named_setting(key);
  if (m == nullptr) {
    throw Error("bench --method: unknown method '" + key + "' (expected " +
                config::named_setting_keys() + ")");
  }
  return *m;
}

// A fixed synthetic batch of LeNet-5 input (random pixels and labels; the trainers' cost does not
// depend on the data's meaning), served as the run's data is: normalised for FP32, raw for int8.
class SyntheticImages final : public run::BatchSource {
 public:
  SyntheticImages(std::size_t sample_floats, int batch)
      : floats_(sample_floats), n_(batch), pixels_(sample_floats * std::size_t(batch)),
        labels_(std::size_t(batch)) {
    std::mt19937 rng(7);
    for (auto& p : pixels_) p = std::uint8_t(rng() % 256);
    for (auto& l : labels_) l = std::uint8_t(rng() % 10);
  }
  int batches_per_epoch() const override { return 1; }
  void start_epoch(int /*epoch*/) override {}
  std::size_t sample_floats() const override { return floats_; }
  int fill(int /*index*/, float* x, std::uint8_t* labels) override {
    const config::DatasetInfo& mnist = config::dataset(config::Dataset::kMnist);
    for (std::size_t i = 0; i < pixels_.size(); ++i)
      x[i] = (float(pixels_[i]) / 255.0f - mnist.mean) / mnist.std;
    std::copy(labels_.begin(), labels_.end(), labels);
    return n_;
  }
  int fill_raw(int /*index*/, std::uint8_t* raw, std::uint8_t* labels) override {
    std::copy(pixels_.begin(), pixels_.end(), raw);
    std::copy(labels_.begin(), labels_.end(), labels);
    return n_;
  }

 private:
  std::size_t floats_;
  int n_;
  std::vector<std::uint8_t> pixels_, labels_;
};

// A training step of one method on LeNet-5, built and run by the same engine as a training run
// (src/run/engine.hpp) from a config of the method, precision, batch and the bench's ZO options;
// the data set is the synthetic batch above.
class StepRunner {
 public:
  StepRunner(config::Precision precision, const Method& m, int batch, int threads, Isa isa,
             const BenchOptions& o) {
    const config::ArchInfo& lenet5 = config::architecture(config::Arch::kLeNet5);
    std::vector<std::string> set = {
        "model.arch=" + std::string(config::name(config::Arch::kLeNet5)),
        "data.dataset=" + std::string(config::name(config::Dataset::kMnist)),
        "model.precision=" + std::string(config::name(precision)),
        "method.name=" + std::string(config::name(m.method)),
        "method.partition=" + std::to_string(m.partition(lenet5.layers)),
        "train.batch_size=" + std::to_string(batch),
        "zo.cache_direction=" + std::string(o.cache_direction ? "true" : "false")};
    if (precision == config::Precision::kFp32) set.push_back("zo.perturbation=" + std::string(config::name(o.perturbation)));
    const config::ExperimentConfig cfg = config::parse_config("{}", "zotrain bench", set);
    engine_ = precision == config::Precision::kInt8 ? run::make_int8_engine(cfg, batch, threads, isa)
                                                    : run::make_fp32_engine(cfg, batch, threads, isa);
    data_ = std::make_unique<SyntheticImages>(engine_->input_floats(), batch);
    engine_->begin_epoch(0);
  }
  void step(std::uint64_t seed, telemetry::PhaseTimes& times) {
    engine_->step(*data_, 0, seed, step_number_++, times);
  }

 private:
  std::unique_ptr<run::Engine> engine_;
  std::unique_ptr<SyntheticImages> data_;
  std::uint64_t step_number_ = 0;
};

std::unique_ptr<StepRunner> make_step(config::Precision precision, const Method& m, int batch, int threads,
                                      Isa isa, const BenchOptions& o) {
  return std::make_unique<StepRunner>(precision, m, batch, threads, isa, o);
}

config::Precision parse_precision(const std::string& text) {
  if (auto p = config::parse_choice<config::Precision>(text)) return *p;
  throw Error("bench --precision: unknown precision '" + text + "' (expected fp32 or int8)");
}

constexpr telemetry::Phase kStepPhases[] = {telemetry::Phase::kForward, telemetry::Phase::kLoss,
                                            telemetry::Phase::kBackward, telemetry::Phase::kZoPerturb,
                                            telemetry::Phase::kZoUpdate};

struct StepResult {
  double ms = 0;  // wall time per step
  int steps = 0;
  telemetry::PhaseTimes phases;  // per step, seconds
};

// One warm-up step, then steps until `target` seconds have passed (at least `min_steps`).
StepResult time_steps(StepRunner& r, double target, int min_steps) {
  telemetry::PhaseTimes warm;
  r.step(1, warm);
  StepResult res;
  telemetry::PhaseTimes sum;
  const auto t0 = Clock::now();
  double elapsed = 0;
  while (res.steps < min_steps || elapsed < target) {
    r.step(2 + std::uint64_t(res.steps), sum);
    ++res.steps;
    elapsed = seconds_since(t0);
  }
  res.ms = elapsed * 1e3 / res.steps;
  for (int p = 0; p < telemetry::kNumPhases; ++p) {
    const auto ph = static_cast<telemetry::Phase>(p);
    res.phases.add(ph, sum.get(ph) / res.steps);
  }
  return res;
}

json step_json(const StepResult& r) {
  json ph = json::object();
  for (telemetry::Phase p : kStepPhases)
    ph[telemetry::phase_key(p)] = {{"ms", r.phases.get(p) * 1e3}, {"share", r.phases.get(p) * 1e3 / r.ms}};
  return {{"ms_per_step", r.ms}, {"steps", r.steps}, {"phases", ph}};
}

json bench_steps(const BenchOptions& o, int threads, bool print) {
  const int b32 = o.quick ? 4 : 32, b256 = o.quick ? 8 : 256;
  const double target = o.quick ? 0.0 : 1.0;
  const int min_steps = o.quick ? 1 : 3;
  struct Config {
    config::Precision precision;
    int batch;
    const char* name() const { return config::name(precision).data(); }
  };
  // FP32 at its paper batch and at int8's, int8 at its paper batch (NITI, the paper's int8).
  const Config configs[] = {{config::Precision::kFp32, b32}, {config::Precision::kFp32, b256},
                            {config::Precision::kInt8, b256}};
  // The trainers' path, and portable beside it when that is another one (the NEON or AVX-512 VNNI speed-up).
  const Isa best = best_isa();
  std::vector<Isa> paths = {best};
  if (best != Isa::kPortable && best != Isa::kReference) paths.push_back(Isa::kPortable);
  if (print) {
    std::printf("\n== training steps: LeNet-5, synthetic input, %d thread%s "
                "(ms per step after 1 warm-up, >= %.1f s; phase ms and share of the step) ==\n",
                threads, threads == 1 ? "" : "s", target);
    std::printf("%-9s %-5s %-15s %5s %9s %9s", "path", "prec", "method", "batch", "ms/step", "us/sample");
    for (telemetry::Phase p : kStepPhases) std::printf(" %16s", telemetry::phase_key(p));
    std::printf("\n");
  }
  json rows = json::array();
  // [path][config][method]
  std::vector<std::array<std::array<StepResult, 4>, 3>> res(paths.size());
  for (std::size_t pi = 0; pi < paths.size(); ++pi)
    for (int ci = 0; ci < 3; ++ci)
      for (int mi = 0; mi < 4; ++mi) {
        const Config& c = configs[ci];
        const Method& m = config::named_settings()[mi];
        auto runner = make_step(c.precision, m, c.batch, threads, paths[pi], o);
        const StepResult r = time_steps(*runner, target, min_steps);
        res[pi][std::size_t(ci)][std::size_t(mi)] = r;
        json j = step_json(r);
        j["path"] = isa_name(paths[pi]), j["precision"] = c.name(), j["method"] = m.key, j["batch"] = c.batch;
        rows.push_back(j);
        if (!print) continue;
        std::printf("%-9s %-5s %-15s %5d %9.3f %9.2f", isa_name(paths[pi]), c.name(), m.label, c.batch, r.ms,
                    r.ms * 1e3 / c.batch);
        for (telemetry::Phase p : kStepPhases) {
          const double pm = r.phases.get(p) * 1e3;
          std::printf("  %7.3f %5.1f %%", pm, 100.0 * pm / r.ms);
        }
        std::printf("\n");
      }
  // Epoch-time ratio = per-sample step time ratio (same data set, batch sizes as stated).
  const auto fwd_share = [](const StepResult& r) { return r.phases.get(telemetry::Phase::kForward) * 1e3 / r.ms; };
  const auto& ms = res[0];
  json ratios = json::array();
  if (print)
    std::printf("\n== int8 vs FP32 (%s): epoch-time ratio FP32 / int8 (paper, Pi Zero 2: int8 1.38-1.42x faster; "
                "forward share 84-85 %% FP32, 95-97 %% int8) ==\n%-15s %14s %14s %13s %13s\n",
                isa_name(best), "method", (std::string("FP32 B") + std::to_string(b32) + "/int8").c_str(),
                (std::string("FP32 B") + std::to_string(b256) + "/int8").c_str(), "fwd FP32", "fwd int8");
  for (std::size_t mi = 0; mi < 4; ++mi) {
    const double f32 = ms[0][mi].ms / b32, f256 = ms[1][mi].ms / b256, i8 = ms[2][mi].ms / b256;
    const double s32 = fwd_share(ms[0][mi]), s8 = fwd_share(ms[2][mi]);
    ratios.push_back({{"method", config::named_settings()[mi].key},
                      {"fp32_paper_batch_over_int8", f32 / i8},
                      {"fp32_same_batch_over_int8", f256 / i8},
                      {"forward_share_fp32", s32},
                      {"forward_share_int8", s8}});
    if (print)
      std::printf("%-15s %13.2fx %13.2fx %11.1f %% %11.1f %%\n", config::named_settings()[mi].label, f32 / i8, f256 / i8, 100 * s32,
                  100 * s8);
  }
  json out = {{"steps", rows}, {"int8_vs_fp32", ratios}};
  if (paths.size() > 1) {
    json speedups = json::array();
    if (print)
      std::printf("\n== kernel paths: step time portable / %s (> 1: %s is faster) ==\n%-15s", isa_name(best),
                  isa_name(best), "method");
    if (print)
      for (const Config& c : configs) std::printf(" %11s", (std::string(c.name()) + " B" + std::to_string(c.batch)).c_str());
    if (print) std::printf("\n");
    for (std::size_t mi = 0; mi < 4; ++mi) {
      if (print) std::printf("%-15s", config::named_settings()[mi].label);
      for (std::size_t ci = 0; ci < 3; ++ci) {
        const double x = res[1][ci][mi].ms / res[0][ci][mi].ms;
        speedups.push_back({{"method", config::named_settings()[mi].key}, {"precision", configs[ci].name()},
                            {"batch", configs[ci].batch}, {"portable_over_best", x}});
        if (print) std::printf(" %10.2fx", x);
      }
      if (print) std::printf("\n");
    }
    out["path_speedup"] = speedups;
  }
  return out;
}

}  // namespace

// Called between the steps of --run-steps (before each step and after the last) and does
// nothing: scripts/count-insns.sh finds it by name in qemu's log of executed blocks and counts
// the instructions of each step between two calls.
extern "C" __attribute__((noinline)) void zt_bench_step_boundary(int step) { asm volatile("" : : "r"(step) : "memory"); }

int run_bench(const BenchOptions& o) {
  if (!o.only.empty() && o.only != "kernels" && o.only != "steps")
    throw Error("bench --only: expected kernels or steps, got '" + o.only + "'");
  if (o.run_steps >= 0) {  // instruction counting: exactly N steps of one method, nothing else
    const Method& m = find_method(o.method);
    const int threads = run::use_threads(o.threads);
    const config::Precision precision = parse_precision(o.precision);
    const config::ArchInfo& lenet5 = config::architecture(config::Arch::kLeNet5);
    const int batch = o.batch > 0 ? o.batch
                      : precision == config::Precision::kInt8 ? lenet5.int8_batch
                                                              : lenet5.fp32_batch;
    auto runner = make_step(precision, m, batch, threads, best_isa(), o);
    telemetry::PhaseTimes times;
    for (int i = 0; i < o.run_steps; ++i) {
      zt_bench_step_boundary(i);
      runner->step(1 + std::uint64_t(i), times);
    }
    zt_bench_step_boundary(o.run_steps);
    const std::string zo = precision == config::Precision::kFp32
                               ? ", zo.perturbation " + std::string(config::name(o.perturbation)) + (o.cache_direction ? ", cached" : "")
                               : "";
    std::printf("ran %d %s %s step%s, batch %d, kernel path %s%s\n", o.run_steps, o.precision.c_str(), m.key,
                o.run_steps == 1 ? "" : "s", batch, isa_name(best_isa()), zo.c_str());
    return 0;
  }
  find_method(o.method);
  const int threads = run::use_threads(o.threads);
  const bool print = !o.json;
  std::string paths;
  for (Isa i : available_isas()) paths += std::string(paths.empty() ? "" : " ") + isa_name(i);
  if (print)
    std::printf("zotrain %s bench%s: %s; kernel paths: %s; trainers use %s%s; %d thread%s\n", ZT_VERSION,
                o.quick ? " --quick (figures are not meaningful)" : "", cpu_name().c_str(), paths.c_str(),
                isa_name(best_isa()), std::getenv("ZT_ISA") ? " (ZT_ISA)" : "", threads, threads == 1 ? "" : "s");
  json out = {{"version", ZT_VERSION}, {"cpu", cpu_name()}, {"threads", threads}, {"quick", o.quick}, {"cache_direction", o.cache_direction},
              {"perturbation", config::name(o.perturbation)},
              {"paths", json::array()}, {"best_path", isa_name(best_isa())}};
  for (Isa i : available_isas()) out["paths"].push_back(isa_name(i));
  if (o.only.empty() || o.only == "kernels") out["kernels"] = bench_kernels(o, threads, print);
  if (o.only.empty() || o.only == "steps") out.update(bench_steps(o, threads, print));
  if (!print) std::printf("%s\n", out.dump(1).c_str());
  return 0;
}

}  // namespace zt::cli
