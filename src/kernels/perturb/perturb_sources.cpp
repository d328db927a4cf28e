// The non-Gaussian perturbation sources (zo.perturbation): Rademacher (±1), uniform
// (√3·U(−1, 1), unit variance), Poor Man's Training's XORShift signs (a sequence, not a counter
// hash: below), and PeZO's pool and on-the-fly generator (at the end). Rademacher and uniform
// use the Gaussian's counter space (perturb_internal.hpp): pair p of block b gives two keyed
// hashes a, b; element 32·b + j takes a, element 32·b + 16 + j takes b.
//   rademacher: +1 if bit 31 of the hash is 0, else −1
//   uniform:    √3 · (2·(h >> 8) + 1 − 2^24) · 2^-24        (h >> 8 ∈ [0, 2^24): symmetric, mean 0)
// Integer ops, one exact int→float conversion and one rounded multiply: the same bits on every
// path and architecture. The reference is one element at a time; the fast path runs the same
// templates on native-width vectors through the Gaussian's block and thread driver
// (perturb_driver.hpp; SourceGen below).
#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <utility>

#include "../chunked_parallel.hpp"
#include "../native_lanes.hpp"
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
inline typename L::F from_hash(typename L::U h) {
  if constexpr (S == PerturbSource::kRademacher) {
    return rademacher_from_hash<L>(h);
  } else {
    return uniform_from_hash<L>(h);
  }
}

template <PerturbSource S, class L>
inline PairT<L> source_pair(const Keys& k, typename L::U c) {
  return PairT<L>{from_hash<S, L>(pair_hash<L>(c, k.a0, k.a1)), from_hash<S, L>(pair_hash<L>(c, k.b0, k.b1))};
}

template <PerturbSource S>
float element_ref(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  const std::uint64_t p = pair_index(index);
  const Keys k = derive_keys(seed, stream, static_cast<std::uint32_t>(p >> 32));
  const Pair z = source_pair<S, Scalar>(k, static_cast<std::uint32_t>(p));
  return takes_sin(index) ? z.z1 : z.z0;
}

// One block per step, computed in pieces of one native vector (aarch64 and armhf: 4 pairs,
// elements 4q.. and 16 + 4q..), each piece's halves loaded and stored straight from θ. The
// hashes' first two steps are folded per block (pair_hash_block_base). Written as one 16-lane
// vector (counters built lane by lane, the result copied out of a 64-byte temporary), GCC
// assembled the counters and the results on the stack on aarch64: 7.8 instructions per weight;
// this is about 4.5.
constexpr int kPiece = kNativeF32Lanes;
static_assert(kPairsPerBlock % kPiece == 0);

