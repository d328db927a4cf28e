// A deterministic synthetic stand-in for ModelNet40 (which cannot be downloaded on the build
// machines): point clouds sampled on analytic surfaces, written in the release's HDF5 layout so
// load_modelnet40 reads them like the real files.
//
// Shapes, in label order (classes = k uses the first k): sphere, cube, cylinder, cone, torus,
// pyramid (square base), ellipsoid, capsule, annulus (flat ring), helix (spring tube), cross
// (two boxes), tetrahedron, octahedron, bowl (open hemisphere). Each is sampled uniformly on its
// surface (area-weighted parts, rejection where needed; the ellipsoid is a stretched uniform
// sphere, the helix tube ignores curvature), with per-shape random proportions (torus tube
// radius, cone height, ring width, helix turns, …).
// Per sample: an anisotropic scale (each axis ×[0.85, 1.15]), a small tilt (up to ±0.03 turn
// ≈ ±11° about x and about z), a uniformly random rotation about the up axis y (the pose
// ModelNet's aligned shapes vary in), noise N(0, noise²) per coordinate (sum-of-uniforms
// approximation), then centred on the centroid and scaled so the farthest point has norm 1
// (as ModelNet's h5 files are normalised into the unit sphere).
// Sample i of a split has label i mod classes (balanced, and any prefix stays balanced) and
// depends on (seed, split, i) only. All arithmetic is exactly reproducible (no libm sin/cos, no
// std:: distributions), so the coordinates are bit-identical on every platform.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zt::data {

struct SyntheticOptions {
  int classes = 10;  // 10..synthetic_shape_count()
  int train_per_class = 100;
  int test_per_class = 20;
  int points = 2048;  // per shape, 1..65536
  std::uint64_t seed = 1;
  float noise = 0.01f;  // σ of the coordinate noise before normalisation, 0..0.2
};

int synthetic_shape_count();                     // 14
const std::string& synthetic_shape_name(int c);  // 0 ≤ c < synthetic_shape_count()

// Throws zt::Error naming the field when an option is out of range.
void validate(const SyntheticOptions& opt);

// Sample `index` of a split (train: 0 ≤ index < classes·train_per_class, test likewise):
// points [opt.points, 3] and its label. What write_synthetic_modelnet stores.
void synthetic_sample(const SyntheticOptions& opt, bool train, int index, float* points,
                      std::uint8_t* label);

// Writes dir/ply_data_train0.h5, dir/ply_data_test0.h5 (`data` float32 [n, points, 3], `label`
// uint8 [n, 1]) and dir/shape_names.txt (one name per line, label order), creating dir.
// Same options ⇒ byte-identical files (no HDF5 timestamps). Each file is written under a
// temporary name in dir, flushed to disk and renamed, so a crash leaves either the old file or
// the complete new one. Throws zt::Error when dir holds other ply_data_{train,test}*.h5 files
// (they would be loaded together with these), or on any I/O failure.
void write_synthetic_modelnet(const std::string& dir, const SyntheticOptions& opt);

}  // namespace zt::data
