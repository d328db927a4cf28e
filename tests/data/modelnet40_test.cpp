#include "zotrain/data/modelnet40.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "../support.hpp"
#include "h5_fixtures.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/data/synthetic_points.hpp"

namespace zt::data {
namespace {

using testing::H5Set;
using testing::ply_sets;
using testing::TempDir;
using testing::write_h5;
using zt::test::expect_error;

// A directory with one valid test file, so each case varies only the training file.
struct Root {
  TempDir dir{"mn40"};
  Root() { EXPECT_TRUE(write_h5(path("ply_data_test0.h5"), ply_sets(2, 8))); }
  std::string path(const std::string& name) const { return dir.path() + "/" + name; }
  std::string train(const std::vector<H5Set>& sets, const std::string& name = "ply_data_train0.h5") {
    const std::string p = path(name);
    EXPECT_TRUE(write_h5(p, sets));
    return p;
  }
  // Loads with both readers — whole splits in memory and read by batch from the files
  // (open_modelnet40) — which must agree on every value or throw the same error.
  PointCloudDataset load(int train_limit = 0) const {
    std::string streamed_error;
    PointFiles files;
    try {
      files = open_modelnet40(dir.path(), train_limit, 0);
    } catch (const Error& e) {
      streamed_error = e.what();
    }
    try {
      PointCloudDataset ds = load_modelnet40(dir.path(), train_limit, 0);
      EXPECT_EQ(streamed_error, "");
      expect_same(files.train, ds.train);
      expect_same(files.test, ds.test);
      return ds;
    } catch (const Error& e) {
      EXPECT_EQ(streamed_error, e.what());
      throw;
    }
  }
  static void expect_same(const PointSplit& s, const PointCloudSet& set) {
    if (!s.samples) return;
    ASSERT_EQ(s.samples->count(), set.count);
    ASSERT_EQ(s.stored_points, set.stored_points);
    EXPECT_LE(s.samples->resident_bytes(), set.labels.size() + 8 * sizeof(int));  // no points
    std::vector<std::int32_t> idx(static_cast<std::size_t>(set.count));
    for (int i = 0; i < set.count; ++i) idx[static_cast<std::size_t>(i)] = set.count - 1 - i;
    std::vector<float> points(set.points.size());
    std::vector<std::uint8_t> labels(idx.size());
    s.samples->read(idx.data(), set.count, points.data(), labels.data());
    const std::size_t per = static_cast<std::size_t>(set.stored_points) * 3;
    for (std::size_t k = 0; k < idx.size(); ++k) {
      const auto i = static_cast<std::size_t>(idx[k]);
      EXPECT_EQ(labels[k], set.labels[i]);
      EXPECT_TRUE(std::equal(points.begin() + static_cast<std::ptrdiff_t>(k * per),
                             points.begin() + static_cast<std::ptrdiff_t>((k + 1) * per),
                             set.points.begin() + static_cast<std::ptrdiff_t>(i * per)));
    }
  }
};

TEST(ModelNet40Test, RoundTripAgainstGenerator) {
  TempDir dir("mn40-synth");
  SyntheticOptions opt;
  opt.train_per_class = 3;
  opt.test_per_class = 2;
  opt.points = 64;
  opt.seed = 11;
  write_synthetic_modelnet(dir.path(), opt);
  const PointCloudDataset ds = load_modelnet40(dir.path(), 0, 0);
  EXPECT_EQ(ds.classes, 40);
  for (const bool train : {true, false}) {
    const PointCloudSet& set = train ? ds.train : ds.test;
    ASSERT_EQ(set.count, opt.classes * (train ? opt.train_per_class : opt.test_per_class));
    ASSERT_EQ(set.stored_points, opt.points);
    EXPECT_EQ(set.bytes(), static_cast<std::size_t>(set.count) * (opt.points * 3 * 4 + 1));
    std::vector<float> want(static_cast<std::size_t>(opt.points) * 3);
    for (int i = 0; i < set.count; ++i) {
      std::uint8_t label = 255;
      synthetic_sample(opt, train, i, want.data(), &label);
      EXPECT_EQ(set.labels[static_cast<std::size_t>(i)], label);
      const float* got = set.points.data() + static_cast<std::size_t>(i) * want.size();
      for (std::size_t k = 0; k < want.size(); ++k) ASSERT_EQ(got[k], want[k]) << i << " " << k;
    }
  }
  EXPECT_EQ(ds.bytes(), ds.train.bytes() + ds.test.bytes());
}

TEST(ModelNet40Test, ConcatenatesFilesSortedByNameAndLimits) {
  Root r;
  // Written out of order; the loader sorts by name.
  r.train(ply_sets(4, 8, 100.0, 10), "ply_data_train1.h5");
  r.train(ply_sets(3, 8, 0.0, 0), "ply_data_train0.h5");
  const PointCloudDataset all = r.load();
  ASSERT_EQ(all.train.count, 7);
  EXPECT_EQ(all.train.stored_points, 8);
  EXPECT_EQ(all.train.labels, (std::vector<std::uint8_t>{0, 1, 2, 10, 11, 12, 13}));
  EXPECT_FLOAT_EQ(all.train.points[0], 0.f);
  EXPECT_FLOAT_EQ(all.train.points[3 * 8 * 3], 100.f);  // shape 3 = file 1's shape 0
  EXPECT_FLOAT_EQ(all.train.points[3 * 8 * 3 + 5 * 3 + 2], 100.f + 0.005f + 0.2f);
  EXPECT_EQ(all.test.count, 2);

  const PointCloudDataset some = r.load(5);  // 3 from file 0, the first 2 of file 1
  ASSERT_EQ(some.train.count, 5);
  EXPECT_EQ(some.train.labels, (std::vector<std::uint8_t>{0, 1, 2, 10, 11}));
  EXPECT_EQ(some.train.points.size(), 5u * 8 * 3);
  EXPECT_EQ(std::vector<float>(all.train.points.begin(), all.train.points.begin() + 5 * 8 * 3),
            some.train.points);
  EXPECT_EQ(r.load(2).train.count, 2);
  EXPECT_EQ(r.load(100).train.count, 7);
}

TEST(ModelNet40Test, AcceptsOtherFloatAndIntegerTypesAndRank1Labels) {
  Root r;
  std::vector<H5Set> sets = ply_sets(3, 8);
  sets[0].file_type = H5T_IEEE_F64BE;  // converted to float32 by HDF5
  sets[1] = {"label", {3}, H5T_STD_I64LE, {39, 0, 7}};
  r.train(sets);
  const PointCloudDataset ds = r.load();
  EXPECT_EQ(ds.train.labels, (std::vector<std::uint8_t>{39, 0, 7}));
  EXPECT_FLOAT_EQ(ds.train.points[2 * 8 * 3 + 4 * 3 + 1], 2.f + 0.004f + 0.1f);
}

TEST(ModelNet40Test, MissingFilesAndDirectory) {
  TempDir dir("mn40-empty");
  expect_error([&] { load_modelnet40(dir.path(), 0, 0); },
               {"no ply_data_train*.h5 in " + dir.path()});
  ASSERT_TRUE(write_h5(dir.path() + "/ply_data_train0.h5", ply_sets(2, 4)));
  expect_error([&] { load_modelnet40(dir.path(), 0, 0); },
               {"no ply_data_test*.h5 in " + dir.path()});
  // Names that only look similar are not data files.
  ASSERT_TRUE(write_h5(dir.path() + "/ply_data_test0.h5.tmp", ply_sets(2, 4)));
  ASSERT_TRUE(write_h5(dir.path() + "/test_ply_data_test0.h5", ply_sets(2, 4)));
  expect_error([&] { load_modelnet40(dir.path(), 0, 0); }, {"no ply_data_test*.h5"});
  expect_error([&] { load_modelnet40(dir.path() + "/nope", 0, 0); },
               {dir.path() + "/nope", "data directory not found"});
}

TEST(ModelNet40Test, TruncatedFile) {
  Root r;
  const std::string p = r.train(ply_sets(6, 64));
  std::filesystem::resize_file(p, std::filesystem::file_size(p) / 2);
  expect_error([&] { r.load(); }, {p, "cannot open as HDF5", "truncated"});
  std::filesystem::resize_file(p, 100);  // inside the superblock
  expect_error([&] { r.load(); }, {p});
  std::filesystem::resize_file(p, 0);
  expect_error([&] { r.load(); }, {p, "not an HDF5 file"});
}

TEST(ModelNet40Test, TextFileNamedH5) {
  Root r;
  const std::string p = r.path("ply_data_train0.h5");
  std::ofstream(p) << "shape,x,y,z\n0,0.1,0.2,0.3\n";
  expect_error([&] { r.load(); }, {p, "not an HDF5 file"});
}

TEST(ModelNet40Test, MissingDatasets) {
  Root r;
  const std::string p = r.train({ply_sets(3, 4)[0]});
  expect_error([&] { r.load(); }, {p, "no dataset 'label'", "[n] or [n, 1]"});
  r.train({ply_sets(3, 4)[1]});
  expect_error([&] { r.load(); }, {p, "no dataset 'data'", "[n, P, 3]"});
}

TEST(ModelNet40Test, WrongDataShape) {
  Root r;
  std::vector<H5Set> sets = ply_sets(4, 8);
  sets[0].dims = {4, 24};  // rank 2
  const std::string p = r.train(sets);
  expect_error([&] { r.load(); }, {p, "'data' has rank 2 [4, 24]", "expected rank 3"});
  sets[0].dims = {4, 12, 2};  // two coordinates per point
  r.train(sets);
  expect_error([&] { r.load(); }, {p, "'data' has shape [4, 12, 2]", "[n, P, 3]"});
  sets[0].dims = {4, 0, 3};
  sets[0].values.clear();
  r.train(sets);
  expect_error([&] { r.load(); }, {p, "[4, 0, 3]", "P >= 1"});
  sets = ply_sets(0, 8);
  r.train(sets);
  expect_error([&] { r.load(); }, {p, "holds no shapes"});
}

TEST(ModelNet40Test, WrongTypes) {
  Root r;
  std::vector<H5Set> sets = ply_sets(2, 4);
  sets[0].file_type = H5T_STD_I16LE;
  const std::string p = r.train(sets);
  expect_error([&] { r.load(); }, {p, "'data' holds integer values", "float32"});
  sets = ply_sets(2, 4);
  sets[1].file_type = H5T_IEEE_F32LE;
  r.train(sets);
  expect_error([&] { r.load(); }, {p, "'label' holds floating-point values", "integer"});
}

TEST(ModelNet40Test, WrongLabelShapeOrCount) {
  Root r;
  std::vector<H5Set> sets = ply_sets(4, 8);
  sets[1] = {"label", {4, 2}, H5T_STD_U8LE, {0, 0, 1, 1, 2, 2, 3, 3}};
  const std::string p = r.train(sets);
  expect_error([&] { r.load(); }, {p, "'label' has shape [4, 2]", "[n] or [n, 1]"});
  sets[1] = {"label", {5, 1}, H5T_STD_U8LE, {0, 1, 2, 3, 4}};
  r.train(sets);
  expect_error([&] { r.load(); }, {p, "'data' holds 4 shapes but 'label' holds 5 labels"});
}

TEST(ModelNet40Test, LabelOutOfRange) {
  Root r;
  std::vector<H5Set> sets = ply_sets(4, 8);
  sets[1].values[2] = 40;
  const std::string p = r.train(sets);
  expect_error([&] { r.load(); }, {p, "label 40 at index 2 is out of range, expected 0..39"});
  sets[1] = {"label", {4}, H5T_STD_I8LE, {0, 1, -1, 3}};
  r.train(sets);
  expect_error([&] { r.load(); }, {p, "label -1 at index 2"});
  // A value beyond int saturates in HDF5's conversion and is still rejected.
  sets[1] = {"label", {4}, H5T_STD_U64LE, {0, 1, 2, 1e12}};
  r.train(sets);
  expect_error([&] { r.load(); }, {p, "at index 3 is out of range"});
  // Only the samples within the limit are value-checked.
  EXPECT_EQ(r.load(3).train.count, 3);
}

TEST(ModelNet40Test, NonFiniteCoordinate) {
  Root r;
  std::vector<H5Set> sets = ply_sets(3, 8);
  sets[0].values[(1 * 8 + 5) * 3 + 2] = std::numeric_limits<double>::quiet_NaN();
  const std::string p = r.train(sets);
  expect_error([&] { r.load(); }, {p, "shape 1 point 5 has a non-finite coordinate (nan)"});
  sets = ply_sets(3, 8);
  sets[0].values[(2 * 8 + 0) * 3] = -std::numeric_limits<double>::infinity();
  r.train(sets);
  expect_error([&] { r.load(); }, {p, "shape 2 point 0", "(inf)"});
}

TEST(ModelNet40Test, DifferentPointCounts) {
  Root r;
  const std::string p0 = r.train(ply_sets(2, 8), "ply_data_train0.h5");
  const std::string p1 = r.train(ply_sets(2, 6), "ply_data_train1.h5");
  expect_error([&] { r.load(); }, {p1, "have 6 points but " + p0 + " has 8"});
  std::filesystem::remove(p1);
  EXPECT_EQ(r.load().train.count, 2);
  ASSERT_TRUE(write_h5(r.path("ply_data_test0.h5"), ply_sets(2, 16)));
  expect_error([&] { r.load(); },
               {r.path("ply_data_test0.h5"), "16 points but the training files' have 8"});
}

// tests/fuzz/regressions/modelnet40: a 1.7 KB file whose chunked 'data' [300000, 1000, 3] and
// 'label' were never written. HDF5 reads fill values for them, so the loader used to allocate
// 3.6 GB (the fuzz harness ran out of memory); now it is refused before anything is allocated.
TEST(ModelNet40Test, ValuesNeverWrittenAreRefusedBeforeAllocating) {
  Root r;
  const std::string p = r.path("ply_data_train0.h5");
  std::filesystem::copy_file(
      std::string(ZT_SOURCE_DIR) + "/tests/fuzz/regressions/modelnet40/unwritten-chunks-300000x1000", p);
  expect_error([&] { r.load(); }, {p, "'data' has values that were never written"});
  // The same written only in part: one chunk of two.
  {
    const hid_t file = H5Fcreate(p.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t dims[3] = {2, 4, 3}, chunk[3] = {1, 4, 3}, ldims[1] = {2};
    const hsize_t start[3] = {0, 0, 0};
    const hid_t space = H5Screate_simple(3, dims, nullptr);
    const hid_t lspace = H5Screate_simple(1, ldims, nullptr);
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 3, chunk);
    const hid_t ds = H5Dcreate2(file, "data", H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    const hid_t ls = H5Dcreate2(file, "label", H5T_STD_U8LE, lspace, H5P_DEFAULT, H5P_DEFAULT,
                                H5P_DEFAULT);
    const float one[12] = {};
    const std::uint8_t labels[2] = {1, 2};
    const hid_t mspace = H5Screate_simple(3, chunk, nullptr);
    H5Sselect_hyperslab(space, H5S_SELECT_SET, start, nullptr, chunk, nullptr);
    EXPECT_GE(H5Dwrite(ds, H5T_NATIVE_FLOAT, mspace, space, H5P_DEFAULT, one), 0);
    EXPECT_GE(H5Dwrite(ls, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, labels), 0);
    H5Sclose(mspace);
    H5Dclose(ls);
    H5Dclose(ds);
    H5Pclose(dcpl);
    H5Sclose(lspace);
    H5Sclose(space);
    H5Fclose(file);
  }
  expect_error([&] { r.load(); }, {p, "'data' has values that were never written"});
}

// Loads tests/fuzz/regressions/modelnet40/<name> as a training file: refused, with an error
// naming the file and holding each of `parts`.
void expect_regression_refused(const char* name, std::vector<std::string> parts) {
  Root r;
  const std::string p = r.path("ply_data_train0.h5");
  std::filesystem::copy_file(
      std::string(ZT_SOURCE_DIR) + "/tests/fuzz/regressions/modelnet40/" + name, p);
  parts.insert(parts.begin(), p);
  expect_error([&] { r.load(); }, parts);
}

// The same, refused before libhdf5 reads the root group's symbol table.
void expect_root_group_refused(const char* name) {
  expect_regression_refused(name, {"corrupt HDF5 file", "root group's symbol table"});
}

// A file whose root symbol-table entry points at bytes that are not a local heap. libhdf5 1.10
// reads it unchecked and H5Lexists crashes (SIGSEGV in H5F__accum_read); the loader checks the
// root group's B-tree and heap first.
TEST(ModelNet40Test, CorruptRootSymbolTableIsRefusedBeforeHdf5ReadsIt) {
  expect_root_group_refused("root-heap-not-a-heap-segv");
}

// The same crash with the symbol-table entry's 4 reserved bytes (after its 4-byte cache type)
// not zero: HDF5 ignores them and still reads the cached heap, so the check must too.
TEST(ModelNet40Test, CorruptRootSymbolTableWithReservedBytesSetIsRefused) {
  expect_root_group_refused("root-entry-reserved-bytes-segv");
}

// No cached addresses in the superblock: the root group's object header names the heap, which
// claims a 2.98 GB data segment in a 2.5 KB file (HDF5 would allocate it).
TEST(ModelNet40Test, RootHeapLargerThanTheFileIsRefused) {
  expect_root_group_refused("root-heap-larger-than-file-oom");
}

// The entry caches a valid B-tree and heap, but the root object header's symbol-table message,
// which HDF5 looks names up through, gives the heap's address as undefined (all ones): H5Lexists
// read through a null pointer (a SIGSEGV in a normal build too).
TEST(ModelNet40Test, RootHeaderMessageIsCheckedWhenTheEntryCachesTheTable) {
  expect_root_group_refused("root-header-heap-undefined-segv");
}

// A 1 KB file whose superblock's driver information block claims 2.3 GB (a CI fuzz smoke run
// found it): libhdf5 allocated and filled that much inside H5Fopen (malloc(2304926076) in the
// fuzz report) before it gave up.
TEST(ModelNet40Test, DriverInfoBlockLargerThanTheFileIsRefused) {
  expect_regression_refused("driver-info-larger-than-file-oom",
                            {"corrupt HDF5 file",
                             "driver information block (byte 255, 2304926076 bytes)",
                             "does not fit in the file (1133 bytes)"});
}

// An object header whose block of messages claims more bytes than the file holds (2 GB here):
// libhdf5 allocates a block's stated length before reading it, so the check refuses it first,
// naming the header. The root group's header is at the address of the superblock's root entry
// (version 0: bytes 64-71); its block length is bytes 8-11 of the header.
TEST(ModelNet40Test, ObjectHeaderBlockLargerThanTheFileIsRefused) {
  Root r;
  const std::string p = r.train(ply_sets(2, 8));
  std::vector<std::uint8_t> b = testing::file_bytes(p);
  ASSERT_GT(b.size(), 72u);
  ASSERT_EQ(b[8], 0) << "expected a version 0 superblock";
  std::uint64_t header = 0;
  for (int i = 7; i >= 0; --i) header = (header << 8) | b[64 + i];
  ASSERT_LT(header + 12, b.size());
  ASSERT_EQ(b[header], 1) << "expected a version 1 object header";
  const std::uint32_t huge = 0x7ffffff0u;
  for (int i = 0; i < 4; ++i) b[header + 8 + i] = std::uint8_t(huge >> (8 * i));
  std::ofstream(p, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
  expect_error([&] { r.load(); },
               {p, "corrupt HDF5 file: the object header at byte " + std::to_string(header),
                "a message block of 2147483632 bytes", "does not fit in the file"});
}

// Writes ply_sets(2, 8) with 'data' chunked (chunk dims `chunk`, extendible in its first
// dimension) through the filters `filters` sets on its dcpl; the label stays contiguous.
template <class Filters>
std::string write_chunked(const Root& r, std::vector<hsize_t> chunk, Filters filters) {
  const std::string p = r.path("ply_data_train0.h5");
  const std::vector<H5Set> sets = ply_sets(2, 8);
  const hid_t file = H5Fcreate(p.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hsize_t max[3] = {H5S_UNLIMITED, 8, 3};  // a chunk may then be longer than the shape
  const hid_t space = H5Screate_simple(3, sets[0].dims.data(), max);
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  EXPECT_GE(H5Pset_chunk(dcpl, 3, chunk.data()), 0);
  filters(dcpl);
  const hid_t ds = H5Dcreate2(file, "data", H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  EXPECT_GE(
      H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, sets[0].values.data()), 0);
  H5Dclose(ds);
  H5Pclose(dcpl);
  H5Sclose(space);
  H5Fclose(file);
  const hid_t f = H5Fopen(p.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  const hid_t lspace = H5Screate_simple(2, sets[1].dims.data(), nullptr);
  const hid_t ls =
      H5Dcreate2(f, "label", H5T_STD_U8LE, lspace, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  EXPECT_GE(
      H5Dwrite(ls, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, sets[1].values.data()), 0);
  H5Dclose(ls);
  H5Sclose(lspace);
  H5Fclose(f);
  return p;
}

// Deflate and shuffle, with chunks that divide the shape and chunks that overhang it (a whole
// chunk is stored either way): loaded as written.
TEST(ModelNet40Test, DeflatedAndShuffledChunksLoad) {
  for (const std::vector<hsize_t>& chunk : {std::vector<hsize_t>{1, 8, 3}, {3, 5, 3}}) {
    Root r;
    write_chunked(r, chunk, [](hid_t dcpl) {
      EXPECT_GE(H5Pset_shuffle(dcpl), 0);
      EXPECT_GE(H5Pset_deflate(dcpl, 6), 0);
    });
    const PointCloudDataset ds = r.load();
    ASSERT_EQ(ds.train.count, 2);
    const std::vector<H5Set> want = ply_sets(2, 8);
    for (std::size_t i = 0; i < want[0].values.size(); ++i)
      ASSERT_EQ(ds.train.points[i], static_cast<float>(want[0].values[i])) << i;
  }
}

// A deflated chunk must inflate to exactly one chunk: libhdf5 1.10 reads freed memory (and a
// normal build crashes) when it inflates to fewer bytes. Chunks written raw by H5Dwrite_chunk.
TEST(ModelNet40Test, DeflatedChunkOfTheWrongSizeIsRefused) {
  struct Case {
    std::size_t bytes;  // what chunk 1 (of 1 x 8 x 3 floats = 96 bytes) inflates to; 0 = not zlib
    std::string why;
  };
  for (const Case& c :
       {Case{72, "(72 bytes)"}, Case{120, "(more bytes)"}, Case{0, "(corrupt deflate data)"}}) {
    Root r;
    const std::string p = write_chunked(r, {1, 8, 3}, [](hid_t dcpl) { H5Pset_deflate(dcpl, 6); });
    std::vector<std::uint8_t> raw(c.bytes, 7), z(256, 0x5a);
    uLongf zn = z.size();
    if (c.bytes > 0) ASSERT_EQ(compress(z.data(), &zn, raw.data(), raw.size()), Z_OK);
    else zn = 40;
    const hid_t f = H5Fopen(p.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hid_t ds = H5Dopen2(f, "data", H5P_DEFAULT);
    const hsize_t offset[3] = {1, 0, 0};
    ASSERT_GE(H5Dwrite_chunk(ds, H5P_DEFAULT, 0, offset, zn, z.data()), 0);
    H5Dclose(ds);
    H5Fclose(f);
    expect_error([&] { r.load(); },
                 {p, "chunk 1 of 'data' does not inflate to its 96 bytes " + c.why});
  }
}

// tests/fuzz/regressions/modelnet40: chunks declared 1 x 6 x 4099 floats (98,376 bytes) over a
// 2 x 6 x 3 dataset, each an 83-byte deflate stream of 72 bytes; a normal build crashed in H5Dread.
TEST(ModelNet40Test, ChunkLargerThanItsStoredBytesCanHoldIsRefused) {
  expect_regression_refused(
      "chunk-inflates-short-uaf",
      {"chunk 0 of 'data' stores 83 bytes (deflated) for a chunk of 98376 bytes"});
}

// tests/fuzz/regressions/modelnet40: 'data' [2, 6, 3] with compact storage, a deflate filter
// (which HDF5 applies to chunked storage only) and no stored bytes; H5Dread copied from a null
// pointer (a SIGSEGV in a normal build too).
TEST(ModelNet40Test, UnchunkedDatasetMustStoreEveryByteWhateverItsFilters) {
  expect_regression_refused("compact-with-filter-no-bytes-segv",
                            {"'data' needs 144 bytes for its shape but 0 bytes are stored"});
}

TEST(ModelNet40Test, FiltersOtherThanDeflateAndShuffleAreRefused) {
  Root r;
  const std::string p = write_chunked(r, {1, 8, 3}, [](hid_t dcpl) { H5Pset_fletcher32(dcpl); });
  expect_error([&] { r.load(); },
               {p, "'data' is stored with HDF5 filter 3",
                "expected no filter, deflate (gzip) or shuffle"});
}

// tests/fuzz/regressions/modelnet40: the root group's B-tree leaf names an undefined address
// (all ones) as its symbol-table node; H5Lexists read it through a null pointer (a SIGSEGV in a
// normal build too).
TEST(ModelNet40Test, RootBTreeChildThatIsNotASymbolTableNodeIsRefused) {
  expect_regression_refused("btree-child-undefined-segv",
                            {"corrupt HDF5 file: the root group's symbol-table node at byte "
                             "18446744073709551615 (child of the B-tree node at byte 136) is "
                             "not valid"});
}

// tests/fuzz/regressions/modelnet40: a message of 'data''s object header is flagged as kept in a
// shared-message table, which a version 0 superblock cannot point at; H5Dopen2 read the table at
// an undefined address (a SIGSEGV in a normal build too).
TEST(ModelNet40Test, SharedMessageWithoutASharedMessageTableIsRefused) {
  expect_regression_refused("dataset-message-in-missing-shared-table-segv",
                            {"corrupt HDF5 file: 'data' (object header at byte",
                             "in a shared-message table, which this file cannot have"});
}

TEST(ModelNet40Test, ScalarDataset) {
  Root r;
  const std::string p = r.path("ply_data_train0.h5");
  {
    const hid_t file = H5Fcreate(p.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hid_t space = H5Screate(H5S_SCALAR);
    const hid_t ds = H5Dcreate2(file, "data", H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT,
                                H5P_DEFAULT);
    H5Dclose(ds);
    H5Sclose(space);
    H5Fclose(file);
  }
  expect_error([&] { r.load(); }, {p, "'data' is a scalar or empty dataset"});
}

}  // namespace
}  // namespace zt::data