template <PerturbSource S>
struct SourceGen {
  using V = Vec<kPiece>;
  using Scale = V::F;
  static Scale splat(float s) { return Scale{} + s; }
  static constexpr std::uint64_t kStep = 1;
  template <Pass P>
  static void block(Dst out, const Keys& k, std::uint32_t c0, Scale scale, Scale prev) {
    ZT_DCHECK(c0 % kPairsPerBlock == 0);
    static constexpr std::uint32_t kLanes[kPairsPerBlock] = {0, 1, 2,  3,  4,  5,  6,  7,
                                                             8, 9, 10, 11, 12, 13, 14, 15};
    const std::uint32_t base_a = pair_hash_block_base(c0, k.a0);
    const std::uint32_t base_b = pair_hash_block_base(c0, k.b0);
#pragma GCC unroll 4
    for (int q = 0; q < kPairsPerBlock; q += kPiece) {
      V::U lane;
      std::memcpy(&lane, kLanes + q, sizeof lane);
      V::F z0 = from_hash<S, V>(pair_hash_rest<V>(lane ^ base_a, k.a1));
      V::F z1 = from_hash<S, V>(pair_hash_rest<V>(lane ^ base_b, k.b1));
      float* lo = out.x + q;  // memcpy: θ need not be aligned (one load / store each)
      float* hi = out.x + kPairsPerBlock + q;
      V::F t0{}, t1{};
      if constexpr (P != Pass::kFill) {
        std::memcpy(&t0, lo, sizeof t0);
        std::memcpy(&t1, hi, sizeof t1);
      }
      if constexpr (P == Pass::kUpdateTee) {  // the old direction's update, before z' replaces it
        V::F y0, y1;
        std::memcpy(&y0, out.z + q, sizeof y0);
        std::memcpy(&y1, out.z + kPairsPerBlock + q, sizeof y1);
        t0 = t0 + prev * y0;
        t1 = t1 + prev * y1;
      }
      if constexpr (P == Pass::kTee || P == Pass::kUpdateTee) {
        std::memcpy(out.z + q, &z0, sizeof z0);
        std::memcpy(out.z + kPairsPerBlock + q, &z1, sizeof z1);
      }
      if constexpr (P != Pass::kFill) {
        z0 = t0 + scale * z0;
        z1 = t1 + scale * z1;
      }
      std::memcpy(lo, &z0, sizeof z0);
      std::memcpy(hi, &z1, sizeof z1);
    }
  }
  template <Pass P>
  static void step(Dst out, const Keys& k, std::uint32_t c0, Scale scale, Scale prev) {
    block<P>(out, k, c0, scale, prev);
  }
};

template <PerturbSource S>
void perturb_fast(float* theta, std::size_t n, std::uint64_t seed, std::uint64_t stream,
                  std::uint64_t offset, float scale) {
  Driver<SourceGen<S>>::template run<Pass::kPerturb>(Dst{theta}, n, seed, stream, offset, scale);
}

template <PerturbSource S>
void perturb_fill_fast(float* theta, float* z, std::size_t n, std::uint64_t seed,
                       std::uint64_t stream, std::uint64_t offset, float scale) {
  Driver<SourceGen<S>>::template run<Pass::kTee>(Dst{theta, z}, n, seed, stream, offset, scale);
}

template <PerturbSource S>
void update_perturb_fill_fast(float* theta, float* z, std::size_t n, std::uint64_t seed,
                              std::uint64_t stream, std::uint64_t offset, float prev, float scale) {
  Driver<SourceGen<S>>::template run<Pass::kUpdateTee>(Dst{theta, z}, n, seed, stream, offset,
                                                       scale, prev);
}

