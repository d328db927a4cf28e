#include "zotrain/data/synthetic_points.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <system_error>

#include "exact_math.hpp"
#include "hdf5_util.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/core/rng.hpp"
#include "zotrain/core/seeds.hpp"
#include "zotrain/data/modelnet40.hpp"

namespace zt::data {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxPointsPerShape = 65536;
constexpr float kMaxNoise = 0.2f;  // also in validate()'s message
constexpr std::uint64_t kMaxSplitBytes = std::uint64_t{4} << 30;  // what the loader accepts

const std::array<std::string, 14> kShapeNames = {
    "sphere",  "cube",  "cylinder", "cone",        "torus",      "pyramid", "ellipsoid",
    "capsule", "annulus", "helix",  "cross", "tetrahedron", "octahedron", "bowl"};

struct V3 {
  double x = 0, y = 0, z = 0;
};
V3 operator+(V3 a, V3 b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
V3 operator-(V3 a, V3 b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
V3 operator*(double s, V3 a) { return {s * a.x, s * a.y, s * a.z}; }

// The sample's generator with the draws the shapes need. Every draw is exact (see exact_math).
class Draw {
 public:
  explicit Draw(std::uint64_t seed) : rng_(seed) {}
  double u() { return exact::uniform53(rng_); }                // [0, 1)
  double in(double lo, double hi) { return lo + (hi - lo) * u(); }
  int below(int n) { return static_cast<int>(rng_.below(static_cast<std::uint64_t>(n))); }
  double gauss() { return exact::gauss12(rng_); }
  // Index i with probability w[i] / Σw.
  template <std::size_t K>
  int pick(const std::array<double, K>& w) {
    double total = 0;
    for (double v : w) total += v;
    double t = u() * total;
    for (std::size_t i = 0; i + 1 < K; ++i) {
      if (t < w[i]) return static_cast<int>(i);
      t -= w[i];
    }
    return static_cast<int>(K - 1);
  }

 private:
  SplitMix64 rng_;
};

// (cos, sin) of a uniformly random angle, times r.
void circle(Draw& d, double r, double* c, double* s) {
  double sn, cs;
  exact::sincos_turns(d.u(), &sn, &cs);
  *c = r * cs;
  *s = r * sn;
}

V3 unit_sphere(Draw& d) {  // uniform: y uniform in [−1, 1] (Archimedes), angle uniform
  const double y = 2 * d.u() - 1;
  double x, z;
  circle(d, std::sqrt(std::max(0.0, 1 - y * y)), &x, &z);
  return {x, y, z};
}

V3 triangle(Draw& d, V3 a, V3 b, V3 c) {  // uniform in the triangle
  const double r = std::sqrt(d.u()), v = d.u();
  return (1 - r) * a + (r * (1 - v)) * b + (r * v) * c;
}

// Uniform on the surface of the box centre ± h.
V3 box_surface(Draw& d, V3 centre, V3 h) {
  const std::array<double, 3> area = {h.y * h.z, h.x * h.z, h.x * h.y};  // faces ⟂ x, y, z
  const int axis = d.pick(area);
  const double sign = d.u() < 0.5 ? -1.0 : 1.0;
  V3 p{(2 * d.u() - 1) * h.x, (2 * d.u() - 1) * h.y, (2 * d.u() - 1) * h.z};
  if (axis == 0) p.x = sign * h.x;
  if (axis == 1) p.y = sign * h.y;
  if (axis == 2) p.z = sign * h.z;
  return p + centre;
}

bool strictly_inside(V3 p, V3 centre, V3 h) {
  const V3 q = p - centre;
  return std::fabs(q.x) < h.x && std::fabs(q.y) < h.y && std::fabs(q.z) < h.z;
}

constexpr double kPi = 3.14159265358979323846;

// Fills out[0..n) with points on shape `shape` in its canonical frame (y up, about unit size),
// drawing the shape's random proportions first.
void sample_shape(int shape, Draw& d, std::vector<V3>& out) {
  const std::size_t n = out.size();
  switch (shape) {
    case 0:  // sphere
      for (auto& p : out) p = unit_sphere(d);
      break;
    case 1:  // cube
      for (auto& p : out) p = box_surface(d, {}, {1, 1, 1});
      break;
    case 2: {  // cylinder: side and both caps, by area
      const double h = d.in(0.7, 1.3);
      for (auto& p : out) {
        const int part = d.pick(std::array<double, 3>{4 * kPi * h, kPi, kPi});
        if (part == 0) {
          const double y = (2 * d.u() - 1) * h;
          circle(d, 1.0, &p.x, &p.z);
          p.y = y;
        } else {
          circle(d, std::sqrt(d.u()), &p.x, &p.z);
          p.y = part == 1 ? h : -h;
        }
      }
      break;
    }
    case 3: {  // cone: apex up, base disc
      const double height = d.in(1.4, 2.4);
      const double slant = std::sqrt(1 + height * height);
      for (auto& p : out) {
        if (d.pick(std::array<double, 2>{kPi * slant, kPi}) == 0) {
          const double f = std::sqrt(d.u());  // distance from the apex, as a fraction
          circle(d, f, &p.x, &p.z);
          p.y = height / 2 - f * height;
        } else {
          circle(d, std::sqrt(d.u()), &p.x, &p.z);
          p.y = -height / 2;
        }
      }
      break;
    }
    case 4: {  // torus lying flat: ring radius 1, tube radius a; tube angle by rejection
      const double a = d.in(0.2, 0.45);
      for (auto& p : out) {
        double ct, st;
        do {
          exact::sincos_turns(d.u(), &st, &ct);
        } while (d.u() * (1 + a) > 1 + a * ct);
        double cx, cz;
        circle(d, 1 + a * ct, &cx, &cz);
        p = {cx, a * st, cz};
      }
      break;
    }
    case 5: {  // square pyramid: base [−1, 1]² at −H/2, apex at +H/2
      const double height = d.in(1.2, 2.2);
      const double side = std::sqrt(height * height + 1);  // each triangle's area
      const V3 apex{0, height / 2, 0};
      const std::array<V3, 4> b = {V3{-1, -height / 2, -1}, V3{1, -height / 2, -1},
                                   V3{1, -height / 2, 1}, V3{-1, -height / 2, 1}};
      for (auto& p : out) {
        const int part = d.pick(std::array<double, 5>{4, side, side, side, side});
        if (part == 0) {
          p = {2 * d.u() - 1, -height / 2, 2 * d.u() - 1};
        } else {
          p = triangle(d, apex, b[static_cast<std::size_t>(part - 1)],
                       b[static_cast<std::size_t>(part % 4)]);
        }
      }
      break;
    }
    case 6: {  // ellipsoid: a stretched sphere, clearly anisotropic
      const double ay = d.in(0.45, 0.7), az = d.in(0.25, 0.45);
      for (auto& p : out) {
        const V3 s = unit_sphere(d);
        p = {s.x, ay * s.y, az * s.z};
      }
      break;
    }
    case 7: {  // capsule: cylinder of half-height h with hemispherical ends
      const double h = d.in(0.5, 1.1);
      for (auto& p : out) {
        if (d.pick(std::array<double, 2>{4 * kPi * h, 4 * kPi}) == 0) {
          const double y = (2 * d.u() - 1) * h;
          circle(d, 1.0, &p.x, &p.z);
          p.y = y;
        } else {
          p = unit_sphere(d);
          p.y += p.y >= 0 ? h : -h;
        }
      }
      break;
    }
    case 8: {  // annulus: flat ring, outer radius 1, inner radius r0
      const double r0 = d.in(0.35, 0.65);
      for (auto& p : out) {
        circle(d, std::sqrt(r0 * r0 + d.u() * (1 - r0 * r0)), &p.x, &p.z);
        p.y = 0;
      }
      break;
    }
    case 9: {  // helix: a tube of radius a around a coil of radius 1, `turns` turns, height hh
      const double turns = d.in(2.5, 4.5), hh = d.in(1.5, 2.5), a = d.in(0.1, 0.2);
      const double k = hh / (2 * kPi * turns);  // rise per radian
      const double len = std::sqrt(1 + k * k);
      for (auto& p : out) {
        const double t = d.u();
        double s, c, sp, cp;
        exact::sincos_turns(turns * t, &s, &c);
        exact::sincos_turns(d.u(), &sp, &cp);
        const V3 centre{c, hh * (t - 0.5), s};
        const V3 normal{-c, 0, -s};
        const V3 binormal = (1 / len) * V3{-k * s, -1, k * c};
        p = centre + (a * cp) * normal + (a * sp) * binormal;
      }
      break;
    }
    case 10: {  // cross: an upright bar and a crossbar, the union's surface
      const double w = d.in(0.12, 0.25), arm = d.in(0.6, 0.9), y0 = d.in(0.1, 0.45);
      const V3 c0{0, 0, 0}, h0{w, 1, w};     // upright
      const V3 c1{0, y0, 0}, h1{arm, w, w};  // crossbar
      const double a0 = h0.y * h0.z + h0.x * h0.z + h0.x * h0.y;
      const double a1 = h1.y * h1.z + h1.x * h1.z + h1.x * h1.y;
      for (auto& p : out) {
        for (;;) {
          if (d.pick(std::array<double, 2>{a0, a1}) == 0) {
            p = box_surface(d, c0, h0);
            if (!strictly_inside(p, c1, h1)) break;
          } else {
            p = box_surface(d, c1, h1);
            if (!strictly_inside(p, c0, h0)) break;
          }
        }
      }
      break;
    }
    case 11: {  // regular tetrahedron
      const std::array<V3, 4> v = {V3{1, 1, 1}, V3{1, -1, -1}, V3{-1, 1, -1}, V3{-1, -1, 1}};
      for (auto& p : out) {
        const int f = d.below(4);  // the face opposite vertex f
        const int i0 = (f + 1) % 4, i1 = (f + 2) % 4, i2 = (f + 3) % 4;
        p = triangle(d, v[static_cast<std::size_t>(i0)], v[static_cast<std::size_t>(i1)],
                     v[static_cast<std::size_t>(i2)]);
      }
      break;
    }
    case 12:  // regular octahedron
      for (auto& p : out) {
        const int f = d.below(8);
        const double sx = (f & 1) ? -1 : 1, sy = (f & 2) ? -1 : 1, sz = (f & 4) ? -1 : 1;
        p = triangle(d, {sx, 0, 0}, {0, sy, 0}, {0, 0, sz});
      }
      break;
    case 13:  // bowl: the lower half of the unit sphere, open at the top
      for (auto& p : out) {
        const double y = -d.u();
        circle(d, std::sqrt(std::max(0.0, 1 - y * y)), &p.x, &p.z);
        p.y = y;
      }
      break;
    default:
      ZT_CHECK_MSG(false, "shape " + std::to_string(shape) + " of " + std::to_string(n));
  }
}

// Rotation in the plane of coordinates (a, b) by t turns: a' = c·a − s·b, b' = s·a + c·b.
void rotate(std::vector<V3>& pts, double t, double V3::*a, double V3::*b) {
  double s, c;
  exact::sincos_turns(t, &s, &c);
  for (V3& p : pts) {
    const double x = p.*a, y = p.*b;
    p.*a = c * x - s * y;
    p.*b = s * x + c * y;
  }
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error(path + ": " + what);
}

std::string with_detail(std::string what) {
  const std::string detail = h5::last_error();
  if (!detail.empty()) what += " (HDF5: " + detail + ")";
  return what;
}

void fsync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), O_RDONLY | (directory ? O_DIRECTORY : 0));
  if (fd < 0) {
    if (directory) return;  // best effort: not every file system lets a directory be opened
    fail(path, std::string("cannot open to flush: ") + std::strerror(errno));
  }
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0 && !directory) fail(path, std::string("cannot flush to disk: ") + std::strerror(err));
}

