#include "zotrain/run/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <type_traits>
#include <tuple>
#include <nlohmann/json.hpp>

#include "zotrain/core/error.hpp"

namespace zt::run {
namespace {

std::size_t dtype_size(const std::string& dtype, const std::string& path) {
  if (dtype == "F32") return 4;
  if (dtype == "I8") return 1;
  if (dtype == "I32") return 4;
  throw Error(path + ": unsupported tensor dtype '" + dtype + "' (expected F32, I32 or I8)");
}

// `what` prefixes the error message (it names the file).
void write_all(int fd, const void* data, std::size_t n, const std::string& what) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw Error(what + "write failed: " + std::strerror(errno));
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

// Errors name the file being written (`path`) and its temporary file; `path` keeps its previous
// content (if any) whatever fails.
void write_atomic(const std::string& path, const std::vector<std::pair<const void*, std::size_t>>& parts) {
  const std::string tmp = path + ".tmp";
  const std::string what = path + ": cannot write (temporary file " + tmp + "): ";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(what + std::strerror(errno));
  try {
    for (const auto& [data, n] : parts) write_all(fd, data, n, what);
    if (::fsync(fd) != 0) throw Error(what + "fsync failed: " + std::strerror(errno));
    const int rc = ::close(fd);
    fd = -1;
    if (rc != 0) throw Error(what + "close failed: " + std::strerror(errno));
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  try {
    rename_file(tmp, path);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
}

// A JSON array of integers as T. Floats are refused: converting one outside T's range (e.g.
// 4.3e25 as a data offset) is undefined behaviour in the JSON library's get<T>().
template <class T>
std::vector<T> integers(const nlohmann::json& a, const char* what) {
  if (!a.is_array()) throw Error(std::string(what) + " must be an array of integers, got " + a.dump());
  std::vector<T> v;
  for (const nlohmann::json& x : a) {
    if (!x.is_number_integer() || (std::is_unsigned_v<T> && !x.is_number_unsigned()) ||
        (std::is_signed_v<T> && x.is_number_unsigned() &&
         x.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<T>::max())))
      throw Error(std::string(what) + " must hold " + (std::is_unsigned_v<T> ? "non-negative " : "") +
                  "integers in range, got " + x.dump());
    v.push_back(x.get<T>());
  }
  return v;
}

}  // namespace

void rename_file(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0)
    throw Error(to + ": cannot rename " + from + " into place: " + std::strerror(errno));
  // The rename itself survives a power cut once the directory is synced.
  const auto slash = to.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : to.substr(0, slash);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // e.g. no read permission on the directory: the rename is done
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL)  // EINVAL: a file system that cannot sync directories
    throw Error(to + ": cannot sync its directory " + dir + ": " + std::strerror(err));
}

void write_file_atomic(const std::string& path, const std::string& text) {
  write_atomic(path, {{text.data(), text.size()}});
}

