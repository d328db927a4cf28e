#include "hdf5_util.hpp"

namespace zt::data::h5 {
namespace {

herr_t keep_innermost(unsigned /*n*/, const H5E_error2_t* err, void* out) {
  // Walking downward visits the API call first and the deepest cause last.
  if (err != nullptr && err->desc != nullptr && err->desc[0] != '\0')
    *static_cast<std::string*>(out) = err->desc;
  return 0;
}

}  // namespace

std::string last_error() {
  std::string msg;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, &keep_innermost, &msg);
  for (char& c : msg)
    if (c == '\n' || c == '\r') c = ' ';
  return msg;
}

}  // namespace zt::data::h5