// Removes the temporary file unless the rename happened.
class TempFile {
 public:
  explicit TempFile(fs::path p) : path_(std::move(p)) {
    std::error_code ec;
    fs::remove(path_, ec);  // a leftover of an interrupted run
  }
  ~TempFile() {
    if (!committed_) {
      std::error_code ec;
      fs::remove(path_, ec);
    }
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const fs::path& path() const { return path_; }
  void commit_as(const fs::path& final_path) {
    fsync_path(path_.string(), false);
    std::error_code ec;
    fs::rename(path_, final_path, ec);
    if (ec) fail(final_path.string(), "cannot rename " + path_.string() + " into place: " + ec.message());
    committed_ = true;
    fsync_path(final_path.parent_path().string(), true);
  }

 private:
  fs::path path_;
  bool committed_ = false;
};

int split_count(const SyntheticOptions& opt, bool train) {
  return opt.classes * (train ? opt.train_per_class : opt.test_per_class);
}

void write_split(const fs::path& final_path, const SyntheticOptions& opt, bool train) {
  const std::string shown = final_path.string();
  TempFile tmp(final_path.parent_path() / ("." + final_path.filename().string() + ".tmp"));
  const std::string tmp_name = tmp.path().string();
  const int n = split_count(opt, train);
  const hsize_t p = static_cast<hsize_t>(opt.points);
  {
    // No creation/modification times anywhere: same options ⇒ the same bytes.
    h5::Id fcpl(H5Pcreate(H5P_FILE_CREATE), H5Pclose);
    h5::Id dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    if (!fcpl || !dcpl || H5Pset_obj_track_times(fcpl.get(), 0) < 0 ||
        H5Pset_obj_track_times(dcpl.get(), 0) < 0) {
      fail(shown, with_detail("cannot set up HDF5 property lists"));
    }
    h5::Id file(H5Fcreate(tmp_name.c_str(), H5F_ACC_TRUNC, fcpl.get(), H5P_DEFAULT), H5Fclose);
    if (!file) fail(tmp_name, with_detail("cannot create HDF5 file"));

    const hsize_t ddims[3] = {static_cast<hsize_t>(n), p, 3};
    h5::Id dspace(H5Screate_simple(3, ddims, nullptr), H5Sclose);
    h5::Id data(H5Dcreate2(file.get(), "data", H5T_IEEE_F32LE, dspace.get(), H5P_DEFAULT,
                           dcpl.get(), H5P_DEFAULT),
                H5Dclose);
    if (!dspace || !data) fail(tmp_name, with_detail("cannot create dataset 'data'"));

    // Blocks of whole shapes (about 1 MiB): the set is never held in memory at once.
    const int block = std::max(1, static_cast<int>((std::size_t{1} << 20) / (p * 3 * sizeof(float))));
    std::vector<float> buf(static_cast<std::size_t>(std::min(block, n)) * p * 3);
    std::vector<std::uint8_t> labels(static_cast<std::size_t>(n));
    for (int begin = 0; begin < n; begin += block) {
      const int k = std::min(block, n - begin);
      for (int i = 0; i < k; ++i) {
        synthetic_sample(opt, train, begin + i, buf.data() + static_cast<std::size_t>(i) * p * 3,
                         &labels[static_cast<std::size_t>(begin + i)]);
      }
      const hsize_t start[3] = {static_cast<hsize_t>(begin), 0, 0};
      const hsize_t count[3] = {static_cast<hsize_t>(k), p, 3};
      h5::Id mspace(H5Screate_simple(3, count, nullptr), H5Sclose);
      h5::Id fspace(H5Dget_space(data.get()), H5Sclose);
      if (!mspace || !fspace ||
          H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, start, nullptr, count, nullptr) < 0 ||
          H5Dwrite(data.get(), H5T_NATIVE_FLOAT, mspace.get(), fspace.get(), H5P_DEFAULT,
                   buf.data()) < 0) {
        fail(tmp_name, with_detail("cannot write 'data'"));
      }
    }

    const hsize_t ldims[2] = {static_cast<hsize_t>(n), 1};
    h5::Id lspace(H5Screate_simple(2, ldims, nullptr), H5Sclose);
    h5::Id label(H5Dcreate2(file.get(), "label", H5T_STD_U8LE, lspace.get(), H5P_DEFAULT,
                            dcpl.get(), H5P_DEFAULT),
                 H5Dclose);
    if (!lspace || !label ||
        H5Dwrite(label.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, labels.data()) < 0) {
      fail(tmp_name, with_detail("cannot write 'label'"));
    }
    if (label.close() < 0 || data.close() < 0 || file.close() < 0) {
      fail(tmp_name, with_detail("cannot finish writing the HDF5 file"));
    }
  }
  tmp.commit_as(final_path);
}

