// Structural checks of version 0 and 1 HDF5 files before libhdf5 1.10 reads them (see
// hdf5_precheck.hpp). What libhdf5 does with each defect, found by fuzz_modelnet40:
//   - a driver information block claiming more bytes than the file holds: it allocates and fills
//     that much inside H5Fopen (a 1 KB file took 2.3 GB of memory);
//   - a root symbol-table entry or symbol-table message pointing at something that is not a
//     B-tree or local heap, or at a heap whose data segment is empty or outside the file:
//     H5Lexists reads through a null pointer, or allocates the claimed segment (2.98 GB);
//   - a root group B-tree whose child address is undefined or not a node: H5Lexists reads
//     through a null pointer;
//   - a message of a dataset's object header flagged as shared through a shared-message table
//     (which only a version 2 or 3 superblock can point at): H5Dopen2 reads through a null
//     pointer.
// File layout (the HDF5 file format specification, version 0 and 1 superblocks, 8-byte offsets
// and lengths; all integers little-endian):
//   superblock   signature (8), versions and sizes (16; 20 in version 1), base address, free
//                space address, end of file address, driver information block address (8 each),
//                root group symbol-table entry (40)
//   entry        link name offset (8), object header address (8), cache type (4), reserved (4),
//                scratch pad (16: B-tree and local heap addresses when the cache type is 1)
//   B-tree v1    "TREE", node type (1), level (1), entries (2), left and right siblings (8 each),
//                then key (8), child (8), ..., key; children are nodes one level down, and
//                symbol-table nodes ("SNOD", version, reserved, count (2), entries) at level 0
//   local heap   "HEAP", version (1), reserved (3), data segment size (8), free list (8), data
//                segment address (8); link names are NUL-terminated strings in the segment
//   object header (version 1) version (1), reserved (1), message count (2), reference count (4),
//                header size (4), padding (4), then messages: type (2), size (2), flags (1),
//                reserved (3), data (size); a continuation message (type 0x10) gives the address
//                and length of further messages.
#include "hdf5_precheck.hpp"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <utility>
#include <vector>

#include "zotrain/core/error.hpp"

namespace zt::data::h5 {
namespace {

constexpr std::uint64_t kUndefined = ~std::uint64_t{0};
// Bounds on what a walk visits, far above what a ModelNet40 file holds (two datasets).
constexpr int kMaxTreeLevel = 16;
constexpr int kMaxVisits = 1 << 16;  // B-tree nodes, symbol-table nodes and links together
constexpr std::size_t kMaxContinuations = 64;

class File {
 public:
  File(const std::string& path, std::string want)
      : path_(path), want_(std::move(want)), in_(path, std::ios::binary) {
    in_.seekg(0, std::ios::end);
    const std::streamoff end = in_.tellg();
    size_ = end > 0 ? static_cast<std::uint64_t>(end) : 0;
  }
  std::uint64_t size() const { return size_; }
  // n bytes at `at`, or an empty string where they are not all in the file.
  std::string read(std::uint64_t at, std::uint64_t n) {
    if (at > size_ || n > size_ - at) return {};
    std::string b(static_cast<std::size_t>(n), '\0');
    in_.seekg(static_cast<std::streamoff>(at));
    return in_.read(b.data(), static_cast<std::streamsize>(n)) ? b : std::string();
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(path_ + ": corrupt HDF5 file: " + what + ", expected " + want_);
  }

