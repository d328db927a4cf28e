// Where a ModelNet40 dataset's values are stored, checked before the loader allocates for them
// (modelnet40_internal.hpp): in the file itself, and no more compressed than deflate can be.
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <system_error>
#include <vector>

#include <zlib.h>

#include "modelnet40_internal.hpp"

namespace zt::data::modelnet40_detail {
namespace {

// Deflate, the usual HDF5 filter, compresses at most about 1032:1; a filtered dataset claiming
// more values than that per stored byte cannot hold them.
constexpr std::uint64_t kMaxCompression = 1100;

// What a zlib stream (HDF5's deflate filter) inflates to, counted in a 64 KiB window so that a
// corrupt length allocates nothing: the byte count, stopping once it passes `limit`, and whether
// the stream ended (false: corrupt or cut short).
struct Inflated {
  std::uint64_t bytes = 0;
  bool complete = false;
};
Inflated inflated_size(const std::vector<std::uint8_t>& in, std::uint64_t limit) {
  Inflated r;
  z_stream zs{};
  if (in.size() > std::numeric_limits<uInt>::max() || inflateInit(&zs) != Z_OK) return r;
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  std::vector<Bytef> window(1 << 16);
  for (int rc = Z_OK; rc == Z_OK && r.bytes <= limit;) {
    zs.next_out = window.data();
    zs.avail_out = static_cast<uInt>(window.size());
    rc = inflate(&zs, Z_NO_FLUSH);
    r.bytes += window.size() - zs.avail_out;
    r.complete = rc == Z_STREAM_END;
  }
  inflateEnd(&zs);
  return r;
}

// Checks every stored chunk of a chunked dataset holds one whole chunk (`chunk_bytes`) before
// libhdf5 reads any: libhdf5 1.10 copies a whole chunk out of whatever its filter pipeline
// returned, so a deflated chunk that inflates to fewer bytes makes H5Dread read freed memory (a
// 5 KB file with chunks declared 1 x 6 x 4099 over a 2 x 6 x 3 dataset crashed a normal build;
// fuzz_modelnet40 found it). Filters other than deflate and shuffle are refused (the loader can
// check only what it can undo); shuffle keeps the size, so a deflated chunk must inflate to
// exactly chunk_bytes and an unfiltered one hold exactly that many. One stored chunk in memory at
// a time; nothing is allocated for the inflated bytes.
void check_chunks(const h5::Id& ds, const h5::Id& dcpl, const h5::Id& space,
                  const std::string& path, const std::string& what, std::uint64_t chunks,
                  std::uint64_t chunk_bytes, std::uint64_t file_size) {
  int deflate = -1;  // index of deflate in the pipeline
  const int nfilters = H5Pget_nfilters(dcpl.get());
  for (int i = 0; i < nfilters; ++i) {
    unsigned flags = 0;
    std::size_t n = 0;
    char name[64] = {};
    const H5Z_filter_t id = H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &n,
                                           nullptr, sizeof name, name, nullptr);
    if (id == H5Z_FILTER_DEFLATE) {
      deflate = i;
    } else if (id != H5Z_FILTER_SHUFFLE) {
      fail(path, what + " is stored with HDF5 filter " + std::to_string(id) +
                     (name[0] != '\0' ? " (" + std::string(name) + ")" : std::string()) +
                     ", expected no filter, deflate (gzip) or shuffle");
    }
  }
  std::vector<std::uint8_t> in;
  std::vector<hsize_t> offset(H5S_MAX_RANK);
  for (std::uint64_t c = 0; c < chunks; ++c) {
    unsigned mask = 0;
    haddr_t addr = 0;
    hsize_t size = 0;
    if (H5Dget_chunk_info(ds.get(), space.get(), c, offset.data(), &mask, &addr, &size) < 0) {
      fail(path, with_detail("cannot read the chunks of " + what));
    }
    const bool deflated = deflate >= 0 && (mask & (1U << deflate)) == 0;
    const std::string chunk = "chunk " + std::to_string(c) + " of " + what;
    if (size > file_size ||
        (deflated ? chunk_bytes / kMaxCompression > size : size != chunk_bytes)) {
      fail(path, chunk + " stores " + std::to_string(size) + " bytes" +
                     (deflated ? " (deflated)" : "") + " for a chunk of " +
                     std::to_string(chunk_bytes) + " bytes in a file of " +
                     std::to_string(file_size) + " bytes (a corrupt header)");
    }
    if (!deflated) continue;
    in.resize(static_cast<std::size_t>(size));
    std::uint32_t filters = 0;
    if (H5Dread_chunk(ds.get(), H5P_DEFAULT, offset.data(), &filters, in.data()) < 0) {
      fail(path, with_detail("cannot read " + chunk));
    }
    const Inflated got = inflated_size(in, chunk_bytes);
    if (!got.complete || got.bytes != chunk_bytes) {
      fail(path, chunk + " does not inflate to its " + std::to_string(chunk_bytes) + " bytes (" +
                     (got.bytes > chunk_bytes ? std::string("more bytes")
                      : got.complete          ? std::to_string(got.bytes) + " bytes"
                                              : std::string("corrupt deflate data")) +
                     "), expected a whole chunk");
    }
  }
}

}  // namespace