void write_shape_names(const fs::path& final_path, int classes) {
  TempFile tmp(final_path.parent_path() / ("." + final_path.filename().string() + ".tmp"));
  {
    std::ofstream f(tmp.path(), std::ios::binary);
    for (int c = 0; c < classes; ++c) f << kShapeNames[static_cast<std::size_t>(c)] << '\n';
    f.close();
    if (!f) fail(tmp.path().string(), "cannot write");
  }
  tmp.commit_as(final_path);
}

}  // namespace

int synthetic_shape_count() { return static_cast<int>(kShapeNames.size()); }

const std::string& synthetic_shape_name(int c) {
  ZT_CHECK(c >= 0 && c < synthetic_shape_count());
  return kShapeNames[static_cast<std::size_t>(c)];
}

void validate(const SyntheticOptions& opt) {
  const auto bad = [](const std::string& key, const std::string& value, const std::string& want) {
    throw Error("synthetic." + key + " = " + value + ", expected " + want);
  };
  if (opt.classes < 10 || opt.classes > synthetic_shape_count()) {
    bad("classes", std::to_string(opt.classes), "10.." + std::to_string(synthetic_shape_count()));
  }
  if (opt.train_per_class < 1) bad("train_per_class", std::to_string(opt.train_per_class), ">= 1");
  if (opt.test_per_class < 1) bad("test_per_class", std::to_string(opt.test_per_class), ">= 1");
  if (opt.points < 1 || opt.points > kMaxPointsPerShape) {
    bad("points", std::to_string(opt.points), "1.." + std::to_string(kMaxPointsPerShape));
  }
  if (!(std::isfinite(opt.noise) && opt.noise >= 0.f && opt.noise <= kMaxNoise)) {
    bad("noise", std::to_string(opt.noise), "0..0.2");
  }
  for (const auto& [key, per] : {std::pair<const char*, int>{"train_per_class", opt.train_per_class},
                                 std::pair<const char*, int>{"test_per_class", opt.test_per_class}}) {
    const std::uint64_t shapes = static_cast<std::uint64_t>(opt.classes) * static_cast<std::uint64_t>(per);
    if (shapes > static_cast<std::uint64_t>(std::numeric_limits<int>::max()) ||
        shapes * static_cast<std::uint64_t>(opt.points) * 3 * sizeof(float) > kMaxSplitBytes) {
      bad(key, std::to_string(per),
          "a split of at most " + std::to_string(kMaxSplitBytes >> 30) + " GiB of coordinates");
    }
  }
}

