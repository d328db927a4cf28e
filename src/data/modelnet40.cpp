#include "zotrain/data/modelnet40.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <mutex>
#include <system_error>
#include <utility>
#include <vector>

#include "hdf5_precheck.hpp"
#include "hdf5_util.hpp"
#include "modelnet40_internal.hpp"
#include "zotrain/core/error.hpp"

namespace zt::data {
namespace {

// Guards against absurd sizes (a corrupt or foreign file): the release holds 2048 points per
// shape and 12,311 shapes (~300 MB); a split is refused beyond 4 GiB of coordinates.
constexpr hsize_t kMaxPoints = hsize_t{1} << 20;
constexpr std::uint64_t kMaxSplitBytes = std::uint64_t{4} << 30;

constexpr const char* kDataWant = "float32 [n, P, 3] (n shapes of P points, x y z)";
constexpr const char* kLabelWant = "integer [n] or [n, 1] (class 0..39)";

using modelnet40_detail::check_stored;
using modelnet40_detail::fail;
using modelnet40_detail::with_detail;

std::string dims_text(const std::vector<hsize_t>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

const char* class_text(H5T_class_t c) {
  switch (c) {
    case H5T_INTEGER: return "integer";
    case H5T_FLOAT: return "floating-point";
    case H5T_STRING: return "string";
    case H5T_BITFIELD: return "bitfield";
    case H5T_OPAQUE: return "opaque";
    case H5T_COMPOUND: return "compound";
    case H5T_REFERENCE: return "reference";
    case H5T_ENUM: return "enum";
    case H5T_VLEN: return "variable-length";
    case H5T_ARRAY: return "array";
    default: return "unknown-type";
  }
}

h5::Id open_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) fail(path, "not found");
  if (!fs::is_regular_file(path, ec)) fail(path, "not a regular file, expected an HDF5 file");
  const htri_t is_h5 = H5Fis_hdf5(path.c_str());
  if (is_h5 == 0) {
    fail(path, "not an HDF5 file (no HDF5 signature), expected a ModelNet40 ply_data_*.h5 file");
  }
  if (is_h5 < 0) fail(path, with_detail("cannot be read as an HDF5 file"));
  h5::check_structure(path, {"data", "label"}, "a ModelNet40 ply_data_*.h5 file");
  // Read-only data files: no locking (it fails on some network file systems).
  h5::Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  if (fapl) H5Pset_file_locking(fapl.get(), false, true);
  h5::Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl ? fapl.get() : H5P_DEFAULT), H5Fclose);
  if (!file) fail(path, with_detail("cannot open as HDF5 (corrupt or truncated file)"));
  return file;
}

h5::Id open_dataset(const h5::Id& file, const std::string& path, const char* name,
                    const char* want) {
  if (H5Lexists(file.get(), name, H5P_DEFAULT) <= 0) {
    fail(path, std::string("no dataset '") + name + "', expected " + want);
  }
  h5::Id ds(H5Dopen2(file.get(), name, H5P_DEFAULT), H5Dclose);
  if (!ds) fail(path, with_detail(std::string("'") + name + "' is not a readable dataset"));
  return ds;
}

std::vector<hsize_t> dataset_dims(const h5::Id& ds, const std::string& path, const char* name,
                                  const char* want) {
  h5::Id space(H5Dget_space(ds.get()), H5Sclose);
  if (!space) fail(path, with_detail(std::string("cannot read the shape of '") + name + "'"));
  if (H5Sget_simple_extent_type(space.get()) != H5S_SIMPLE) {
    fail(path, std::string("'") + name + "' is a scalar or empty dataset, expected " + want);
  }
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) fail(path, with_detail(std::string("cannot read the rank of '") + name + "'"));
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  if (rank > 0 && H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0) {
    fail(path, with_detail(std::string("cannot read the shape of '") + name + "'"));
  }
  return dims;
}

H5T_class_t dataset_class(const h5::Id& ds, const std::string& path, const char* name) {
  h5::Id type(H5Dget_type(ds.get()), H5Tclose);
  if (!type) fail(path, with_detail(std::string("cannot read the type of '") + name + "'"));
  return H5Tget_class(type.get());
}

// Whether a dataset's floating-point type is IEEE binary32 or binary64 (either byte order).
// libhdf5 converts other layouts (a sign bit inside the mantissa, odd sizes, which a corrupt
// file can declare) differently depending on the selection it reads, so two reads of the same
// shape can disagree; ModelNet40's files hold float32.
bool ieee_float(const h5::Id& ds) {
  h5::Id type(H5Dget_type(ds.get()), H5Tclose);
  if (!type) return false;
  for (hid_t t : {H5T_IEEE_F32LE, H5T_IEEE_F32BE, H5T_IEEE_F64LE, H5T_IEEE_F64BE})
    if (H5Tequal(type.get(), t) > 0) return true;
  return false;
}

