#include "zotrain/core/arena.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include <unistd.h>

#include "zotrain/core/error.hpp"

namespace zt {

namespace {
constexpr std::size_t kAlignUnits = 16;  // 64 bytes
}

void check_fits_in_memory(std::size_t bytes, const std::string& what) {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return;
  const std::size_t ram = static_cast<std::size_t>(pages) * static_cast<std::size_t>(page);
  if (bytes < ram) return;
  throw Error(what + " needs " + std::to_string(bytes) + " bytes, more than this machine's " +
              std::to_string(ram) + " bytes of RAM; lower train.batch_size (or data.points)");
}

int Arena::reserve_bytes(const std::string& name, std::size_t bytes, int type) {
  ZT_CHECK_MSG(!allocated(), "Arena::reserve after allocate: " + name);
  const std::size_t units = (bytes + kUnit - 1) / kUnit;
  const std::size_t rounded = (units + kAlignUnits - 1) / kAlignUnits * kAlignUnits;
  entries_.push_back({name, total_units_, bytes, type});
  total_units_ += rounded;
  return static_cast<int>(entries_.size()) - 1;
}

void Arena::allocate() {
  ZT_CHECK(!allocated());
  const std::size_t bytes = std::max<std::size_t>(total_units_, kAlignUnits) * kUnit;
  {
    Entry largest{"", 0, 0, 0};
    for (const Entry& e : entries_)
      if (e.bytes > largest.bytes) largest = e;
    check_fits_in_memory(bytes, "the memory plan (largest buffer: '" + largest.name + "', " +
                                    std::to_string(largest.bytes) + " bytes)");
  }
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  ZT_CHECK_MSG(p != nullptr, "out of memory allocating " + std::to_string(bytes) + " bytes");
  std::memset(p, 0, bytes);
  storage_.reset(static_cast<float*>(p));
}

void* Arena::base(int handle, int type) const {
  ZT_CHECK(allocated() && handle >= 0 && handle < static_cast<int>(entries_.size()));
  const Entry& e = entries_[static_cast<std::size_t>(handle)];
  ZT_CHECK_MSG(e.type == type, "Arena: buffer '" + e.name + "' read as another element type");
  return reinterpret_cast<unsigned char*>(storage_.get()) + e.offset * kUnit;
}

void Arena::FreeDeleter::operator()(void* p) const { std::free(p); }

}  // namespace zt
