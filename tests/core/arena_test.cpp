// Arena: typed buffers, 64-byte alignment, planned bytes, and the two misuse checks (reserving
// after allocate, reading a buffer as another element type).
#include <gtest/gtest.h>

#include <cstdint>

#include "zotrain/core/arena.hpp"

namespace zt {
namespace {

TEST(Arena, TypedBuffersAreAlignedAndSizedInBytes) {
  Arena a;
  const int f = a.reserve("floats", 3);                       // 12 bytes
  const int i8 = a.reserve<std::int8_t>("int8", 65);          // 65 bytes
  const int i32 = a.reserve<std::int32_t>("int32", 17);       // 68 bytes
  // Each buffer starts on a 64-byte boundary: 64 + 128 + 128 bytes.
  EXPECT_EQ(a.planned_bytes(), 64u + 128u + 128u);
  ASSERT_EQ(a.entries().size(), 3u);
  EXPECT_EQ(a.entries()[1].bytes, 65u);
  EXPECT_EQ(a.entries()[2].bytes, 68u);
  a.allocate();
  float* pf = a.get(f);
  std::int8_t* p8 = a.get<std::int8_t>(i8);
  std::int32_t* p32 = a.get<std::int32_t>(i32);
  for (const void* p : {static_cast<const void*>(pf), static_cast<const void*>(p8),
                        static_cast<const void*>(p32)})
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<unsigned char*>(p8) - reinterpret_cast<unsigned char*>(pf), 64);
  EXPECT_EQ(reinterpret_cast<unsigned char*>(p32) - reinterpret_cast<unsigned char*>(p8), 128);
  // Zero-filled, and the buffers do not overlap.
  for (int k = 0; k < 65; ++k) EXPECT_EQ(p8[k], 0);
  for (int k = 0; k < 17; ++k) p32[k] = -1;
  for (int k = 0; k < 65; ++k) EXPECT_EQ(p8[k], 0);
}

TEST(ArenaDeathTest, MisuseAborts) {
  Arena a;
  const int h = a.reserve<std::int8_t>("bytes", 8);
  a.allocate();
  EXPECT_DEATH(a.reserve("late", 4), "reserve after allocate");
  EXPECT_DEATH(a.get<std::int32_t>(h), "another element type");
}

}  // namespace
}  // namespace zt
