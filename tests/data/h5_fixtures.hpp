// Small hand-made HDF5 files for the point-cloud tests, written with direct HDF5 calls so they
// can be anything a ModelNet40 file should not be (wrong rank, type, counts, values).
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "idx_fixtures.hpp"  // TempDir

namespace zt::data::testing {

struct H5Set {
  std::string name;
  std::vector<hsize_t> dims;
  hid_t file_type;             // e.g. H5T_IEEE_F32LE, H5T_STD_U8LE
  std::vector<double> values;  // converted by HDF5 from double; size = product of dims
};

// Writes `sets` into a new file at path (replacing it). Returns false on any HDF5 failure.
inline bool write_h5(const std::string& path, const std::vector<H5Set>& sets) {
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (file < 0) return false;
  bool ok = true;
  for (const H5Set& s : sets) {
    const hid_t space = H5Screate_simple(static_cast<int>(s.dims.size()), s.dims.data(), nullptr);
    const hid_t ds = H5Dcreate2(file, s.name.c_str(), s.file_type, space, H5P_DEFAULT,
                                H5P_DEFAULT, H5P_DEFAULT);
    ok = ok && space >= 0 && ds >= 0 &&
         (s.values.empty() ||
          H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, s.values.data()) >= 0);
    if (ds >= 0) H5Dclose(ds);
    if (space >= 0) H5Sclose(space);
  }
  return H5Fclose(file) >= 0 && ok;
}

// A well-formed pair: data float32 [n, p, 3] with coordinate k of point i of shape s equal to
// s + i/1000 + k/10 (+ offset), label uint8 [n, 1] with value (s + label0) % 40.
inline std::vector<H5Set> ply_sets(hsize_t n, hsize_t p, double offset = 0, int label0 = 0) {
  H5Set data{"data", {n, p, 3}, H5T_IEEE_F32LE, {}};
  H5Set label{"label", {n, 1}, H5T_STD_U8LE, {}};
  for (hsize_t s = 0; s < n; ++s) {
    for (hsize_t i = 0; i < p; ++i)
      for (int k = 0; k < 3; ++k)
        data.values.push_back(offset + static_cast<double>(s) + static_cast<double>(i) / 1000 +
                              k / 10.0);
    label.values.push_back(static_cast<double>((static_cast<int>(s) + label0) % 40));
  }
  return {data, label};
}

inline std::vector<std::uint8_t> file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

}  // namespace zt::data::testing