 private:
  std::string path_, want_;
  std::ifstream in_;
  std::uint64_t size_ = 0;
};

std::uint64_t uint_at(const std::string& b, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
  return v;
}
std::uint64_t u64(const std::string& b, std::size_t at) { return uint_at(b, at, 8); }

struct Table {
  std::uint64_t btree = 0, heap = 0;
};

// The local heap's data segment [at, at + size), checked to lie in the file.
struct Heap {
  std::uint64_t at = 0, size = 0;
};

Heap check_table(File& f, std::uint64_t base, const Table& t) {
  const std::string b = f.read(t.btree, 4), h = f.read(t.heap, 32);
  const std::uint64_t data_size = h.size() == 32 ? u64(h, 8) : 0;
  const std::uint64_t data_at = h.size() == 32 ? base + u64(h, 24) : 0;
  if (b != "TREE" || h.size() != 32 || h.compare(0, 4, "HEAP") != 0 || data_size == 0 ||
      data_at > f.size() || data_size > f.size() - data_at) {
    f.fail("the root group's symbol table (B-tree at byte " + std::to_string(t.btree) +
           ", local heap at byte " + std::to_string(t.heap) + ") is not valid");
  }
  return {data_at, data_size};
}

// The messages of the version 1 object header at `at`, with their continuations, as (type,
// flags, data) to `visit`; stops quietly where the header cannot be parsed (left to HDF5). A
// block of messages (the header's own, or a continuation) must lie in the file: libhdf5
// allocates a block's stated length before it reads the block.
template <class Visit>
void for_each_message(File& f, std::uint64_t base, std::uint64_t at, Visit visit) {
  const std::string oh = f.read(at, 16);
  if (oh.size() != 16 || oh[0] != 1) return;
  std::uint64_t left = uint_at(oh, 2, 2);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> blocks = {{at + 16, uint_at(oh, 8, 4)}};
  for (std::size_t k = 0; k < blocks.size() && left > 0; ++k) {
    const auto [block_at, block_bytes] = blocks[k];
    if (block_at > f.size() || block_bytes > f.size() - block_at) {
      f.fail("the object header at byte " + std::to_string(at) + " has " +
             (k == 0 ? std::string("a message block") : std::string("a continuation block")) +
             " of " + std::to_string(block_bytes) + " bytes at byte " + std::to_string(block_at) +
             ", which does not fit in the file (" + std::to_string(f.size()) + " bytes)");
    }
    const std::string m =
        f.read(blocks[k].first, std::min<std::uint64_t>(blocks[k].second, 1 << 16));
    for (std::size_t i = 0; left > 0 && i + 8 <= m.size(); --left) {
      const std::uint64_t type = uint_at(m, i, 2), len = uint_at(m, i + 2, 2);
      const auto flags = static_cast<unsigned char>(m[i + 4]);
      if (i + 8 + len > m.size()) return;
      const std::string data = m.substr(i + 8, len);
      if (type == 0x10 && len >= 16 && blocks.size() <= kMaxContinuations) {
        blocks.emplace_back(base + u64(data, 0), u64(data, 8));
      }
      visit(type, flags, data);
      i += 8 + len;
    }
  }
}

// Calls visit(name, object header address) for each link of the group whose B-tree node is at
// `node`, depth-first, and refuses a node HDF5's lookup could be sent to that is not what its
// parent says: a B-tree node of group type one level down, a symbol-table node at the leaves,
// a link name inside the heap (libhdf5 reads an undefined child address through a null
// pointer). Each level must be below its parent's `level`, so the depth is bounded, and at most
// kMaxVisits nodes and links are visited (beyond that, the rest is left to HDF5).
template <class Visit>
void for_each_link(File& f, std::uint64_t base, const Heap& heap, std::uint64_t node, int level,
                   int& visits, Visit visit) {
  if (++visits > kMaxVisits) return;
  const std::string invalid =
      "the root group's B-tree node at byte " + std::to_string(node) + " is not valid";
  const std::string h = f.read(node, 24);
  if (h.size() != 24 || h.compare(0, 4, "TREE") != 0 || h[4] != 0) f.fail(invalid);
  const int node_level = static_cast<unsigned char>(h[5]);
  const std::uint64_t entries = uint_at(h, 6, 2);
  if (node_level >= level) f.fail(invalid);
  const std::string kids = f.read(node + 24, entries * 16 + 8);  // once the header is valid
  if (kids.empty()) f.fail(invalid);
  for (std::uint64_t e = 0; e < entries; ++e) {
    const std::uint64_t child = base + u64(kids, 8 + e * 16);
    if (node_level > 0) {
      for_each_link(f, base, heap, child, node_level, visits, visit);
      continue;
    }
    if (++visits > kMaxVisits) return;
    const std::string sn = f.read(child, 8);
    const std::uint64_t symbols = sn.size() == 8 ? uint_at(sn, 6, 2) : 0;
    const std::string ents = f.read(child + 8, symbols * 40);
    if (sn.size() != 8 || sn.compare(0, 4, "SNOD") != 0 || (symbols > 0 && ents.empty())) {
      f.fail("the root group's symbol-table node at byte " + std::to_string(child) +
             " (child of the B-tree node at byte " + std::to_string(node) + ") is not valid");
    }
    for (std::uint64_t s = 0; s < symbols && ++visits <= kMaxVisits; ++s) {
      const std::uint64_t name_at = u64(ents, s * 40);
      if (name_at >= heap.size) {
        f.fail("a link name of the root group (heap offset " + std::to_string(name_at) +
               ") lies outside its heap's " + std::to_string(heap.size) + " bytes");
      }
      std::string name =
          f.read(heap.at + name_at, std::min<std::uint64_t>(heap.size - name_at, 256));
      name = name.substr(0, name.find('\0'));
      visit(name, base + u64(ents, s * 40 + 8));
    }
  }
}

}  // namespace

void check_structure(const std::string& path, const std::vector<std::string>& datasets,
                     const std::string& want) {
  File f(path, want);
  // The superblock is at 0 or at a power of two from 512 (after a user block). Its root
  // symbol-table entry (40 bytes) ends at byte 96 in version 0 and at byte 100 in version 1.
  constexpr std::size_t kSuperblockBytes = 100;
  std::uint64_t at = 0;
  std::string sb;
  for (; at < f.size(); at = at == 0 ? 512 : at * 2) {
    sb = f.read(at, kSuperblockBytes);
    if (sb.size() == kSuperblockBytes && sb.compare(0, 8, "\x89HDF\r\n\x1a\n") == 0) break;
  }
  if (at >= f.size()) return;  // HDF5 will say what is wrong
  const int version = static_cast<unsigned char>(sb[8]);
  if (version > 1 || sb[13] != 8 || sb[14] != 8) return;  // 8-byte offsets and lengths only
  const std::size_t entry = version == 0 ? 56 : 60;       // the root group's symbol-table entry
  // Addresses count from the base address, which HDF5 takes to be where it found the superblock
  // whatever the stored one says (H5F__super_read moves it there).
  const std::uint64_t base = at;
  // The optional driver information block: a 16-byte header whose bytes 4-7 give the length of
  // the information that follows.
  const std::uint64_t driver = u64(sb, entry - 8);
  if (driver != kUndefined) {
    const std::string d = driver <= f.size() - base ? f.read(base + driver, 16) : std::string();
    const std::uint64_t bytes = d.size() == 16 ? 16 + uint_at(d, 4, 4) : 0;
    if (d.size() != 16 || bytes > f.size() - (base + driver)) {
      f.fail("the superblock's driver information block (byte " + std::to_string(driver) +
             (d.size() == 16 ? ", " + std::to_string(bytes) + " bytes" : std::string()) +
             ") does not fit in the file (" + std::to_string(f.size()) + " bytes)");
    }
  }
  // The root group's B-tree and heap: cached in the entry (cache type 1: the type is 4 bytes,
  // then 4 reserved ones that HDF5 ignores, so must this), and in the symbol-table message (type
  // 0x11) of the root object header. HDF5 looks names up through the message even when the
  // entry caches the pair, so both are checked, and the message's pair is the one walked.
  std::vector<Table> tables;
  if (uint_at(sb, entry + 16, 4) == 1) {
    tables.push_back({base + u64(sb, entry + 24), base + u64(sb, entry + 32)});
  }
  bool in_header = false;
  for_each_message(f, base, base + u64(sb, entry + 8),
                   [&](std::uint64_t type, unsigned char, const std::string& data) {
                     if (type != 0x11 || data.size() < 16 || in_header) return;
                     tables.push_back({base + u64(data, 0), base + u64(data, 8)});
                     in_header = true;
                   });
  if (tables.empty()) return;  // a new-style group or an unparsed header: left to HDF5
  Heap heap;
  for (const Table& t : tables) heap = check_table(f, base, t);
  // The members named in `datasets`: no message of theirs may be shared through a shared-message
  // table (flag 0x02, then an encoding version ≥ 2 whose type byte is 1), since these superblock
  // versions have none; libhdf5 would read the table at an undefined address.
  const auto check_member = [&](const std::string& name, std::uint64_t header) {
    if (std::find(datasets.begin(), datasets.end(), name) == datasets.end()) return;
    const auto check = [&](std::uint64_t type, unsigned char flags, const std::string& data) {
      if ((flags & 0x02) == 0 || data.size() < 2 || static_cast<unsigned char>(data[0]) < 2 ||
          data[1] != 1) {
        return;
      }
      f.fail("'" + name + "' (object header at byte " + std::to_string(header) +
             ") has a message of type " + std::to_string(type) +
             " in a shared-message table, which this file cannot have");
    };
    for_each_message(f, base, header, check);
  };
  int visits = 0;
  for_each_link(f, base, heap, tables.back().btree, kMaxTreeLevel + 1, visits, check_member);
}

}  // namespace zt::data::h5
