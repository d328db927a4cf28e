// The non-Gaussian perturbation sources (zo.perturbation): Rademacher (±1), uniform
// (√3·U(−1, 1), unit variance) and PeZO's pool (at the end). Same counter space as the Gaussian (perturb_internal.hpp): pair p
// of block b gives two keyed hashes a, b; element 32·b + j takes a, element 32·b + 16 + j takes b.
//   rademacher: +1 if bit 31 of the hash is 0, else −1
//   uniform:    √3 · (2·(h >> 8) + 1 − 2^24) · 2^-24        (h >> 8 ∈ [0, 2^24): symmetric, mean 0)
// Integer ops, one exact int→float conversion and one rounded multiply: the same bits on every
// path and architecture. The reference is one element at a time; the fast path runs the same
// template over 16·k lanes through the Gaussian's block and thread driver (perturb_driver.hpp).
#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "../chunked_parallel.hpp"
#include "../select_isa.hpp"
#include "perturb_driver.hpp"
#include "perturb_internal.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/kernels/perturb.hpp"

namespace zt::kernels {

using namespace perturb_detail;

namespace {

constexpr float kSqrt3 = 1.73205081f;

template <class L>
inline typename L::F rademacher_from_hash(typename L::U h) {
  // 1.0f with the hash's top bit as its sign.
  return std::bit_cast<typename L::F>((h & 0x80000000U) | 0x3f800000U);
}

template <class L>
inline typename L::F uniform_from_hash(typename L::U h) {
  using I = typename L::I;
  const I v = std::bit_cast<I>((h >> 8) * 2U + 1U) - 0x01000000;  // odd, in (−2^24, 2^24)
  return L::to_f(v) * (kSqrt3 * 5.96046448e-8f);  // 2^-24·√3, one rounded product
}

template <PerturbSource S, class L>
inline PairT<L> source_pair(const Keys& k, typename L::U c) {
  const auto a = pair_hash<L>(c, k.a0, k.a1);
  const auto b = pair_hash<L>(c, k.b0, k.b1);
  if constexpr (S == PerturbSource::kRademacher) {
    return PairT<L>{rademacher_from_hash<L>(a), rademacher_from_hash<L>(b)};
  } else {
    return PairT<L>{uniform_from_hash<L>(a), uniform_from_hash<L>(b)};
  }
}

template <PerturbSource S>
float element_ref(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  const std::uint64_t p = pair_index(index);
  const Keys k = derive_keys(seed, stream, static_cast<std::uint32_t>(p >> 32));
  const Pair z = source_pair<S, Scalar>(k, static_cast<std::uint32_t>(p));
  return takes_sin(index) ? z.z1 : z.z0;
}

constexpr int kW = 16;  // one block per step: the transform is a few integer ops per element

template <PerturbSource S>
struct SourceGen {
  using Scale = Vec<kPairsPerBlock>::F;
  static Scale splat(float s) { return Scale{} + s; }
  static constexpr std::uint64_t kStep = 1;
  template <bool kFill>
  static void block(float* out, const Keys& k, std::uint32_t c0, Scale scale) {
    using V = Vec<kW>;
    typename V::U c;
    for (int q = 0; q < kW; ++q) c[q] = c0 + static_cast<std::uint32_t>(q);
    PairT<V> z = source_pair<S, V>(k, c);
    constexpr std::size_t kHalf = kPairsPerBlock * sizeof(float);
    if constexpr (!kFill) {
      Scale lo, hi;
      std::memcpy(&lo, out, kHalf);
      std::memcpy(&hi, out + kPairsPerBlock, kHalf);
      z.z0 = lo + scale * z.z0;
      z.z1 = hi + scale * z.z1;
    }
    std::memcpy(out, &z.z0, kHalf);
    std::memcpy(out + kPairsPerBlock, &z.z1, kHalf);
  }
  template <bool kFill>
  static void step(float* out, const Keys& k, std::uint32_t c0, Scale scale) {
    block<kFill>(out, k, c0, scale);
  }
};

template <PerturbSource S>
void perturb_fast(float* theta, std::size_t n, std::uint64_t seed, std::uint64_t stream,
                  std::uint64_t offset, float scale) {
  Driver<SourceGen<S>>::template run<false>(theta, n, seed, stream, offset, scale);
}

template <PerturbSource S>
void fill_fast(float* out, std::size_t n, std::uint64_t seed, std::uint64_t stream,
               std::uint64_t offset) {
  Driver<SourceGen<S>>::template run<true>(out, n, seed, stream, offset, 0.0f);
}

// The pool's raw values: (2h + 1 − 2^24)·2^-24 ∈ (−1, 1), exact in float.
float uniform_raw_ref(std::uint64_t seed, std::uint64_t index) {
  const std::uint64_t p = pair_index(index);
  const Keys k = derive_keys(seed, 0, static_cast<std::uint32_t>(p >> 32));
  const std::uint32_t h = pair_hash<Scalar>(static_cast<std::uint32_t>(p), takes_sin(index) ? k.b0 : k.a0,
                                            takes_sin(index) ? k.b1 : k.a1);
  return static_cast<float>(static_cast<std::int32_t>((h >> 8) * 2U + 1U) - 0x01000000) *
         5.96046448e-8f;
}

using PoolChunks = detail::Chunking<std::size_t{1} << 15, std::size_t{1} << 14>;

struct SourceEntry {
  PerturbSource source;
  const char* name;
  const char* summary;
};
constexpr std::array<SourceEntry, 4> kSources = {{
    {PerturbSource::kGaussian, "gaussian", "N(0, 1) per weight (MeZO, ElasticZO)"},
    {PerturbSource::kRademacher, "rademacher", "±1 per weight, equally likely"},
    {PerturbSource::kUniform, "uniform", "√3·U(−1, 1) per weight (unit variance)"},
    {PerturbSource::kPezoPool, "pezo_pool", "PeZO: a pre-generated pool of N uniform numbers"},
}};

}  // namespace

float perturbation_ref(PerturbSource s, std::uint64_t seed, std::uint64_t stream,
                       std::uint64_t index) {
  switch (s) {
    case PerturbSource::kRademacher: return element_ref<PerturbSource::kRademacher>(seed, stream, index);
    case PerturbSource::kUniform: return element_ref<PerturbSource::kUniform>(seed, stream, index);
    case PerturbSource::kPezoPool: ZT_CHECK_MSG(false, "the PeZO pool is drawn by a Perturber");
    case PerturbSource::kGaussian: break;
  }
  return gaussian_ref(seed, stream, index);
}

void perturb_f32_ref(PerturbSource s, float* theta, std::size_t n, std::uint64_t seed,
                     std::uint64_t stream, std::uint64_t offset, float scale) {
  for (std::size_t i = 0; i < n; ++i)
    theta[i] = theta[i] + scale * perturbation_ref(s, seed, stream, offset + i);
}

PerturbGaussianF32Fn select_perturb_f32(PerturbSource s, Isa isa) {
  switch (s) {
    case PerturbSource::kRademacher: return perturb_fast<PerturbSource::kRademacher>;
    case PerturbSource::kUniform: return perturb_fast<PerturbSource::kUniform>;
    case PerturbSource::kPezoPool: ZT_CHECK_MSG(false, "the PeZO pool is drawn by a Perturber");
    case PerturbSource::kGaussian: break;
  }
  return select_perturb_gaussian_f32(isa);
}

FillGaussianF32Fn select_fill_f32(PerturbSource s, Isa isa) {
  switch (s) {
    case PerturbSource::kRademacher: return fill_fast<PerturbSource::kRademacher>;
    case PerturbSource::kUniform: return fill_fast<PerturbSource::kUniform>;
    case PerturbSource::kPezoPool: ZT_CHECK_MSG(false, "the PeZO pool is drawn by a Perturber");
    case PerturbSource::kGaussian: break;
  }
  return select_fill_gaussian_f32(isa);
}

PerturbSource perturb_source(std::string_view name) {
  std::string names;
  for (const SourceEntry& e : kSources) {
    if (name == e.name) return e.source;
    names += names.empty() ? e.name : std::string(", ") + e.name;
  }
  throw Error("zo.perturbation: unknown source '" + std::string(name) + "', expected one of " +
              names);
}

const char* perturb_source_name(PerturbSource s) {
  for (const SourceEntry& e : kSources)
    if (e.source == s) return e.name;
  return "?";
}

// ---- PeZO's pool ---------------------------------------------------------------------------

double expected_gaussian_norm(std::size_t d) {
  // Γ(x + ½)/Γ(x) = √x (1 − 1/(8x) + 1/(128x²) + 5/(1024x³) − 21/(32768x⁴) + …), x = d/2.
  const double x = static_cast<double>(d);
  const double r = 1.0 / x;
  const double series = 1.0 + r * (-0.25 + r * (1.0 / 32 + r * (5.0 / 128 + r * (-21.0 / 2048))));
  return std::sqrt(x) * series;
}

Perturber::Perturber(PerturbSource s, Isa isa, const PoolOptions& pool) : source_(s) {
  if (s != PerturbSource::kPezoPool) {
    perturb_ = select_perturb_f32(s, isa);
    fill_ = select_fill_f32(s, isa);
    return;
  }
  ZT_CHECK_MSG(pool.size >= 1, "PeZO pool: size must be at least 1");
  pool_.resize(pool.size);
  double sq = 0;
  for (std::size_t k = 0; k < pool.size; ++k) {
    pool_[k] = uniform_raw_ref(pool.seed, k);
    sq += static_cast<double>(pool_[k]) * pool_[k];
  }
  // Adaptive modulus scaling, once for the pool: ‖scale · u‖ = E‖g_N‖ (≈ √3 for large N), or
  // the power of two nearest that factor (frexp and a comparison: exact).
  double scale = expected_gaussian_norm(pool.size) / std::sqrt(sq);
  if (pool.pow2_scale) {
    int e = 0;
    const double m = std::frexp(scale, &e);  // scale = m · 2^e, m ∈ [½, 1)
    scale = std::ldexp(1.0, m >= 0.70710678118654752 ? e : e - 1);
  }
  for (float& v : pool_) v = static_cast<float>(v * scale);
}

std::size_t Perturber::pool_offset(std::uint64_t seed, std::uint64_t stream) const {
  ZT_CHECK(!pool_.empty());
  return static_cast<std::size_t>(mix64(seed ^ mix64(stream + 0x50e2a0a1ULL)) % pool_.size());
}

void Perturber::perturb(float* theta, std::size_t n, std::uint64_t seed, std::uint64_t stream,
                        std::uint64_t offset, float scale) const {
  if (perturb_ != nullptr) return perturb_(theta, n, seed, stream, offset, scale);
  const std::size_t N = pool_.size();
  const std::size_t o = (pool_offset(seed, stream) + offset % N) % N;
  PoolChunks::for_each(n, [&](std::size_t b, std::size_t len) {
    std::size_t k = (o + b % N) % N;
    for (std::size_t i = b; i < b + len;) {  // runs of the pool up to its end
      const std::size_t run = std::min(b + len - i, N - k);
      const float* p = pool_.data() + k;
      float* t = theta + i;
      for (std::size_t j = 0; j < run; ++j) t[j] = t[j] + scale * p[j];
      i += run;
      k = 0;
    }
  });
}

void Perturber::fill(float* out, std::size_t n, std::uint64_t seed, std::uint64_t stream,
                     std::uint64_t offset) const {
  if (fill_ != nullptr) return fill_(out, n, seed, stream, offset);
  const std::size_t N = pool_.size();
  const std::size_t o = (pool_offset(seed, stream) + offset % N) % N;
  for (std::size_t i = 0; i < n; ++i) out[i] = pool_[(o + i % N) % N];
}

}  // namespace zt::kernels
