#include "zotrain/core/arena.hpp"

#include <cstdlib>
#include <cstring>

#include "zotrain/core/error.hpp"

namespace zt {

namespace {
constexpr std::size_t kAlignFloats = 16;  // 64 bytes
}

int Arena::reserve(const std::string& name, std::size_t floats) {
  ZT_CHECK_MSG(!allocated(), "Arena::reserve after allocate: " + name);
  const std::size_t rounded = (floats + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
  entries_.push_back({name, total_floats_, floats});
  total_floats_ += rounded;
  return static_cast<int>(entries_.size()) - 1;
}

void Arena::allocate() {
  ZT_CHECK(!allocated());
  const std::size_t bytes = std::max<std::size_t>(total_floats_, kAlignFloats) * sizeof(float);
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  ZT_CHECK_MSG(p != nullptr, "out of memory allocating " + std::to_string(bytes) + " bytes");
  std::memset(p, 0, bytes);
  storage_.reset(static_cast<float*>(p));
}

float* Arena::get(int handle) const {
  ZT_CHECK(allocated() && handle >= 0 && handle < static_cast<int>(entries_.size()));
  return storage_.get() + entries_[static_cast<std::size_t>(handle)].offset;
}

void Arena::FreeDeleter::operator()(float* p) const { std::free(p); }

}  // namespace zt
