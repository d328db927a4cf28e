#include "zotrain/data/image_transforms.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "exact_math.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/core/rng.hpp"

namespace zt::data {

std::vector<std::int32_t> subset_rows(int total, int count, std::uint64_t seed) {
  ZT_CHECK(count >= 1 && total >= 0);
  std::vector<std::int32_t> order(static_cast<std::size_t>(total));
  std::iota(order.begin(), order.end(), 0);
  if (count >= total) return order;
  SplitMix64 rng(seed);
  for (int i = 0; i < count; ++i) {  // the first `count` places of a Fisher-Yates shuffle
    const int j = i + static_cast<int>(rng.below(static_cast<std::uint64_t>(total - i)));
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  order.resize(static_cast<std::size_t>(count));
  std::sort(order.begin(), order.end());
  return order;
}

void draw_subset(ImageSet& set, int count, std::uint64_t seed) {
  ZT_CHECK(count >= 1);
  if (count >= set.count) return;
  const std::vector<std::int32_t> order = subset_rows(set.count, count, seed);
  const std::size_t pixels =
      static_cast<std::size_t>(set.rows) * static_cast<std::size_t>(set.cols);
  std::vector<std::uint8_t> px(static_cast<std::size_t>(count) * pixels), lb(order.size());
  for (std::size_t k = 0; k < order.size(); ++k) {
    const auto src = static_cast<std::size_t>(order[k]);
    std::copy_n(set.pixels.begin() + static_cast<std::ptrdiff_t>(src * pixels), pixels,
                px.begin() + static_cast<std::ptrdiff_t>(k * pixels));
    lb[k] = set.labels[src];
  }
  set.pixels = std::move(px);
  set.labels = std::move(lb);
  set.count = count;
}

Rotation::Rotation(double degrees) {
  if (!std::isfinite(degrees)) throw Error("rotation angle must be finite");
  // The angle in turns, reduced first so that whole turns are exact.
  exact::sincos_turns(std::fmod(degrees, 360.0) / 360.0, &s_, &c_);
}

void Rotation::apply(const std::uint8_t* src, std::uint8_t* dst, int rows, int cols) const {
  const double s = s_, c = c_;
  const double cy = 0.5 * (rows - 1), cx = 0.5 * (cols - 1);
  auto at = [&](int y, int x) -> double {
    return (y < 0 || y >= rows || x < 0 || x >= cols) ? 0.0 : src[y * cols + x];
  };
  for (int y = 0; y < rows; ++y) {
    for (int x = 0; x < cols; ++x) {
      // The source point that lands on (x, y): the inverse rotation of the offset.
      const double dx = x - cx, dy = y - cy;
      const double sx = cx + (c * dx - s * dy), sy = cy + (s * dx + c * dy);
      const double fx = std::floor(sx), fy = std::floor(sy);
      const double wx = sx - fx, wy = sy - fy;
      // Outside the image by a pixel or more everywhere: black (and no int overflow).
      if (fx < -1.0 || fy < -1.0 || fx > cols || fy > rows) {
        dst[y * cols + x] = 0;
        continue;
      }
      const int x0 = static_cast<int>(fx), y0 = static_cast<int>(fy);
      const double top = at(y0, x0) * (1.0 - wx) + at(y0, x0 + 1) * wx;
      const double bottom = at(y0 + 1, x0) * (1.0 - wx) + at(y0 + 1, x0 + 1) * wx;
      const double v = top * (1.0 - wy) + bottom * wy;
      dst[y * cols + x] = static_cast<std::uint8_t>(std::clamp(std::floor(v + 0.5), 0.0, 255.0));
    }
  }
}

void rotate_images(ImageSet& set, double degrees) {
  const Rotation r(degrees);
  if (r.identity()) return;  // the identity, bit for bit
  const std::size_t pixels =
      static_cast<std::size_t>(set.rows) * static_cast<std::size_t>(set.cols);
  std::vector<std::uint8_t> out(set.pixels.size());
  for (int n = 0; n < set.count; ++n) {
    r.apply(set.pixels.data() + static_cast<std::size_t>(n) * pixels,
            out.data() + static_cast<std::size_t>(n) * pixels, set.rows, set.cols);
  }
  set.pixels = std::move(out);
}

}  // namespace zt::data
