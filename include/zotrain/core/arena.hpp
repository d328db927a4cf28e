// Planned buffers: callers reserve named float buffers first, then allocate once (64-byte
// aligned). After allocation nothing more can be reserved, so a training step cannot allocate
// from the arena. planned_bytes() is what the tool reports as its own training memory.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace zt {

class Arena {
 public:
  // Returns a handle; the pointer is available from get() after allocate().
  int reserve(const std::string& name, std::size_t floats);
  void allocate();
  float* get(int handle) const;
  bool allocated() const { return storage_ != nullptr; }
  std::size_t planned_bytes() const { return total_floats_ * sizeof(float); }
  struct Entry {
    std::string name;
    std::size_t offset, floats;
  };
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  struct FreeDeleter {
    void operator()(float* p) const;
  };
  std::vector<Entry> entries_;
  std::size_t total_floats_ = 0;
  std::unique_ptr<float, FreeDeleter> storage_;
};

}  // namespace zt
