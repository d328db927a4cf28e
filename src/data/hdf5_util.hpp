// HDF5 plumbing shared by the ModelNet40 loader and the synthetic point-cloud writer: RAII
// ownership of identifiers, a guard that keeps HDF5 from printing its error stack (errors are
// reported once, as one zt::Error line), and the innermost message of that stack for context.
// Private to src/data: public headers never include hdf5.h.
#pragma once

#include <hdf5.h>

#include <cstddef>
#include <string>
#include <utility>

// A cross build compiles against whichever libhdf5-dev headers are installed (Debian's package
// is not multi-arch, see CMakeLists.txt); they are only valid for a target with their data model.
static_assert(H5_SIZEOF_INT == sizeof(int) && H5_SIZEOF_LONG == sizeof(long) &&
                  H5_SIZEOF_LONG_LONG == sizeof(long long) &&
                  H5_SIZEOF_SIZE_T == sizeof(std::size_t),
              "the HDF5 headers (H5pubconf.h) were configured for another data model than the "
              "target's: install the target's libhdf5-dev headers");

namespace zt::data::h5 {

// Owns one HDF5 identifier; closes it with the matching H5?close on destruction.
class Id {
 public:
  using Closer = herr_t (*)(hid_t);
  Id() = default;
  Id(hid_t id, Closer close) : id_(id), close_(close) {}
  ~Id() { (void)close(); }
  Id(Id&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)), close_(o.close_) {}
  Id& operator=(Id&& o) noexcept {
    if (this != &o) {
      (void)close();
      id_ = std::exchange(o.id_, H5I_INVALID_HID);
      close_ = o.close_;
    }
    return *this;
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;

  hid_t get() const { return id_; }
  explicit operator bool() const { return id_ >= 0; }
  // Closes now; the result matters for files being written (closing flushes).
  herr_t close() {
    herr_t rc = 0;
    if (id_ >= 0) rc = close_(id_);
    id_ = H5I_INVALID_HID;
    return rc;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer close_ = nullptr;
};

// Turns off HDF5's automatic printing of the error stack for this thread while alive and
// restores the previous handler afterwards.
class QuietErrors {
 public:
  QuietErrors() {
    if (H5Eget_auto2(H5E_DEFAULT, &func_, &data_) < 0) {
      func_ = nullptr;
      data_ = nullptr;
    }
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietErrors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  QuietErrors(const QuietErrors&) = delete;
  QuietErrors& operator=(const QuietErrors&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// The most specific message on the current error stack (e.g. "truncated file: eof = ..."),
// or "" when the stack is empty. Call right after the failing HDF5 call.
std::string last_error();

}  // namespace zt::data::h5