void write_safetensors(const std::string& path, const TensorFile& file) {
  nlohmann::json header = nlohmann::json::object();
  std::size_t offset = 0;
  for (const auto& [name, t] : file.tensors) {
    std::size_t numel = 1;
    for (std::int64_t d : t.shape) numel *= static_cast<std::size_t>(d);
    if (numel * dtype_size(t.dtype, path) != t.bytes.size())
      throw Error(path + ": tensor '" + name + "' has " + std::to_string(t.bytes.size()) +
                  " bytes, inconsistent with its shape");
    header[name] = {{"dtype", t.dtype},
                    {"shape", t.shape},
                    {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  if (!file.metadata.empty()) header["__metadata__"] = file.metadata;
  std::string text = header.dump();
  while ((text.size() + 8) % 8 != 0) text.push_back(' ');  // align data to 8 bytes
  std::uint8_t len[8];
  std::uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) len[i] = static_cast<std::uint8_t>(n >> (8 * i));
  std::vector<std::pair<const void*, std::size_t>> parts = {{len, 8}, {text.data(), text.size()}};
  for (const auto& [name, t] : file.tensors) parts.push_back({t.bytes.data(), t.bytes.size()});
  write_atomic(path, parts);
}

TensorFile read_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open checkpoint");
  in.seekg(0, std::ios::end);
  const std::uint64_t file_size = static_cast<std::uint64_t>(in.tellg());
  in.seekg(0);
  std::uint8_t len[8];
  if (file_size < 8 || !in.read(reinterpret_cast<char*>(len), 8))
    throw Error(path + ": not a safetensors file (shorter than its 8-byte header length)");
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<std::uint64_t>(len[i]) << (8 * i);
  if (n > file_size - 8 || n > (100u << 20))
    throw Error(path + ": safetensors header length " + std::to_string(n) + " exceeds the file");
  std::string text(n, '\0');
  in.read(text.data(), static_cast<std::streamsize>(n));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw Error(path + ": safetensors header is not valid JSON: " + e.what());
  }
  if (!header.is_object()) throw Error(path + ": safetensors header is not a JSON object");
  const std::uint64_t data_size = file_size - 8 - n;
  std::vector<std::uint8_t> data(data_size);
  in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(data_size));
  if (!in) throw Error(path + ": truncated checkpoint data");
  TensorFile out;
  std::vector<std::tuple<std::uint64_t, std::uint64_t, std::string>> spans;  // data_offsets
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) throw Error(path + ": __metadata__ must be an object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) throw Error(path + ": metadata '" + m.key() + "' is not a string");
        out.metadata[m.key()] = m->get<std::string>();
      }
      continue;
    }
    const nlohmann::json& e = *it;
    StoredTensor t;
    try {
      t.dtype = e.at("dtype").get<std::string>();
      t.shape = integers<std::int64_t>(e.at("shape"), "shape");
      const auto off = integers<std::uint64_t>(e.at("data_offsets"), "data_offsets");
      if (off.size() != 2 || off[0] > off[1])
        throw Error("data_offsets must be [begin, end] with begin <= end");
      if (off[1] > data_size)
        throw Error("data_offsets [" + std::to_string(off[0]) + ", " + std::to_string(off[1]) +
                    ") reach past the " + std::to_string(data_size) +
                    " bytes of data (a truncated file, or a header that does not fit it)");
      // The byte count in 64 bits: a shape whose product wraps around (e.g. [2^62, 4] F32 = 2^64
      // bytes, 0 after wrapping) would otherwise match empty data_offsets.
      std::uint64_t nbytes = dtype_size(t.dtype, path);
      bool wraps = false;
      for (std::int64_t d : t.shape) {
        if (d < 0) throw Error("negative dimension");
        wraps = __builtin_mul_overflow(nbytes, static_cast<std::uint64_t>(d), &nbytes) || wraps;
      }
      std::string shape;
      for (std::int64_t d : t.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
      if (wraps)
        throw Error(t.dtype + " [" + shape + "] is more than 2^64 bytes (shape overflows)");
      if (nbytes != off[1] - off[0]) {
        throw Error(t.dtype + " [" + shape + "] is " + std::to_string(nbytes) +
                    " bytes, but its data_offsets span " + std::to_string(off[1] - off[0]) +
                    " (shape or dtype does not match data_offsets)");
      }
      t.bytes.assign(data.begin() + static_cast<std::ptrdiff_t>(off[0]),
                     data.begin() + static_cast<std::ptrdiff_t>(off[1]));
      spans.emplace_back(off[0], off[1], it.key());
    } catch (const Error& err) {
      throw Error(path + ": tensor '" + it.key() + "': " + err.what());
    } catch (const std::exception& err) {
      throw Error(path + ": tensor '" + it.key() + "': malformed entry: " + err.what());
    }
    out.tensors.emplace(it.key(), std::move(t));
  }
  // Each byte of the data belongs to at most one tensor (empty tensors aside).
  std::sort(spans.begin(), spans.end());
  std::size_t last = 0;  // the span reaching furthest so far
  for (std::size_t i = 1; i < spans.size(); ++i) {
    const auto& [b0, e0, n0] = spans[last];
    const auto& [b1, e1, n1] = spans[i];
    if (b1 < e0 && b1 < e1)
      throw Error(path + ": tensors '" + n0 + "' and '" + n1 + "' overlap (data_offsets [" +
                  std::to_string(b0) + ", " + std::to_string(e0) + ") and [" + std::to_string(b1) +
                  ", " + std::to_string(e1) + "))");
    if (e1 > e0) last = i;
  }
  return out;
}

}  // namespace zt::run
