// The test binary's global operator new / delete: malloc and free, counting while a
// CountAllocations is alive (tests/alloc_counter.hpp). Every replaceable form is defined so
// that each new is paired with its own delete.
#include "../alloc_counter.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

// GCC sees these deletes' free() inlined against the news' malloc() and warns of a mismatch;
// here they are the pair by definition.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

// ThreadSanitizer's runtime defines every operator new and delete itself (not weakly), so the test
// binary cannot replace them there.
#if defined(__SANITIZE_THREAD__)
#define ZT_NO_COUNTING_NEW 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ZT_NO_COUNTING_NEW 1
#endif
#endif

namespace {

std::atomic<int> g_counting{0};
std::atomic<std::size_t> g_count{0}, g_bytes{0};

[[maybe_unused]] void* counted_alloc(std::size_t size, std::size_t align) {
  if (g_counting.load(std::memory_order_relaxed) > 0) {
    g_count.fetch_add(1, std::memory_order_relaxed);
    g_bytes.fetch_add(size, std::memory_order_relaxed);
  }
  if (size == 0) size = 1;
  void* p = align <= alignof(std::max_align_t)
                ? std::malloc(size)
                : std::aligned_alloc(align, (size + align - 1) / align * align);
  return p;
}

}  // namespace

#ifndef ZT_NO_COUNTING_NEW
void* operator new(std::size_t size) {
  if (void* p = counted_alloc(size, 0)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void* operator new(std::size_t size, std::align_val_t al) {
  if (void* p = counted_alloc(size, static_cast<std::size_t>(al))) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size, std::align_val_t al) { return operator new(size, al); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return counted_alloc(size, 0);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return counted_alloc(size, 0);
}
void* operator new(std::size_t size, std::align_val_t al, const std::nothrow_t&) noexcept {
  return counted_alloc(size, static_cast<std::size_t>(al));
}
void* operator new[](std::size_t size, std::align_val_t al, const std::nothrow_t&) noexcept {
  return counted_alloc(size, static_cast<std::size_t>(al));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
#endif

namespace zt::test {

CountAllocations::CountAllocations() {
  g_count.store(0);
  g_bytes.store(0);
  g_counting.fetch_add(1);
}
CountAllocations::~CountAllocations() { g_counting.fetch_sub(1); }
bool CountAllocations::available() {
#ifdef ZT_NO_COUNTING_NEW
  return false;
#else
  return true;
#endif
}
std::size_t CountAllocations::count() const { return g_count.load(); }
std::size_t CountAllocations::bytes() const { return g_bytes.load(); }

namespace {

// The counter itself: a vector's growth is seen, nothing outside the scope is.
TEST(CountAllocations, SeesAllocationsInsideItsScopeOnly) {
  if (!CountAllocations::available()) GTEST_SKIP() << "no counting operator new in this build";
  std::vector<int> before(100);
  CountAllocations counter;
  EXPECT_EQ(counter.count(), 0u);
  std::vector<int> v(1000);
  EXPECT_EQ(counter.count(), 1u);
  EXPECT_GE(counter.bytes(), 4000u);
  v.assign(10, 0);  // fits: no allocation
  EXPECT_EQ(counter.count(), 1u);
}

}  // namespace
}  // namespace zt::test
