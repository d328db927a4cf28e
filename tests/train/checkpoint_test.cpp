// safetensors round trip, atomic writes, and rejection of corrupt files.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "zotrain/core/error.hpp"
#include "zotrain/train/checkpoint.hpp"

namespace zt::train {
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

void expect_rejected(const std::string& bytes, const std::string& name) {
  const auto path = (temp_dir() / name).string();
  std::ofstream(path, std::ios::binary) << bytes;
  try {
    read_safetensors(path);
    FAIL() << name << " was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
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
}  // namespace zt::train