// One file's validated metadata.
struct FileInfo {
  std::string path;
  int count = 0, points = 0;
};

FileInfo inspect(const std::string& path) {
  const h5::Id file = open_file(path);
  const h5::Id data = open_dataset(file, path, "data", kDataWant);
  const std::vector<hsize_t> d = dataset_dims(data, path, "data", kDataWant);
  if (d.size() != 3) {
    fail(path, "'data' has rank " + std::to_string(d.size()) + " " + dims_text(d) +
                   ", expected rank 3: " + kDataWant);
  }
  if (d[2] != 3 || d[1] < 1) {
    fail(path, "'data' has shape " + dims_text(d) + ", expected " + kDataWant + " with P >= 1");
  }
  if (d[0] < 1) fail(path, "'data' holds no shapes (shape " + dims_text(d) + ")");
  if (d[1] > kMaxPoints || d[0] > static_cast<hsize_t>(std::numeric_limits<int>::max())) {
    fail(path, "'data' has absurd shape " + dims_text(d) + ", expected at most " +
                   std::to_string(kMaxPoints) + " points per shape");
  }
  const H5T_class_t dc = dataset_class(data, path, "data");
  if (dc != H5T_FLOAT) {
    fail(path, std::string("'data' holds ") + class_text(dc) + " values, expected " + kDataWant);
  }
  if (!ieee_float(data)) {
    fail(path, "'data' holds floating-point values in a layout that is not IEEE binary32 or "
               "binary64, expected " + std::string(kDataWant));
  }

  const h5::Id label = open_dataset(file, path, "label", kLabelWant);
  const std::vector<hsize_t> l = dataset_dims(label, path, "label", kLabelWant);
  if (!(l.size() == 1 || (l.size() == 2 && l[1] == 1))) {
    fail(path, "'label' has shape " + dims_text(l) + ", expected " + kLabelWant);
  }
  const H5T_class_t lc = dataset_class(label, path, "label");
  if (lc != H5T_INTEGER) {
    fail(path, std::string("'label' holds ") + class_text(lc) + " values, expected " + kLabelWant);
  }
  if (l[0] != d[0]) {
    fail(path, "'data' holds " + std::to_string(d[0]) + " shapes but 'label' holds " +
                   std::to_string(l[0]) + " labels, expected the same count");
  }
  check_stored(data, path, "data", d);
  check_stored(label, path, "label", l);
  return {path, static_cast<int>(d[0]), static_cast<int>(d[1])};
}

// One validated file, open: its `data` and `label` datasets.
struct OpenFile {
  FileInfo info;
  h5::Id file, data, label;
  explicit OpenFile(FileInfo i)
      : info(std::move(i)),
        file(open_file(info.path)),
        data(open_dataset(file, info.path, "data", kDataWant)),
        label(open_dataset(file, info.path, "label", kLabelWant)) {}
};

// Reads shapes [first, first + k) of `data` into points [k, P, 3].
void read_points(const OpenFile& f, int first, int k, float* points) {
  const hsize_t start[3] = {static_cast<hsize_t>(first), 0, 0};
  const hsize_t count[3] = {static_cast<hsize_t>(k), static_cast<hsize_t>(f.info.points), 3};
  h5::Id fspace(H5Dget_space(f.data.get()), H5Sclose);
  h5::Id mspace(H5Screate_simple(3, count, nullptr), H5Sclose);
  if (!fspace || !mspace ||
      H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, start, nullptr, count, nullptr) < 0 ||
      H5Dread(f.data.get(), H5T_NATIVE_FLOAT, mspace.get(), fspace.get(), H5P_DEFAULT, points) <
          0) {
    fail(f.info.path, with_detail("cannot read 'data'"));
  }
}

// Reads and checks the first `k` labels of a validated file.
void read_labels(const OpenFile& f, int k, std::uint8_t* labels) {
  const std::string& path = f.info.path;
  std::vector<int> values(static_cast<std::size_t>(k));
  h5::Id fspace(H5Dget_space(f.label.get()), H5Sclose);
  const int rank = fspace ? H5Sget_simple_extent_ndims(fspace.get()) : -1;
  const hsize_t start[2] = {0, 0};
  const hsize_t count[2] = {static_cast<hsize_t>(k), 1};
  h5::Id mspace(H5Screate_simple(rank, count, nullptr), H5Sclose);
  if (rank < 1 || !mspace ||
      H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, start, nullptr, count, nullptr) < 0 ||
      H5Dread(f.label.get(), H5T_NATIVE_INT, mspace.get(), fspace.get(), H5P_DEFAULT,
              values.data()) < 0) {
    fail(path, with_detail("cannot read 'label'"));
  }
  for (int i = 0; i < k; ++i) {
    const int v = values[static_cast<std::size_t>(i)];
    if (v < 0 || v >= kModelNet40Classes) {
      fail(path, "label " + std::to_string(v) + " at index " + std::to_string(i) +
                     " is out of range, expected 0.." + std::to_string(kModelNet40Classes - 1));
    }
    labels[i] = static_cast<std::uint8_t>(v);
  }
}

