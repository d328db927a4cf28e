// Forward and input gradient of the int8 convolution by direct correlation on a canvas
// (conv2d_s8.cpp has the overview). Integer-only.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "conv2d_s8_internal.hpp"

namespace zt::kernels::s8 {
namespace {

struct Canvas {
  bool dx = false;             // input gradient (else forward)
  bool channel_quads = false;  // else row/column quads
  int k = 1;
  int rows = 0;                // output planes: O (forward) or C (input gradient)
  int n_in = 0;                // input planes: C or O
  int in_h = 0, in_w = 0;      // input plane size: H×W or OH×OW
  int wc = 0;                  // canvas row stride
  int origin = 0;              // canvas index of input (0, 0)
  int pos0 = 0;                // canvas index of output position 0
  int npos = 0;                // output positions computed
  int out_h = 0, out_w = 0, out_col0 = 0;  // out[r][c] = canvas_out[r·wc + out_col0 + c]
  int nplanes = 0, nq = 0, panels = 0;
  ptrdiff_t plane_words = 0;   // words per expanded plane
  ptrdiff_t raw_bytes = 0;     // row/column quads: bytes per encoded canvas plane
  // scratch (bytes from the aligned base): shared, then one slot per thread
  ptrdiff_t a_off = 0, corr_off = 0, boff_off = 0, zero_off = 0, runs_off = 0, nruns_off = 0, shared = 0;
  ptrdiff_t raw_off = 0, exp_off = 0, slot = 0;
};

// Row/column quads of one input plane, for a k×k kernel: kr = ⌊k/4⌋ row quads per kernel row
// (taps kx = 4j..4j+3 of row ky: word i = bytes i..i+3 of the plane), then for each of the
// k % 4 remaining columns kx, ⌈k/4⌉ column quads (taps ky = 4j..4j+3 of column kx: word i =
// bytes i, i+wc, i+2wc, i+3wc). k = 5: 5 + 2 quads for 25 taps.
struct RowCol {
  int kr, kcols, kc, per_plane;  // row quads per kernel row, remaining columns, column quads per column
  bool has_row() const { return kr > 0; }
  bool has_col() const { return kcols > 0; }
  int planes_per_input() const { return (kr > 0 ? 1 : 0) + (kcols > 0 ? 1 : 0); }
};
RowCol rowcol_of(int k) {
  RowCol r;
  r.kr = k / 4, r.kcols = k % 4, r.kc = ceil_div(k, 4);
  r.per_plane = k * r.kr + r.kcols * r.kc;
  return r;
}

// Quad q of a canvas: the expanded plane it reads, the canvas shift of its word, and where its
// 4 weights come from: weight byte s is w[tap (ky, kx) = (ky0 + s·dky, kx0 + s·dkx)] of
// input plane ch (zero past the channels or taps).
struct Quad {
  int plane, off;
  int ch, ky0, kx0, dky, dkx;
};

Quad quad_of(const Canvas& cv, int q) {
  const int k = cv.k, wc = cv.wc;
  Quad d{};
  if (cv.channel_quads) {
    const int kx = q % k, ky = q / k % k, j = q / (k * k);
    // dx: e index P' + origin − ky·wc − kx (the flipped kernel).
    d = {j, cv.dx ? cv.origin - ky * wc - kx : ky * wc + kx, 4 * j, ky, kx, 0, 0};
    return d;
  }
  const RowCol rc = rowcol_of(k);
  const int ch = q / rc.per_plane, r = q % rc.per_plane;
  const int base_plane = ch * rc.planes_per_input();
  if (r < k * rc.kr) {  // row quad: taps (ky, 4j + s)
    const int ky = r / rc.kr, kx0 = 4 * (r % rc.kr);
    if (!cv.dx) return {base_plane, ky * wc + kx0, ch, ky, kx0, 0, 1};
    // Bytes i..i+3 at i = P' + origin − ky·wc − kx0 − 3 hold taps kx0 + 3 − s.
    return {base_plane, cv.origin - ky * wc - kx0 - 3, ch, ky, kx0 + 3, 0, -1};
  }
  const int r2 = r - k * rc.kr;  // column quad: taps (4j + s, kx)
  const int kx = 4 * rc.kr + r2 / rc.kc, ky0 = 4 * (r2 % rc.kc);
  const int plane = base_plane + (rc.has_row() ? 1 : 0);
  if (!cv.dx) return {plane, ky0 * wc + kx, ch, ky0, kx, 1, 0};
  return {plane, cv.origin - (ky0 + 3) * wc - kx, ch, ky0 + 3, kx, -1, 0};
}

// Weight byte s of quad q for output row m.
std::int8_t quad_weight(const Canvas& cv, const Conv2dShape& s, const std::int8_t* w, int m, const Quad& qd, int sub) {
  const int k = cv.k;
  const int ch = cv.channel_quads ? qd.ch + sub : qd.ch;
  const int ky = qd.ky0 + sub * qd.dky, kx = qd.kx0 + sub * qd.dkx;
  if (ch >= cv.n_in || ky < 0 || ky >= k || kx < 0 || kx >= k) return 0;
  const int o = cv.dx ? ch : m, c = cv.dx ? m : ch;
  return w[((static_cast<ptrdiff_t>(o) * s.in_c + c) * k + ky) * k + kx];
}

Canvas canvas_geometry(const Conv2dShape& s, bool dx, bool channel) {
  Canvas cv;
  cv.dx = dx;
  cv.channel_quads = channel;
  cv.k = s.kernel;
  const int k = s.kernel, oh = s.out_h(), ow = s.out_w();
  cv.wc = s.in_w + 2 * s.pad;
  if (!dx) {
    cv.rows = s.out_c, cv.n_in = s.in_c, cv.in_h = s.in_h, cv.in_w = s.in_w;
    cv.origin = s.pad * cv.wc + s.pad;
    cv.pos0 = 0;
    cv.out_h = oh, cv.out_w = ow, cv.out_col0 = 0;
  } else {
    cv.rows = s.in_c, cv.n_in = s.out_c, cv.in_h = oh, cv.in_w = ow;
    // Room for the furthest flipped shift (a column quad reaches 4⌈k/4⌉ − 1 rows back).
    cv.origin = 4 * ceil_div(k, 4) * (cv.wc + 1);
    cv.pos0 = s.pad * cv.wc;
    cv.out_h = s.in_h, cv.out_w = s.in_w, cv.out_col0 = s.pad;
  }
  cv.npos = (cv.out_h - 1) * cv.wc + cv.out_col0 + cv.out_w;
  cv.panels = ceil_div(cv.npos, kLanes);
  const RowCol rc = rowcol_of(k);
  cv.nplanes = channel ? ceil_div(cv.n_in, 4) : cv.n_in * rc.planes_per_input();
  cv.nq = channel ? ceil_div(cv.n_in, 4) * k * k : cv.n_in * rc.per_plane;
  int max_off = 0;
  for (int q = 0; q < cv.nq; ++q) {
    const Quad qd = quad_of(cv, q);
    ZT_DCHECK(qd.off >= 0);
    max_off = std::max(max_off, qd.off);
  }
  // Every word a tile reads, and the whole input, lies inside the plane.
  const ptrdiff_t reach = cv.pos0 + static_cast<ptrdiff_t>(cv.panels) * kLanes + max_off;
  const ptrdiff_t data = cv.origin + static_cast<ptrdiff_t>(cv.in_h) * cv.wc;
  cv.plane_words = round_up(std::max(reach, data), kLanes);
  // A column expansion reads 3 rows past its word.
  cv.raw_bytes = channel ? 0 : align_up(cv.plane_words + 3 * static_cast<ptrdiff_t>(cv.wc) + 4);
  // Shared: packed weights [nq][rows][4], corrections [rows], quad offsets [nq], a zero row,
  // the canvas store runs.
  cv.a_off = 0;
  cv.corr_off = align_up(static_cast<ptrdiff_t>(cv.nq) * cv.rows * 4);
  cv.boff_off = cv.corr_off + align_up(4 * static_cast<ptrdiff_t>(cv.rows));
  cv.zero_off = cv.boff_off + align_up(4 * static_cast<ptrdiff_t>(cv.nq));
  cv.runs_off = cv.zero_off + align_up(cv.in_w);
  cv.nruns_off = cv.runs_off + align_up(static_cast<ptrdiff_t>(sizeof(CanvasRun)) * cv.panels * kMaxRuns);
  cv.shared = cv.nruns_off + align_up(4 * static_cast<ptrdiff_t>(cv.panels));
  // Slot: encoded raw planes (row/column quads), expanded planes.
  cv.raw_off = 0;
  cv.exp_off = cv.raw_off + (channel ? 0 : cv.n_in * cv.raw_bytes);
  cv.slot = cv.exp_off + align_up(cv.nplanes * cv.plane_words * 4);
  return cv;
}

// Channel quads or row/column quads: fewer vector products, counting the expansion of the
// planes (about 3 words per vector product's time).
bool channel_quads(const Conv2dShape& s, bool dx) {
  const auto cost = [&](bool channel) {
    const Canvas cv = canvas_geometry(s, dx, channel);
    return static_cast<std::int64_t>(cv.rows) * cv.panels * cv.nq + cv.nplanes * cv.plane_words / 3;
  };
  return cost(true) <= cost(false);
}

Canvas canvas_of(const Conv2dShape& s, bool dx) { return canvas_geometry(s, dx, channel_quads(s, dx)); }

// One sample: in [n_in, in_h, in_w] → out [rows, out_h, out_w].
void canvas_sample(const MicroKernel& micro, const Canvas& cv, const TilePlan& plan, const std::int8_t* in,
                   std::int32_t* out, const std::uint8_t* shared, std::uint8_t* slot) {
  const auto* apack = reinterpret_cast<const std::int8_t*>(shared + cv.a_off);
  const auto* corr = reinterpret_cast<const std::int32_t*>(shared + cv.corr_off);
  const auto* boff = reinterpret_cast<const std::int32_t*>(shared + cv.boff_off);
  const auto* zero = reinterpret_cast<const std::int8_t*>(shared + cv.zero_off);
  const auto* runs = reinterpret_cast<const CanvasRun*>(shared + cv.runs_off);
  const auto* nruns = reinterpret_cast<const std::int32_t*>(shared + cv.nruns_off);
  std::uint8_t* ex = slot + cv.exp_off;
  const ptrdiff_t in_plane = static_cast<ptrdiff_t>(cv.in_h) * cv.in_w;
  const ptrdiff_t plane_bytes = cv.plane_words * 4;
  // Expanded planes: encoded zeros everywhere, then the input rows.
  if (cv.channel_quads) {
    std::memset(ex, micro.b_bias, static_cast<std::size_t>(cv.nplanes * plane_bytes));
    for (int j = 0; j < cv.nplanes; ++j) {
      const std::int8_t* src[4];
      for (int s = 0; s < 4; ++s) src[s] = 4 * j + s < cv.n_in ? in + (4 * j + s) * in_plane : nullptr;
      for (int r = 0; r < cv.in_h; ++r) {
        const std::int8_t* row[4];
        for (int s = 0; s < 4; ++s) row[s] = src[s] != nullptr ? src[s] + r * cv.in_w : zero;
        interleave4(ex + j * plane_bytes + 4 * (cv.origin + static_cast<ptrdiff_t>(r) * cv.wc), row[0], row[1], row[2],
                    row[3], cv.in_w, micro.b_bias);
      }
    }
  } else {
    std::uint8_t* raw = slot + cv.raw_off;
    const RowCol rcq = rowcol_of(cv.k);
    const int per = rcq.planes_per_input();
    const int n = static_cast<int>(cv.plane_words);
    for (int c = 0; c < cv.n_in; ++c) {
      std::uint8_t* rc = raw + c * cv.raw_bytes;
      std::memset(rc, micro.b_bias, static_cast<std::size_t>(cv.raw_bytes));
      for (int r = 0; r < cv.in_h; ++r)
        copy_xor_row(rc + cv.origin + static_cast<ptrdiff_t>(r) * cv.wc, in + c * in_plane + r * cv.in_w, cv.in_w, micro.b_bias);
      const auto* rs = reinterpret_cast<const std::int8_t*>(rc);
      std::uint8_t* e0 = ex + c * per * plane_bytes;
      if (rcq.has_row()) interleave4(e0, rs, rs + 1, rs + 2, rs + 3, n, 0);
      if (rcq.has_col()) {
        const ptrdiff_t w = cv.wc;
        interleave4(e0 + (rcq.has_row() ? plane_bytes : 0), rs, rs + w, rs + 2 * w, rs + 3 * w, n, 0);
      }
    }
  }
  // Tiles: rows × groups of position vectors, stored straight into the output planes.
  const ptrdiff_t out_plane = static_cast<ptrdiff_t>(cv.out_h) * cv.out_w;
  MicroArgs a;  // the fields every tile shares; the loops set the rest
  a.nq = cv.nq;
  a.a_step = 4 * static_cast<ptrdiff_t>(cv.rows);
  a.b_off = boff;
  a.ldc = out_plane;
  for (int rb = 0; rb < plan.row_blocks; ++rb) {
    int m0, mr;
    block_of(cv.rows, plan.row_blocks, rb, m0, mr);
    a.a = apack + 4 * m0;
    a.c = out + m0 * out_plane;
    a.corr = corr + m0;
    const MicroFn tile = micro.tile_fn(false, mr, plan.nv);  // every group but a narrower last
    for (int gi = 0; gi < plan.groups; ++gi) {
      const int p0 = gi * plan.nv, nv = std::min(plan.nv, cv.panels - p0);
      a.b = ex + 4 * (cv.pos0 + static_cast<ptrdiff_t>(p0) * kLanes);
      a.n_valid = std::min(nv * kLanes, cv.npos - p0 * kLanes);
      a.runs = runs + p0 * kMaxRuns;
      a.nruns = nruns + p0;
      (nv == plan.nv ? tile : micro.tile_fn(false, mr, nv))(a);
    }
  }
}

}  // namespace

bool channel_quads(const Conv2dShape& s, bool dx) {
  const auto cost = [&](bool channel) {
    const Canvas cv = canvas_geometry(s, dx, channel);
    return static_cast<std::int64_t>(cv.rows) * cv.panels * cv.nq + cv.nplanes * cv.plane_words / 3;
  };
  return cost(true) <= cost(false);
}

ptrdiff_t canvas_scratch(const Conv2dShape& s, bool dx, int threads) {
  const Canvas cv = canvas_of(s, dx);
  return cv.shared + threads * cv.slot;
}

void canvas_conv(const MicroKernel& micro, const Conv2dShape& s, bool dx, const std::int8_t* in, const std::int8_t* w,
                 std::int32_t* out, void* scratch) {
  const Canvas cv = canvas_of(s, dx);
  std::uint8_t* base = aligned_base(scratch);
  // Shared: weights packed [q][row][s], corrections 128·Σ of each row's weights, quad offsets.
  auto* apack = reinterpret_cast<std::int8_t*>(base + cv.a_off);
  auto* corr = reinterpret_cast<std::int32_t*>(base + cv.corr_off);
  auto* boff = reinterpret_cast<std::int32_t*>(base + cv.boff_off);
  std::memset(base + cv.zero_off, 0, static_cast<std::size_t>(cv.in_w));
  for (int m = 0; m < cv.rows; ++m) corr[m] = 0;
  for (int q = 0; q < cv.nq; ++q) {
    const Quad qd = quad_of(cv, q);
    boff[q] = static_cast<std::int32_t>(4 * (qd.plane * cv.plane_words + qd.off));
    for (int m = 0; m < cv.rows; ++m)
      for (int sub = 0; sub < 4; ++sub) {
        const std::int8_t v = quad_weight(cv, s, w, m, qd, sub);
        apack[(static_cast<ptrdiff_t>(q) * cv.rows + m) * 4 + sub] = v;
        corr[m] += 128 * v;
      }
  }
  canvas_runs(cv.panels, cv.npos, cv.wc, cv.out_w, cv.out_col0, reinterpret_cast<CanvasRun*>(base + cv.runs_off),
              reinterpret_cast<std::int32_t*>(base + cv.nruns_off));
  const TilePlan plan = plan_tiles(micro, false, cv.rows, cv.panels);
  const ptrdiff_t in_sz = static_cast<ptrdiff_t>(cv.n_in) * cv.in_h * cv.in_w;
  const ptrdiff_t out_sz = static_cast<ptrdiff_t>(cv.rows) * cv.out_h * cv.out_w;
  const std::int64_t macs = static_cast<std::int64_t>(s.batch) * out_sz * cv.nq * 4;
  with_team(go_parallel(macs), [&](bool team) {
    std::uint8_t* slot = base + cv.shared + thread_slot(team) * cv.slot;
    team_for(team, s.batch, [&](int b) { canvas_sample(micro, cv, plan, in + b * in_sz, out + b * out_sz, base, slot); });
  });
}

}  // namespace zt::kernels::s8