template <PerturbSource S>
void fill_fast(float* out, std::size_t n, std::uint64_t seed, std::uint64_t stream,
               std::uint64_t offset) {
  Driver<SourceGen<S>>::template run<Pass::kFill>(Dst{out}, n, seed, stream, offset, 0.0f);
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
constexpr std::array<SourceEntry, 6> kSources = {{
    {PerturbSource::kGaussian, "gaussian", "N(0, 1) per weight (MeZO, ElasticZO)"},
    {PerturbSource::kRademacher, "rademacher", "±1 per weight, equally likely"},
    {PerturbSource::kUniform, "uniform", "√3·U(−1, 1) per weight (unit variance)"},
    {PerturbSource::kXorshift, "xorshift",
     "±1 from Marsaglia's xorshift32 (13, 17, 5), LSB 1 → −1 (Poor Man's Training's generator)"},
    {PerturbSource::kPezoPool, "pezo_pool", "PeZO: a pre-generated pool of N uniform numbers"},
    {PerturbSource::kPezoOnTheFly, "pezo_onthefly",
     "PeZO: n small b-bit RNGs, rotated each cycle, chunk-wise norm-matched"},
}};

// Adaptive modulus scaling's power-of-two variant: the power of two nearest `scale` (in the
// log sense; frexp and a comparison, so exact).
double nearest_pow2(double scale) {
  int e = 0;
  const double m = std::frexp(scale, &e);  // scale = m · 2^e, m ∈ [½, 1)
  return std::ldexp(1.0, m >= 0.70710678118654752 ? e : e - 1);
}

// Maximal-length Galois LFSR masks (primitive trinomials and pentanomials; the constructor
// checks each period): bit k set for the polynomial's x^(k+1) term.
constexpr std::array<std::uint32_t, 17> kLfsrTaps = {
    0,     0,     0,      0,      0xC,    0x14,   0x30,   0x60,  0xB8,
    0x110, 0x240, 0x500,  0xE08,  0x1C80, 0x3802, 0x6000, 0xB400};


// ---- XORShift (Poor Man's Training's on-device generator; its steps: kernels/xorshift.hpp) ---
using XorshiftChunks = detail::Chunking<std::size_t{1} << 16, std::size_t{1} << 14>;

template <bool kFill>
void xorshift_run(float* out, std::size_t n, std::uint64_t seed, std::uint64_t stream,
                  std::uint64_t offset, float scale) {
  const std::uint32_t s0 = xorshift_state(seed, stream);
  XorshiftChunks::for_each(n, [&](std::size_t b, std::size_t len) {
    std::uint32_t x = xorshift_jump(s0, offset + b);  // element e is the sign of x_{e+1}
    float* o = out + b;
    for (std::size_t i = 0; i < len; ++i) {
      x = xorshift32(x);
      const float z = xorshift_sign(x);
      if constexpr (kFill) {
        o[i] = z;
      } else {
        o[i] = o[i] + scale * z;
      }
    }
  });
}

}  // namespace

float perturbation_ref(PerturbSource s, std::uint64_t seed, std::uint64_t stream,
                       std::uint64_t index) {
  switch (s) {
    case PerturbSource::kRademacher: return element_ref<PerturbSource::kRademacher>(seed, stream, index);
    case PerturbSource::kUniform: return element_ref<PerturbSource::kUniform>(seed, stream, index);
    case PerturbSource::kXorshift:
      return xorshift_sign(xorshift_jump(xorshift_state(seed, stream), index + 1));
    case PerturbSource::kPezoPool:
    case PerturbSource::kPezoOnTheFly: ZT_CHECK_MSG(false, "PeZO's sources are drawn by a Perturber");
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
    case PerturbSource::kXorshift: return xorshift_run<false>;
    case PerturbSource::kPezoPool:
    case PerturbSource::kPezoOnTheFly: ZT_CHECK_MSG(false, "PeZO's sources are drawn by a Perturber");
    case PerturbSource::kGaussian: break;
  }
  return select_perturb_gaussian_f32(isa);
}

FillGaussianF32Fn select_fill_f32(PerturbSource s, Isa isa) {
  switch (s) {
    case PerturbSource::kRademacher: return fill_fast<PerturbSource::kRademacher>;
    case PerturbSource::kUniform: return fill_fast<PerturbSource::kUniform>;
    case PerturbSource::kXorshift:
      return [](float* out, std::size_t n, std::uint64_t seed, std::uint64_t stream,
                std::uint64_t offset) { xorshift_run<true>(out, n, seed, stream, offset, 0.0f); };
    case PerturbSource::kPezoPool:
    case PerturbSource::kPezoOnTheFly: ZT_CHECK_MSG(false, "PeZO's sources are drawn by a Perturber");
    case PerturbSource::kGaussian: break;
  }
  return select_fill_gaussian_f32(isa);
}

PerturbFillF32Fn select_perturb_fill_f32(PerturbSource s, Isa isa) {
  switch (s) {
    case PerturbSource::kRademacher: return perturb_fill_fast<PerturbSource::kRademacher>;
    case PerturbSource::kUniform: return perturb_fill_fast<PerturbSource::kUniform>;
    case PerturbSource::kXorshift:
    case PerturbSource::kPezoPool:
    case PerturbSource::kPezoOnTheFly: return nullptr;
    case PerturbSource::kGaussian: break;
  }
  return select_perturb_fill_gaussian_f32(isa);
}