void synthetic_sample(const SyntheticOptions& opt, bool train, int index, float* points,
                      std::uint8_t* label) {
  ZT_CHECK(opt.classes >= 1 && opt.classes <= synthetic_shape_count() && opt.points >= 1);
  ZT_CHECK(index >= 0 && index < split_count(opt, train));
  const int shape = index % opt.classes;
  *label = static_cast<std::uint8_t>(shape);
  Draw d(seeds::synthetic_sample(opt.seed, train, static_cast<std::uint64_t>(index)));

  // Pose first, then the shape (its proportions, then its points), then the noise.
  const V3 scale{d.in(0.85, 1.15), d.in(0.85, 1.15), d.in(0.85, 1.15)};
  const double tilt_x = d.in(-0.03, 0.03), tilt_z = d.in(-0.03, 0.03), yaw = d.u();
  std::vector<V3> pts(static_cast<std::size_t>(opt.points));
  sample_shape(shape, d, pts);
  for (V3& p : pts) p = {scale.x * p.x, scale.y * p.y, scale.z * p.z};
  rotate(pts, tilt_x, &V3::y, &V3::z);  // about x
  rotate(pts, tilt_z, &V3::x, &V3::y);  // about z
  rotate(pts, yaw, &V3::x, &V3::z);     // about the up axis y, as the batcher rotates
  const double noise = opt.noise;
  if (noise > 0) {
    for (V3& p : pts) p = p + V3{noise * d.gauss(), noise * d.gauss(), noise * d.gauss()};
  }

  // Centre on the centroid, scale the farthest point to norm 1.
  V3 centroid;
  for (const V3& p : pts) centroid = centroid + p;
  centroid = (1.0 / static_cast<double>(pts.size())) * centroid;
  double radius = 0;
  for (V3& p : pts) {
    p = p - centroid;
    radius = std::max(radius, std::sqrt(p.x * p.x + p.y * p.y + p.z * p.z));
  }
  if (radius == 0) radius = 1;  // a single point
  for (std::size_t i = 0; i < pts.size(); ++i) {
    points[i * 3] = static_cast<float>(pts[i].x / radius);
    points[i * 3 + 1] = static_cast<float>(pts[i].y / radius);
    points[i * 3 + 2] = static_cast<float>(pts[i].z / radius);
  }
}

void write_synthetic_modelnet(const std::string& dir, const SyntheticOptions& opt) {
  validate(opt);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir, ec)) {
    throw Error(dir + ": cannot create the data directory" + (ec ? ": " + ec.message() : ""));
  }
  // Refuse to mix with other files the loader would pick up.
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const bool ply = (name.rfind("ply_data_train", 0) == 0 || name.rfind("ply_data_test", 0) == 0) &&
                     name.size() > 3 && name.compare(name.size() - 3, 3, ".h5") == 0;
    if (ply && name != "ply_data_train0.h5" && name != "ply_data_test0.h5") {
      throw Error(dir + ": holds " + name + ", which would be loaded together with the " +
                  "synthetic files; expected an empty directory or a previous synthetic set");
    }
  }
  if (ec) throw Error(dir + ": cannot list the directory: " + ec.message());

  const h5::QuietErrors quiet;
  write_split(fs::path(dir) / "ply_data_train0.h5", opt, true);
  write_split(fs::path(dir) / "ply_data_test0.h5", opt, false);
  write_shape_names(fs::path(dir) / "shape_names.txt", opt.classes);
}

}  // namespace zt::data
