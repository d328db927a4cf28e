// Checkpoints in the safetensors format: 8-byte little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets}, "__metadata__": {string: string}}, then the raw data.
// Writing is atomic: a temporary file in the same directory, flushed and fsync'd, then renamed.
// Reading validates the header, dtypes, shapes against data_offsets, and the file size; every
// failure throws zt::Error naming the file.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace zt::run {

struct StoredTensor {
  std::string dtype;                 // "F32", "I32" or "I8"
  std::vector<std::int64_t> shape;
  std::vector<std::uint8_t> bytes;   // little-endian raw data
};

struct TensorFile {
  std::map<std::string, StoredTensor> tensors;
  std::map<std::string, std::string> metadata;
};

void write_safetensors(const std::string& path, const TensorFile& file);
TensorFile read_safetensors(const std::string& path);

// Writes `text` to `path` atomically (temporary file + fsync + rename). Throws zt::Error.
void write_file_atomic(const std::string& path, const std::string& text);
// Renames `from` to `to` and syncs the directory, so the rename survives a power cut. Throws
// zt::Error naming both.
void rename_file(const std::string& from, const std::string& to);

}  // namespace zt::run
