// Planned buffers: callers reserve named, typed buffers first, then allocate once (each buffer
// 64-byte aligned). After allocation nothing more can be reserved, so a training step cannot
// allocate from the arena. planned_bytes() is what the tool reports as its own training memory.
// A buffer is read back as the element type it was reserved with (get<T> checks it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace zt {

// Throws zt::Error (naming `what`, the bytes and the machine's RAM) when `bytes` is at least the
// machine's physical memory: a plan that cannot fit is refused before it is touched, rather
// than ended by the kernel's OOM killer. allocate() checks its own total.
void check_fits_in_memory(std::size_t bytes, const std::string& what);

// The element types a buffer may hold.
// double: per-sample losses kept between the passes of a step (FP32 and int8 node perturbation;
// the integer-only int8 code only forwards the pointer, it does no arithmetic on it).
template <class T>
concept ArenaElement = std::is_same_v<T, float> || std::is_same_v<T, std::int32_t> ||
                       std::is_same_v<T, std::int8_t> || std::is_same_v<T, std::int64_t> ||
                       std::is_same_v<T, double>;

class Arena {
 public:
  // Reserves `count` elements of T; returns a handle for get<T>() after allocate().
  template <ArenaElement T = float>
  int reserve(const std::string& name, std::size_t count) {
    return reserve_bytes(name, count * sizeof(T), type_tag<T>());
  }
  void allocate();
  template <ArenaElement T = float>
  T* get(int handle) const {
    return static_cast<T*>(base(handle, type_tag<T>()));
  }
  bool allocated() const { return storage_ != nullptr; }
  std::size_t planned_bytes() const { return total_units_ * kUnit; }
  struct Entry {
    std::string name;
    std::size_t offset;  // in 4-byte units from the start of the storage
    std::size_t bytes;   // as reserved (before the alignment padding)
    int type;
  };
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  static constexpr std::size_t kUnit = 4;  // storage granularity in bytes
  template <class T>
  static constexpr int type_tag() {
    return std::is_same_v<T, float>          ? 0
           : std::is_same_v<T, std::int32_t> ? 1
           : std::is_same_v<T, std::int8_t>  ? 2
           : std::is_same_v<T, std::int64_t> ? 3
                                             : 4;
  }
  int reserve_bytes(const std::string& name, std::size_t bytes, int type);
  void* base(int handle, int type) const;
  struct FreeDeleter {
    void operator()(void* p) const;
  };
  std::vector<Entry> entries_;
  std::size_t total_units_ = 0;
  std::unique_ptr<float, FreeDeleter> storage_;
};

}  // namespace zt
