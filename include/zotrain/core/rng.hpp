// Counter-based random numbers. Element i of stream `stream` under key `seed` is a pure function
// of (seed, stream, i): regeneration is exact, any range can be produced independently (threads,
// SIMD lanes), and results do not depend on thread count, ISA or architecture.
//
// Also a tiny sequential generator (SplitMix64) for non-hot uses: shuffling, seeds per step,
// initialisation. Never std::*_distribution (their output differs between standard libraries).
#pragma once

#include <cstdint>

namespace zt {

// 64-bit finaliser of SplitMix64: a bijective, well-mixed hash.
inline std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// Keyed 32-bit hash (integer only, vectorises: 32-bit multiplies, shifts, xors). Used for the
// int8 paths' counter-based random words: word i of a stream is hash32(key, i).
constexpr std::uint32_t hash32(std::uint32_t key, std::uint32_t x) {
  x ^= key;
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  x += key * 0x9e3779b9U;
  x ^= x >> 17;
  x *= 0xed5ad4bbU;
  x ^= x >> 11;
  x *= 0xac4c1b51U;
  x ^= x >> 15;
  return x;
}

// A 32-bit key per (seed, stream) for hash32.
inline std::uint32_t hash_key(std::uint64_t seed, std::uint64_t stream) {
  return static_cast<std::uint32_t>(mix64(mix64(seed ^ 0x243f6a8885a308d3ULL) + stream) >> 32);
}

class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() { return mix64(state_ += 0x9e3779b97f4a7c15ULL); }
  // Uniform in [0, 1) with 24 bits of resolution (exact in float).
  float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }
  // Uniform integer in [0, n), n > 0 (Lemire's multiply-shift; bias < 2^-32 for small n):
  // (r * n) >> 32 for a 32-bit r, computed exactly in 64-bit halves (no __int128 on 32-bit ARM).
  std::uint64_t below(std::uint64_t n) {
    const std::uint64_t r = next() >> 32;
    return r * (n >> 32) + ((r * (n & 0xffffffffU)) >> 32);
  }
  std::uint64_t state() const { return state_; }

 private:
  std::uint64_t state_;
};

}  // namespace zt