// Fails naming the first non-finite coordinate of shapes [first, first + k) held in points.
void check_finite(const FileInfo& info, int first, int k, const float* points) {
  const std::size_t per = static_cast<std::size_t>(info.points) * 3;
  const std::size_t n = static_cast<std::size_t>(k) * per;
  for (std::size_t j = 0; j < n; ++j) {
    if (!std::isfinite(points[j])) {
      fail(info.path, "shape " + std::to_string(first + static_cast<int>(j / per)) + " point " +
                          std::to_string(j % per / 3) + " has a non-finite coordinate (" +
                          (std::isnan(points[j]) ? "nan" : "inf") + "), expected finite x y z");
    }
  }
}

// The files of a split, inspected and checked for a common point count; their shapes, capped at
// limit > 0, and the size guard.
std::vector<FileInfo> inspect_all(const std::vector<std::string>& files, int limit,
                                  int* total_out) {
  std::vector<FileInfo> infos;
  std::uint64_t total = 0;
  for (const std::string& path : files) {
    infos.push_back(inspect(path));
    const FileInfo& f = infos.back();
    if (f.points != infos.front().points) {
      fail(path, "shapes have " + std::to_string(f.points) + " points but " +
                     infos.front().path + " has " + std::to_string(infos.front().points) +
                     ", expected the same number in every file");
    }
    total += static_cast<std::uint64_t>(f.count);
  }
  if (limit > 0) total = std::min<std::uint64_t>(total, static_cast<std::uint64_t>(limit));
  const std::size_t per = static_cast<std::size_t>(infos.front().points) * 3;
  if (total > static_cast<std::uint64_t>(std::numeric_limits<int>::max()) ||
      total * per * sizeof(float) > kMaxSplitBytes) {
    fail(files.front(), "the files hold " + std::to_string(total) + " shapes of " +
                            std::to_string(infos.front().points) + " points, more than " +
                            std::to_string(kMaxSplitBytes >> 30) + " GiB (not ModelNet-like)");
  }
  *total_out = static_cast<int>(total);
  return infos;
}

// HDF5 is built without its thread-safety option on Debian: one call into it at a time, from
// whichever thread (a prefetcher's or the main one).
std::mutex& h5_mutex() {
  static std::mutex m;
  return m;
}

// A split read by batch from its open files: one hyperslab per shape.
class H5PointFiles final : public Samples {
 public:
  H5PointFiles(std::vector<OpenFile> files, std::vector<int> first, int count,
               std::vector<std::uint8_t> labels)
      : files_(std::move(files)), first_(std::move(first)), count_(count),
        labels_(std::move(labels)),
        per_(static_cast<std::size_t>(files_.front().info.points) * 3 * sizeof(float)) {}
  int count() const override { return count_; }
  std::size_t record_bytes() const override { return per_; }
  void read(const std::int32_t* idx, int n, void* dst, std::uint8_t* labels) const override {
    const std::lock_guard<std::mutex> lock(h5_mutex());
    const h5::QuietErrors quiet;
    auto* out = static_cast<std::uint8_t*>(dst);
    for (int b = 0; b < n; ++b) {
      ZT_CHECK(idx[b] >= 0 && idx[b] < count_);
      // The file holding shape idx[b]: the last whose first shape is <= it.
      const auto f = static_cast<std::size_t>(
          std::upper_bound(first_.begin(), first_.end(), idx[b]) - first_.begin() - 1);
      read_points(files_[f], idx[b] - first_[f], 1,
                  reinterpret_cast<float*>(out + static_cast<std::size_t>(b) * per_));
      labels[b] = labels_[static_cast<std::size_t>(idx[b])];
    }
  }
  std::size_t resident_bytes() const override {
    return labels_.size() + first_.size() * sizeof(int);
  }
  ~H5PointFiles() override {
    const std::lock_guard<std::mutex> lock(h5_mutex());
    files_.clear();
  }

 private:
  std::vector<OpenFile> files_;
  std::vector<int> first_;  // index of each file's first shape in the split
  int count_;
  std::vector<std::uint8_t> labels_;
  std::size_t per_;
};

}  // namespace

