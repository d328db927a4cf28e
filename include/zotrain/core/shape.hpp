// Per-sample tensor shape (the batch dimension is kept separately), e.g. {6, 28, 28} or {120}.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace zt {

struct Shape {
  std::vector<int> dims;
  std::size_t numel() const {
    std::size_t n = 1;
    for (int d : dims) n *= static_cast<std::size_t>(d);
    return n;
  }
  std::string str() const {
    std::string s = "[";
    for (std::size_t i = 0; i < dims.size(); ++i) {
      if (i) s.push_back('x');
      s.append(std::to_string(dims[i]));
    }
    s.push_back(']');
    return s;
  }
  bool operator==(const Shape&) const = default;
};

}  // namespace zt
