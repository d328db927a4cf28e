// Lookups over a registry (a vector of entries with a `name`) shared by the config's files: the
// entry of a name, and the names of the entries that fit a condition (for error texts).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "zotrain/core/error.hpp"

namespace zt::config::detail {

// The entry named `name`; throws zt::Error naming `key` and the choices.
template <class Info>
const Info& find_named(const std::vector<Info>& list, std::string_view name, const char* key) {
  std::string names;
  for (const Info& i : list) {
    if (name == i.name) return i;
    names += (names.empty() ? "" : ", ") + std::string(i.name);
  }
  throw Error(std::string(key) + ": unknown value '" + std::string(name) + "', expected one of " +
              names);
}

// The names of a registry's entries that satisfy `fits`, joined by `sep`.
template <class Info, class Fits>
std::string names_where(const std::vector<Info>& list, Fits fits, const char* sep = ", ") {
  std::string s;
  for (const Info& i : list)
    if (fits(i)) s += (s.empty() ? "" : sep) + std::string(i.name);
  return s;
}

}  // namespace zt::config::detail