UpdatePerturbFillF32Fn select_update_perturb_fill_f32(PerturbSource s, Isa isa) {
  switch (s) {
    case PerturbSource::kRademacher: return update_perturb_fill_fast<PerturbSource::kRademacher>;
    case PerturbSource::kUniform: return update_perturb_fill_fast<PerturbSource::kUniform>;
    case PerturbSource::kXorshift:
    case PerturbSource::kPezoPool:
    case PerturbSource::kPezoOnTheFly: return nullptr;
    case PerturbSource::kGaussian: break;
  }
  return select_update_perturb_fill_gaussian_f32(isa);
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

// ---- PeZO's pool and on-the-fly generator ------------------------------------------------

double expected_gaussian_norm(std::size_t d) {
  if (d < 64) {  // r(d) = Γ((d+1)/2)/Γ(d/2): r(1) = 1/√π, r(2) = √π/2, r(d+2) = r(d)·(d+1)/d
    constexpr double kSqrtPi = 1.7724538509055160273;
    double r = d % 2 == 1 ? 1.0 / kSqrtPi : kSqrtPi / 2;
    for (std::size_t k = 2 - d % 2; k + 2 <= d; k += 2)
      r = r * static_cast<double>(k + 1) / static_cast<double>(k);
    return 1.4142135623730950488 * r;
  }
  // Γ(x + ½)/Γ(x) = √x (1 − 1/(8x) + 1/(128x²) + 5/(1024x³) − 21/(32768x⁴) + …), x = d/2.
  const double x = static_cast<double>(d);
  const double r = 1.0 / x;
  const double series = 1.0 + r * (-0.25 + r * (1.0 / 32 + r * (5.0 / 128 + r * (-21.0 / 2048))));
  return std::sqrt(x) * series;
}

std::vector<std::uint16_t> lfsr_sequence(int bits) {
  if (bits < 4 || bits > 16) {
    throw Error("zo.rng_bits: " + std::to_string(bits) + ", expected 4..16");
  }
  const std::uint32_t period = (1U << bits) - 1, taps = kLfsrTaps[static_cast<std::size_t>(bits)];
  std::vector<std::uint16_t> seq(period);
  std::uint32_t state = 1;
  for (std::uint32_t t = 0; t < period; ++t) {
    ZT_CHECK_MSG(t == 0 || state != 1, "LFSR taps are not maximal-length");
    seq[t] = static_cast<std::uint16_t>(state);
    state = (state >> 1) ^ ((state & 1U) != 0 ? taps : 0U);
  }
  ZT_CHECK_MSG(state == 1, "LFSR taps are not maximal-length");
  return seq;
}

std::uint64_t pezo_stream_windows(std::uint64_t pool_size, std::uint64_t elements) {
  ZT_CHECK(pool_size >= 1);
  std::uint64_t a = pool_size, b = elements % pool_size;
  while (b != 0) a = std::exchange(b, a % b);  // gcd(N, D mod N) = gcd(D, N)
  return pool_size / a;
}

Perturber::Perturber(PerturbSource s, Isa isa, const PezoOptions& pezo)
    : source_(s), stream_offsets_(pezo.stream_offsets), elements_(pezo.elements),
      run_seed_(pezo.seed) {
  if (stream_offsets_ && elements_ == 0) {
    throw Error("PeZO stream offsets: the perturbation must have at least one element");
  }
  if (s == PerturbSource::kPezoOnTheFly) {
    if (pezo.rngs < 2 || pezo.rngs > kPezoMaxRngs) {
      throw Error("zo.rngs: " + std::to_string(pezo.rngs) + ", expected 2.." +
                  std::to_string(kPezoMaxRngs));
    }
    lfsr_ = lfsr_sequence(pezo.rng_bits);
    rngs_ = pezo.rngs;
    bits_ = pezo.rng_bits;
    pow2_ = pezo.pow2_scale;
    return;
  }
  if (s != PerturbSource::kPezoPool) {
    perturb_ = select_perturb_f32(s, isa);
    fill_ = select_fill_f32(s, isa);
    perturb_fill_ = select_perturb_fill_f32(s, isa);
    update_perturb_fill_ = select_update_perturb_fill_f32(s, isa);
    return;
  }
  ZT_CHECK_MSG(pezo.size >= 1, "PeZO pool: size must be at least 1");
  pool_.resize(pezo.size);
  double sq = 0;
  for (std::size_t k = 0; k < pezo.size; ++k) {
    pool_[k] = uniform_raw_ref(pezo.seed, k);
    sq += static_cast<double>(pool_[k]) * pool_[k];
  }
  // Adaptive modulus scaling, once for the pool: ‖scale · u‖ = E‖g_N‖ (≈ √3 for large N), or
  // the power of two nearest that factor.
  double scale = expected_gaussian_norm(pezo.size) / std::sqrt(sq);
  if (pezo.pow2_scale) scale = nearest_pow2(scale);
  for (float& v : pool_) v = static_cast<float>(v * scale);
}

std::size_t Perturber::pool_offset(std::uint64_t seed, std::uint64_t stream) const {
  ZT_CHECK(!pool_.empty());
  if (stream_offsets_) {  // (t·D) mod N without overflow: N < 2^25
    const std::uint64_t N = pool_.size();
    return static_cast<std::size_t>((seed % N) * (elements_ % N) % N);
  }
  return static_cast<std::size_t>(mix64(seed ^ mix64(stream + 0x50e2a0a1ULL)) % pool_.size());
}

Perturber::OnTheFlyAt Perturber::on_the_fly_at(std::uint64_t seed, std::uint64_t stream,
                                               std::uint64_t offset) const {
  if (stream_offsets_) return {run_seed_, 0, seed * elements_ + offset};  // element t·D + offset
  return {seed, stream, offset};
}

std::size_t Perturber::rng_phase(std::uint64_t seed, std::uint64_t stream, int m) const {
  ZT_CHECK(!lfsr_.empty() && m >= 0 && m < rngs_);
  const std::uint64_t key = mix64(seed ^ mix64(stream + 0x0f1e2d3cULL));
  return static_cast<std::size_t>(mix64(key + static_cast<std::uint64_t>(m)) % lfsr_.size());
}

template <bool kFill>
void Perturber::on_the_fly(float* out, std::size_t len, std::uint64_t seed, std::uint64_t stream,
                           std::uint64_t first, float scale) const {
  const std::size_t n = static_cast<std::size_t>(rngs_), P = lfsr_.size();
  std::array<std::size_t, kPezoMaxRngs> phase{};
  for (int m = 0; m < rngs_; ++m) phase[static_cast<std::size_t>(m)] = rng_phase(seed, stream, m);
  const double target = expected_gaussian_norm(n), half = std::ldexp(1.0, bits_ - 1);
  const double inv_half = 1.0 / half;  // a power of two: (v − half) · inv_half is exact
  const std::uint16_t* S = lfsr_.data();
  std::array<float, kPezoMaxRngs> x{};
  std::uint64_t c = first / n;  // the cycle
  std::size_t m0 = static_cast<std::size_t>(c % n), step = static_cast<std::size_t>(c % P);
  for (std::uint64_t e = first; e < first + len; ++c) {
    double sq = 0;
    std::size_t m = m0;  // the chunk: position k from RNG (k + c) mod n, at state phase + c
    for (std::size_t k = 0; k < n; ++k) {
      std::size_t t = phase[m] + step;
      if (t >= P) t -= P;
      const double u = (static_cast<double>(S[t]) - half) * inv_half;
      x[k] = static_cast<float>(u);
      sq += u * u;
      if (++m == n) m = 0;
    }
    if (++m0 == n) m0 = 0;
    if (++step == P) step = 0;
    double sigma = sq > 0 ? target / std::sqrt(sq) : 0.0;
    if (pow2_ && sigma > 0) sigma = nearest_pow2(sigma);
    const std::size_t k0 = static_cast<std::size_t>(e - c * n);
    const std::size_t run = std::min<std::uint64_t>(n - k0, first + len - e);
    float* o = out + (e - first);
    for (std::size_t k = 0; k < run; ++k) {
      const float z = static_cast<float>(sigma * x[k0 + k]);
      if constexpr (kFill) {
        o[k] = z;
      } else {
        o[k] = o[k] + scale * z;
      }
    }
    e += run;
  }
}

void Perturber::perturb(float* theta, std::size_t n, std::uint64_t seed, std::uint64_t stream,
                        std::uint64_t offset, float scale) const {
  if (perturb_ != nullptr) return perturb_(theta, n, seed, stream, offset, scale);
  if (!lfsr_.empty()) {
    const OnTheFlyAt at = on_the_fly_at(seed, stream, offset);
    PoolChunks::for_each(n, [&](std::size_t b, std::size_t len) {
      on_the_fly<false>(theta + b, len, at.seed, at.stream, at.first + b, scale);
    });
    return;
  }
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

namespace {
// 32 at a time, the products before the sums: independent chains for in-order cores (the plain
// loop runs one latency-bound vector at a time on a Cortex-A53).
[[gnu::noinline]] void add_scaled_span(float* __restrict t, const float* __restrict d,
                                       std::size_t len, float scale) {
  std::size_t i = 0;
  for (; i + 32 <= len; i += 32) {
    float p[32];
    for (int j = 0; j < 32; ++j) p[j] = scale * d[i + j];
    for (int j = 0; j < 32; ++j) t[i + j] = t[i + j] + p[j];
  }
  for (; i < len; ++i) t[i] = t[i] + scale * d[i];
}
}  // namespace

void add_scaled_f32(float* theta, const float* z, std::size_t n, float scale) {
  PoolChunks::for_each(n, [&](std::size_t b, std::size_t len) {
    add_scaled_span(theta + b, z + b, len, scale);
  });
}

void Perturber::fill(float* out, std::size_t n, std::uint64_t seed, std::uint64_t stream,
                     std::uint64_t offset) const {
  if (fill_ != nullptr) return fill_(out, n, seed, stream, offset);
  if (!lfsr_.empty()) {
    const OnTheFlyAt at = on_the_fly_at(seed, stream, offset);
    return on_the_fly<true>(out, n, at.seed, at.stream, at.first, 0.0f);
  }
  const std::size_t N = pool_.size();
  const std::size_t o = (pool_offset(seed, stream) + offset % N) % N;
  for (std::size_t i = 0; i < n; ++i) out[i] = pool_[(o + i % N) % N];
}

void Perturber::perturb_fill(float* theta, float* z, std::size_t n, std::uint64_t seed,
                             std::uint64_t stream, std::uint64_t offset, float scale) const {
  if (perturb_fill_ != nullptr) return perturb_fill_(theta, z, n, seed, stream, offset, scale);
  fill(z, n, seed, stream, offset);
  add_scaled_f32(theta, z, n, scale);
}

void Perturber::update_perturb_fill(float* theta, float* z, std::size_t n, std::uint64_t seed,
                                    std::uint64_t stream, std::uint64_t offset, float prev,
                                    float scale) const {
  if (update_perturb_fill_ != nullptr)
    return update_perturb_fill_(theta, z, n, seed, stream, offset, prev, scale);
  add_scaled_f32(theta, z, n, prev);
  perturb_fill(theta, z, n, seed, stream, offset, scale);
}

}  // namespace zt::kernels
