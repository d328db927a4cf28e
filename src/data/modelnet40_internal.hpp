// Internal to the ModelNet40 loader (modelnet40.cpp: files, shapes, labels;
// modelnet40_storage.cpp: where a dataset's values are stored): its errors and the storage check.
// Private to src/data.
#pragma once

#include <string>
#include <vector>

#include "hdf5_util.hpp"
#include "zotrain/core/error.hpp"

namespace zt::data::modelnet40_detail {

[[noreturn]] inline void fail(const std::string& path, const std::string& what) {
  throw Error(path + ": " + what);
}

// `what`, with HDF5's own explanation appended when its error stack has one.
inline std::string with_detail(std::string what) {
  const std::string detail = h5::last_error();
  if (!detail.empty()) what += " (HDF5: " + detail + ")";
  return what;
}

// Checks that the values of dataset `name` ([elements] of its stored type, dims validated) are
// stored in the file itself before anything is allocated for them (modelnet40_storage.cpp);
// throws zt::Error naming `path` otherwise.
void check_stored(const h5::Id& ds, const std::string& path, const char* name,
                  const std::vector<hsize_t>& dims);

}  // namespace zt::data::modelnet40_detail