std::vector<std::string> find_ply_h5_files(const std::string& root, const std::string& split) {
  namespace fs = std::filesystem;
  const std::string prefix = "ply_data_" + split;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    throw Error(root + ": data directory not found (expected ply_data_train*.h5 and " +
                "ply_data_test*.h5 in it; the synthetic generator can write such a set)");
  }
  std::vector<std::string> files;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() >= prefix.size() + 3 && name.compare(0, prefix.size(), prefix) == 0 &&
        name.compare(name.size() - 3, 3, ".h5") == 0 && fs::is_regular_file(it->path(), ec)) {
      files.push_back(it->path().string());
    }
  }
  if (ec) throw Error(root + ": cannot list the directory: " + ec.message());
  if (files.empty()) throw Error("no " + prefix + "*.h5 in " + root);
  std::sort(files.begin(), files.end());
  return files;
}

namespace {

// A split's files inspected (at most `limit` shapes in all, 0 = all), to be read while it
// lives: it holds the HDF5 lock and keeps HDF5's error printing off.
struct InspectedSplit {
  const std::lock_guard<std::mutex> lock{h5_mutex()};
  const h5::QuietErrors quiet;
  int total = 0;
  std::vector<FileInfo> infos;
  InspectedSplit(const std::vector<std::string>& files, int limit) {
    ZT_CHECK(limit >= 0);
    ZT_CHECK(!files.empty());
    infos = inspect_all(files, limit, &total);
  }
};

}  // namespace

PointCloudSet load_ply_h5_files(const std::vector<std::string>& files, int limit) {
  const InspectedSplit in(files, limit);
  const int total = in.total;
  const std::size_t per = static_cast<std::size_t>(in.infos.front().points) * 3;
  PointCloudSet set;
  set.count = total;
  set.stored_points = in.infos.front().points;
  set.points.resize(static_cast<std::size_t>(total) * per);  // exact size: no regrowth
  set.labels.resize(static_cast<std::size_t>(total));
  int done = 0;
  for (const FileInfo& info : in.infos) {
    const int k = std::min(info.count, set.count - done);
    if (k <= 0) break;
    const OpenFile f(info);
    float* points = set.points.data() + static_cast<std::size_t>(done) * per;
    read_points(f, 0, k, points);
    read_labels(f, k, set.labels.data() + done);
    check_finite(info, 0, k, points);
    done += k;
  }
  return set;
}

PointSplit open_ply_h5_files(const std::vector<std::string>& files, int limit) {
  const InspectedSplit in(files, limit);
  const int total = in.total;
  const int points = in.infos.front().points;
  constexpr int kCheckShapes = 64;  // the finiteness pass reads this many shapes at a time
  std::vector<float> chunk(static_cast<std::size_t>(kCheckShapes) * points * 3);
  std::vector<std::uint8_t> labels(static_cast<std::size_t>(total));
  std::vector<OpenFile> open;
  std::vector<int> first;
  int done = 0;
  for (const FileInfo& info : in.infos) {
    const int k = std::min(info.count, total - done);
    if (k <= 0) break;
    OpenFile f(info);
    read_labels(f, k, labels.data() + done);
    for (int s = 0; s < k; s += kCheckShapes) {
      const int m = std::min(kCheckShapes, k - s);
      read_points(f, s, m, chunk.data());
      check_finite(info, s, m, chunk.data());
    }
    first.push_back(done);
    open.push_back(std::move(f));
    done += k;
  }
  PointSplit split;
  split.stored_points = points;
  split.samples =
      std::make_shared<H5PointFiles>(std::move(open), std::move(first), total, std::move(labels));
  return split;
}

namespace {

// Both splits of the set under root, each read by read(files, limit); both file lists first, so
// a missing split is reported before anything is read.
template <class Out, class Read>
Out read_splits(const std::string& root, int train_limit, int test_limit, const Read& read) {
  const std::vector<std::string> train_files = find_ply_h5_files(root, "train");
  const std::vector<std::string> test_files = find_ply_h5_files(root, "test");
  Out out;
  out.train = read(train_files, train_limit);
  out.test = read(test_files, test_limit);
  if (out.test.stored_points != out.train.stored_points) {
    fail(test_files.front(), "shapes have " + std::to_string(out.test.stored_points) +
                                 " points but the training files' have " +
                                 std::to_string(out.train.stored_points) + ", expected the same number");
  }
  return out;
}

}  // namespace

PointCloudDataset load_modelnet40(const std::string& root, int train_limit, int test_limit) {
  return read_splits<PointCloudDataset>(root, train_limit, test_limit, load_ply_h5_files);
}

PointFiles open_modelnet40(const std::string& root, int train_limit, int test_limit) {
  return read_splits<PointFiles>(root, train_limit, test_limit, open_ply_h5_files);
}

}  // namespace zt::data
