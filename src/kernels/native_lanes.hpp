// Floats in one native vector register of the build's target, the width the portable paths
// (GCC vector extensions) compute in: AVX-512 16, AVX 8, NEON (and anything else) 4.
#pragma once

namespace zt::kernels {

#if defined(__AVX512F__)
inline constexpr int kNativeF32Lanes = 16;
#elif defined(__AVX__)
inline constexpr int kNativeF32Lanes = 8;
#else
inline constexpr int kNativeF32Lanes = 4;
#endif

}  // namespace zt::kernels