// Checks that the values of dataset `name` ([elements] of its stored type) are stored in the file
// itself, before anything is allocated for them: HDF5 returns the fill value for storage never
// written, so a 2 KB file could otherwise claim [300000, 1000, 3] and make the loader allocate
// and read 3.6 GB. Refused: virtual datasets and external storage (values in other files), values
// never written, and fewer stored bytes than the shape needs (uncompressed) or than any
// compression could expand to it, or more than the file holds.
void check_stored(const h5::Id& ds, const std::string& path, const char* name,
                  const std::vector<hsize_t>& dims) {
  std::uint64_t elements = 1;
  for (hsize_t n : dims) elements *= n;  // validated by inspect(): no overflow
  const std::string what = std::string("'") + name + "'";
  h5::Id dcpl(H5Dget_create_plist(ds.get()), H5Pclose);
  h5::Id type(H5Dget_type(ds.get()), H5Tclose);
  if (!dcpl || !type) fail(path, with_detail("cannot read the storage of " + what));
  if (H5Pget_layout(dcpl.get()) == H5D_VIRTUAL || H5Pget_external_count(dcpl.get()) != 0) {
    fail(path, what + " keeps its values in other files (virtual or external storage), expected "
                      "them stored in this file");
  }
  // Every value written: each chunk of a chunked dataset exists (HDF5's space status compares
  // stored bytes with the shape's, which compression defeats), other layouts are allocated.
  bool written = false;
  const bool chunked = H5Pget_layout(dcpl.get()) == H5D_CHUNKED;
  std::vector<hsize_t> chunk(dims.size());
  hsize_t have = 0;
  const h5::Id space(chunked ? H5Dget_space(ds.get()) : H5I_INVALID_HID, H5Sclose);
  if (chunked) {
    hsize_t want = 1;
    if (!space ||
        H5Pget_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()) !=
            static_cast<int>(dims.size()) ||
        H5Dget_num_chunks(ds.get(), space.get(), &have) < 0) {
      fail(path, with_detail("cannot read the chunks of " + what));
    }
    for (std::size_t i = 0; i < dims.size(); ++i) {
      if (chunk[i] == 0) fail(path, what + " has a chunk dimension of 0");
      want *= (dims[i] + chunk[i] - 1) / chunk[i];
    }
    written = have == want;
  } else {
    H5D_space_status_t status{};
    if (H5Dget_space_status(ds.get(), &status) < 0) {
      fail(path, with_detail("cannot read the storage of " + what));
    }
    written = status == H5D_SPACE_STATUS_ALLOCATED;
  }
  if (!written) {
    fail(path, what + " has values that were never written (HDF5 would return its fill value), "
                      "expected every value stored in the file");
  }
  std::uint64_t raw = 0;
  const std::size_t type_size = H5Tget_size(type.get());
  if (type_size == 0 || __builtin_mul_overflow(elements, std::uint64_t{type_size}, &raw)) {
    fail(path, with_detail("cannot read the type size of " + what));
  }
  const std::uint64_t stored = H5Dget_storage_size(ds.get());
  std::error_code ec;
  const std::uint64_t file_size = std::filesystem::file_size(path, ec);
  // Filters apply to chunked storage only: libhdf5 reads a compact or contiguous dataset raw
  // whatever filters its header lists (a compact one with a filter and no bytes made H5Dread
  // copy from a null pointer), so there the shape's bytes must all be stored.
  const bool filtered = chunked && H5Pget_nfilters(dcpl.get()) > 0;
  if ((filtered ? raw / kMaxCompression > stored : stored < raw) || (!ec && stored > file_size)) {
    fail(path, what + " needs " + std::to_string(raw) + " bytes for its shape but " +
                   std::to_string(stored) + " bytes are stored" +
                   (filtered ? " (compressed)" : "") + " in the file of " +
                   std::to_string(file_size) + " bytes (a corrupt header or a truncated file)");
  }
  if (chunked) {
    std::uint64_t chunk_bytes = type_size;
    for (hsize_t n : chunk) {
      if (__builtin_mul_overflow(chunk_bytes, std::uint64_t{n}, &chunk_bytes)) {
        fail(path, what + " declares chunks of more than 2^64 bytes (a corrupt header)");
      }
    }
    check_chunks(ds, dcpl, space, path, what, have, chunk_bytes, file_size);
  }
}

}  // namespace zt::data::modelnet40_detail
