// safetensors round trip, atomic writes, and rejection of corrupt files.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "zotrain/core/error.hpp"
#include "zotrain/run/checkpoint.hpp"

namespace zt::run {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("zt-ckpt-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

TensorFile sample() {
  TensorFile f;
  StoredTensor w{"F32", {2, 3}, std::vector<std::uint8_t>(24)};
  for (std::size_t i = 0; i < w.bytes.size(); ++i) w.bytes[i] = static_cast<std::uint8_t>(i * 7);
  f.tensors["fc.weight"] = w;
  f.tensors["q"] = StoredTensor{"I8", {5}, {1, 2, 3, 4, 0xff}};
  f.metadata["epoch"] = "3";
  return f;
}

TEST(Safetensors, RoundTrip) {
  const auto path = (temp_dir() / "a.safetensors").string();
  write_safetensors(path, sample());
  const TensorFile g = read_safetensors(path);
  const TensorFile f = sample();
  ASSERT_EQ(g.tensors.size(), 2u);
  EXPECT_EQ(g.tensors.at("fc.weight").bytes, f.tensors.at("fc.weight").bytes);
  EXPECT_EQ(g.tensors.at("fc.weight").shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(g.tensors.at("q").dtype, "I8");
  EXPECT_EQ(g.metadata.at("epoch"), "3");
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST(Safetensors, HeaderIsStandard) {
  // 8-byte little-endian length, then JSON starting with '{'.
  const auto path = (temp_dir() / "b.safetensors").string();
  write_safetensors(path, sample());
  std::ifstream in(path, std::ios::binary);
  unsigned char len[8];
  in.read(reinterpret_cast<char*>(len), 8);
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<std::uint64_t>(len[i]) << (8 * i);
  EXPECT_EQ(fs::file_size(path), 8 + n + 24 + 5);
  EXPECT_EQ(in.get(), '{');
}


// Rejected naming the file and saying `why`.
void expect_rejected_for(const std::string& bytes, const std::string& name, const std::string& why) {
  const auto path = (temp_dir() / name).string();
  std::ofstream(path, std::ios::binary) << bytes;
  try {
    read_safetensors(path);
    FAIL() << name << " was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

void expect_rejected(const std::string& bytes, const std::string& name) {
  expect_rejected_for(bytes, name, "");
}

TEST(Safetensors, RejectsCorruptFiles) {
  const auto good = (temp_dir() / "c.safetensors").string();
  write_safetensors(good, sample());
  std::ifstream in(good, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  expect_rejected("", "empty.safetensors");
  expect_rejected(bytes.substr(0, 5), "short.safetensors");
  expect_rejected(bytes.substr(0, bytes.size() - 3), "truncated.safetensors");
  std::string huge = bytes;
  huge[7] = 0x7f;  // header length far beyond the file
  expect_rejected(huge, "huge-header.safetensors");
  std::string garbage = bytes;
  garbage[8] = 'x';  // header no longer JSON
  expect_rejected(garbage, "garbage.safetensors");
  EXPECT_THROW(read_safetensors((temp_dir() / "missing.safetensors").string()), Error);
}

// A safetensors file whose header says `entries` (JSON members, no metadata) over `data_bytes`
// bytes of data.
std::string forged(const std::string& entries, std::size_t data_bytes) {
  std::string header = "{" + entries + "}";
  while (header.size() % 8 != 0) header.push_back(' ');
  std::string b(8, '\0');
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return b + header + std::string(data_bytes, '\x01');
}


// Headers that lie about the data: offsets past it, reversed or overlapping, a shape or dtype
// that does not match the byte count.
TEST(Safetensors, RejectsLyingHeaders) {
  const std::string a = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  ASSERT_NO_THROW(read_safetensors([&] {
    const auto p = (temp_dir() / "forged-good.safetensors").string();
    std::ofstream(p, std::ios::binary) << forged(a + R"(,"b":{"dtype":"I8","shape":[4],"data_offsets":[8,12]})", 12);
    return p;
  }()));
  expect_rejected_for(forged(a + R"(,"b":{"dtype":"I8","shape":[4],"data_offsets":[8,12]})", 11),
                      "offsets-past-end.safetensors", "reach past the 11 bytes of data");
  expect_rejected_for(forged(R"("a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]})", 8),
                      "offsets-reversed.safetensors", "begin <= end");
  expect_rejected_for(forged(a + R"(,"b":{"dtype":"I8","shape":[4],"data_offsets":[6,10]})", 12),
                      "offsets-overlap.safetensors", "'a' and 'b' overlap");
  expect_rejected_for(forged(R"("a":{"dtype":"F32","shape":[6],"data_offsets":[0,24]},)"
                             R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]})", 24),
                      "offsets-inside.safetensors", "'a' and 'b' overlap");
  expect_rejected_for(forged(R"("a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]})", 8),
                      "shape.safetensors", "F32 [3] is 12 bytes, but its data_offsets span 8");
  expect_rejected_for(forged(R"("a":{"dtype":"I8","shape":[2],"data_offsets":[0,8]})", 8),
                      "dtype.safetensors", "I8 [2] is 2 bytes, but its data_offsets span 8");
  expect_rejected_for(forged(R"("a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]})", 8),
                      "dtype-unknown.safetensors", "unsupported tensor dtype 'F64'");
  expect_rejected_for(forged(R"("a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]})", 8),
                      "negative.safetensors", "negative dimension");
  // 2^62 · 4 elements · 4 bytes wraps to 0 in 64 bits, which empty data_offsets would match.
  expect_rejected_for(forged(R"("a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,0]})", 0),
                      "shape-wraps.safetensors", "more than 2^64 bytes");
}

// A write that fails leaves the previous file whole and no temporary file, and names the file.
TEST(AtomicWrite, FailureKeepsThePreviousFile) {
  const auto path = (temp_dir() / "kept.json").string();
  write_file_atomic(path, "first\n");
  fs::create_directories(path + ".tmp");  // the temporary file cannot be created
  try {
    write_file_atomic(path, "second\n");
    FAIL() << "the write did not fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": cannot write"), std::string::npos) << e.what();
  }
  fs::remove(path + ".tmp");
  std::ifstream in(path);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), {}), "first\n");
}

TEST(AtomicWrite, ReplacesWholeFile) {
  const auto path = (temp_dir() / "t.json").string();
  write_file_atomic(path, "first version, longer\n");
  write_file_atomic(path, "second\n");
  std::ifstream in(path);
  std::string s((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(s, "second\n");
  EXPECT_THROW(write_file_atomic("/nonexistent-dir/x.json", "x"), Error);
}

}  // namespace
}  // namespace zt::run
