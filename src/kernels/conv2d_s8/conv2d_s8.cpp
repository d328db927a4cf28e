// The optimised int8 convolution (every path but the reference), each path on its own
// micro-kernel (linear_s8/gemm_s8_internal.hpp), one sample at a time, samples split over threads (each thread owns a scratch slot).
//
// Forward and input gradient: direct correlation on a "canvas". The input planes are laid out
// zero-padded with row stride wc = W + 2·pad (forward: x padded by pad; input gradient: e placed
// so that every flipped tap lands inside), and an output position is a canvas index
// P = row·wc + col, so a kernel tap (ky, kx) is a constant shift of P. The reduction runs over
// quads of 4 terms that share one 32-bit word of an "expanded" plane (an interleave of 4 shifted
// copies of the input): either 4 channels at one tap (channel quads), or 4 neighbouring taps of
// one kernel row or column of one channel (row/column quads: k = 5 covers its 25 taps with 7
// quads), whichever costs less. Lanes are 16 consecutive canvas positions, so the B vector of a
// quad is a plain unaligned load from an expanded plane; rows are output channels (forward) or
// input channels (input gradient), the weights are packed once per call as the broadcast
// operand, and the k − 1 dropped columns past each output row are skipped by the store.
//
// Weight gradient, two forms chosen by the number of vector products:
//   lanes: g[o][c,ky,kx] = Σ_P ecanvas[o][P] · xpad[c][P + ky·wc + kx] with rows = the C·k·k
//     taps (broadcast words of 4 consecutive positions, read straight from the padded x) and
//     lanes = output channels (e packed [position quad][o][4]); a thread adds its samples in
//     int32 (at most kMaxTerms products) before moving the sums into an int64 partial.
//   dot (few output channels, long rows: LeNet conv1): both operands are 64-byte runs of canvas
//     positions (x + 128 and e), 16 lane partial sums per (o, tap) kept across samples and
//     reduced into int64 every few samples.
// The threads' int64 partials are added and saturated to int32 at the end.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#ifdef ZT_OPENMP
#include <omp.h>
#endif

#include "../linear_s8/gemm_s8_internal.hpp"
#include "zotrain/core/error.hpp"
#include "zotrain/kernels/conv2d_s8.hpp"
#include "../select_isa.hpp"

namespace zt::kernels {
namespace s8 {
namespace {

constexpr ptrdiff_t kAlign = 64;
inline ptrdiff_t align_up(ptrdiff_t v) { return round_up(v, kAlign); }

void check_shape(const Conv2dShape& s) {
  ZT_CHECK(s.batch >= 0 && s.in_c > 0 && s.out_c > 0 && s.kernel > 0 && s.pad >= 0);
  ZT_CHECK(s.in_h > 0 && s.in_w > 0 && s.out_h() > 0 && s.out_w() > 0);
}

int thread_slot(bool team) {
#ifdef ZT_OPENMP
  return team ? omp_get_thread_num() : 0;
#else
  (void)team;
  return 0;
#endif
}

std::uint8_t* aligned_base(void* scratch) {
  const auto p = reinterpret_cast<std::uintptr_t>(scratch);
  return reinterpret_cast<std::uint8_t*>((p + kAlign - 1) / kAlign * kAlign);
}

// dst[r·ld_dst + i] = src[r·ld_src + i] for r < rows, i < n.
template <class T>
void copy_rows(T* __restrict dst, ptrdiff_t ld_dst, const T* __restrict src, ptrdiff_t ld_src, int rows, int n) {
  for (int r = 0; r < rows; ++r) copy_row(dst + r * ld_dst, src + r * ld_src, n);
}

// ---- canvas correlation (forward, input gradient) --------------------------------------------

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

// ---- weight gradient -----------------------------------------------------------------------

struct Dw {
  int wc = 0, nq = 0, panels = 0, opad = 0, ckk = 0;
  ptrdiff_t pstride = 0;  // bytes per padded x plane
  int nrows = 0;          // canvas rows of a padded x plane (pstride / wc, rounded up)
  // slot layout (bytes): padded x [C][pstride], row sums [C][nrows + 1], tap corrections [ckk],
  // tap offsets in the padded x [ckk], packed e [nq][opad][4], e canvas [O][4·nq],
  // g32 [ckk][opad], g64 [O][ckk]
  ptrdiff_t xp_off = 0, rsum_off = 0, corr_off = 0, tap_off = 0, epk_off = 0, ecan_off = 0, g32_off = 0, g64_off = 0,
            slot = 0;
};

Dw dw_of(const Conv2dShape& s) {
  Dw d;
  const int k = s.kernel, oh = s.out_h();
  d.wc = s.in_w + 2 * s.pad;
  d.nq = ceil_div(oh * d.wc, 4);
  d.panels = ceil_div(s.out_c, kLanes);
  d.opad = d.panels * kLanes;
  d.ckk = s.in_c * k * k;
  const ptrdiff_t hp = s.in_h + 2 * s.pad;
  // Tap (ky, kx) reads bytes [ky·wc + kx, ky·wc + kx + 4·nq) of its channel's plane.
  d.pstride = align_up(std::max(hp * d.wc, static_cast<ptrdiff_t>(k - 1) * d.wc + (k - 1) + 4 * d.nq));
  d.nrows = static_cast<int>(d.pstride / d.wc) + 1;
  d.xp_off = 0;
  d.rsum_off = d.xp_off + s.in_c * d.pstride;
  d.corr_off = d.rsum_off + align_up(4 * static_cast<ptrdiff_t>(s.in_c) * (d.nrows + 1));
  d.tap_off = d.corr_off + align_up(4 * static_cast<ptrdiff_t>(d.ckk));
  d.epk_off = d.tap_off + align_up(static_cast<ptrdiff_t>(sizeof(ptrdiff_t)) * d.ckk);
  d.ecan_off = d.epk_off + align_up(static_cast<ptrdiff_t>(d.nq) * d.opad * 4);
  d.g32_off = d.ecan_off + align_up(static_cast<ptrdiff_t>(s.out_c) * d.nq * 4);
  d.g64_off = d.g32_off + align_up(4 * static_cast<ptrdiff_t>(d.ckk) * d.opad);
  d.slot = d.g64_off + align_up(8 * static_cast<ptrdiff_t>(s.out_c) * d.ckk);
  return d;
}

// Vector-dot weight gradient: per thread, x on an encoded canvas (x + 128, stride wc, zero
// padding = 0x80), e on a plain canvas [O][steps·64] (zero in the dropped columns and past the
// end), lane partials part[O][ckk][16] summed over samples, Σe per channel, int64 results.
struct DwDot {
  int wc = 0, steps = 0, ckk = 0;
  ptrdiff_t pstride = 0, erow = 0;
  ptrdiff_t xp_off = 0, ecan_off = 0, tap_off = 0, part_off = 0, esum_off = 0, g64_off = 0, slot = 0;
};

DwDot dw_dot_of(const Conv2dShape& s) {
  DwDot d;
  const int k = s.kernel;
  d.wc = s.in_w + 2 * s.pad;
  d.steps = ceil_div(s.out_h() * d.wc, kVecBytes);
  d.ckk = s.in_c * k * k;
  d.erow = static_cast<ptrdiff_t>(d.steps) * kVecBytes;
  const ptrdiff_t hp = s.in_h + 2 * s.pad;
  d.pstride = align_up(std::max(hp * d.wc, static_cast<ptrdiff_t>(k - 1) * d.wc + (k - 1) + d.erow));
  d.xp_off = 0;
  d.ecan_off = d.xp_off + s.in_c * d.pstride;
  d.tap_off = d.ecan_off + align_up(s.out_c * d.erow);
  d.part_off = d.tap_off + align_up(static_cast<ptrdiff_t>(sizeof(ptrdiff_t)) * d.ckk);
  d.esum_off = d.part_off + align_up(static_cast<ptrdiff_t>(s.out_c) * d.ckk * kLanes * 4);
  d.g64_off = d.esum_off + align_up(8 * static_cast<ptrdiff_t>(s.out_c));
  d.slot = d.g64_off + align_up(8 * static_cast<ptrdiff_t>(s.out_c) * d.ckk);
  return d;
}

// The dot form issues O·ckk·steps vector products per sample, the lane form ckk·⌈O/16⌉·nq.
bool dw_dot(const Conv2dShape& s) {
  const Dw l = dw_of(s);
  const DwDot d = dw_dot_of(s);
  return static_cast<std::int64_t>(s.out_c) * d.steps < static_cast<std::int64_t>(l.panels) * l.nq;
}

// g = saturate(Σ of the int64 partials of the first `slots` slots, `stride` bytes apart).
void reduce_slots(const std::uint8_t* first, ptrdiff_t stride, int slots, ptrdiff_t n, std::int32_t* g) {
  const auto* p0 = reinterpret_cast<const std::int64_t*>(first);
  const ptrdiff_t step = stride / 8;
  for (ptrdiff_t i = 0; i < n; ++i) {
    std::int64_t v = p0[i];
    for (int t = 1; t < slots; ++t) v += p0[t * step + i];
    g[i] = static_cast<std::int32_t>(std::clamp<std::int64_t>(v, INT32_MIN, INT32_MAX));
  }
}

void dw_dot_run(const MicroKernel& micro, const Conv2dShape& s, const std::int8_t* x, const std::int8_t* e, std::int32_t* g,
                std::uint8_t* base) {
  const int k = s.kernel, oh = s.out_h(), ow = s.out_w(), c_n = s.in_c, o_n = s.out_c;
  const DwDot d = dw_dot_of(s);
  const ptrdiff_t gsz = static_cast<ptrdiff_t>(o_n) * d.ckk;
  const ptrdiff_t x_sz = static_cast<ptrdiff_t>(c_n) * s.in_h * s.in_w, e_sz = static_cast<ptrdiff_t>(o_n) * oh * ow;
  // Each lane adds 4 products per step: a flush every max_samples samples keeps a lane's int32
  // sum within kMaxTerms products.
  const int max_samples = std::max(1, kMaxTerms / (4 * d.steps));
  ZT_CHECK_MSG(4 * static_cast<std::int64_t>(d.steps) <= kMaxTerms, "conv2d_s8: output plane too large");
  const int ob_n = ceil_div(o_n, kDotOb), tb_n = ceil_div(d.ckk, kDotTb);
  const std::int64_t macs = static_cast<std::int64_t>(s.batch) * gsz * d.steps * kVecBytes;
  int team_size = 1;
  with_team(go_parallel(macs), [&](bool team) {
    const int slot_i = thread_slot(team);
#ifdef ZT_OPENMP
    if (team && slot_i == 0) team_size = omp_get_num_threads();
#endif
    std::uint8_t* sl = base + slot_i * d.slot;
    std::uint8_t* xp = sl + d.xp_off;
    auto* ecan = reinterpret_cast<std::int8_t*>(sl + d.ecan_off);
    auto* tap_off = reinterpret_cast<ptrdiff_t*>(sl + d.tap_off);
    auto* part = reinterpret_cast<std::int32_t*>(sl + d.part_off);
    auto* esum = reinterpret_cast<std::int64_t*>(sl + d.esum_off);
    auto* g64 = reinterpret_cast<std::int64_t*>(sl + d.g64_off);
    std::memset(xp, micro.b_bias, static_cast<std::size_t>(c_n * d.pstride));
    std::memset(ecan, 0, static_cast<std::size_t>(o_n * d.erow));
    std::fill_n(part, gsz * kLanes, 0);
    std::fill_n(esum, o_n, 0);
    std::fill_n(g64, gsz, 0);
    for (int c = 0, t = 0; c < c_n; ++c)
      for (int ky = 0; ky < k; ++ky)
        for (int kx = 0; kx < k; ++kx, ++t) tap_off[t] = c * d.pstride + static_cast<ptrdiff_t>(ky) * d.wc + kx;
    int samples = 0;  // in part since the last flush
    const auto flush = [&] {
      for (int o = 0; o < o_n; ++o)
        for (int t = 0; t < d.ckk; ++t) {
          const std::int32_t* v = part + (static_cast<ptrdiff_t>(o) * d.ckk + t) * kLanes;
          std::int64_t h = 0;
          for (int l = 0; l < kLanes; ++l) h += v[l];
          g64[static_cast<ptrdiff_t>(o) * d.ckk + t] += h - 128 * esum[o];
        }
      std::fill_n(part, gsz * kLanes, 0);
      std::fill_n(esum, o_n, 0);
      samples = 0;
    };
    team_for(team, s.batch, [&](int b) {
      if (samples == max_samples) flush();
      const std::int8_t* xb = x + b * x_sz;
      const std::int8_t* eb = e + b * e_sz;
      for (int c = 0; c < c_n; ++c)
        for (int r = 0; r < s.in_h; ++r)
          copy_xor_row(xp + c * d.pstride + static_cast<ptrdiff_t>(r + s.pad) * d.wc + s.pad,
                       xb + (static_cast<ptrdiff_t>(c) * s.in_h + r) * s.in_w, s.in_w, micro.b_bias);
      for (int o = 0; o < o_n; ++o) {
        const std::int8_t* eo = eb + static_cast<ptrdiff_t>(o) * oh * ow;
        copy_rows(ecan + o * d.erow, d.wc, eo, ow, oh, ow);
        esum[o] += sum_s8(eo, static_cast<ptrdiff_t>(oh) * ow);
      }
      for (int obi = 0; obi < ob_n; ++obi) {
        int o0, ob;
        block_of(o_n, ob_n, obi, o0, ob);
        const std::int8_t* erows[kDotOb];
        for (int i = 0; i < ob; ++i) erows[i] = ecan + (o0 + i) * d.erow;
        for (int tbi = 0; tbi < tb_n; ++tbi) {
          int t0, tb;
          block_of(d.ckk, tb_n, tbi, t0, tb);
          const std::uint8_t* xrows[kDotTb];
          for (int i = 0; i < tb; ++i) xrows[i] = xp + tap_off[t0 + i];
          DotArgs a;
          a.steps = d.steps;
          a.x = xrows;
          a.e = erows;
          a.part = part + (static_cast<ptrdiff_t>(o0) * d.ckk + t0) * kLanes;
          a.ld = d.ckk;
          micro.run_dot(ob, tb, a);
        }
      }
      ++samples;
    });
    if (samples > 0) flush();
  });
  reduce_slots(base + d.g64_off, d.slot, team_size, gsz, g);
}

}  // namespace

bool conv_dw_uses_dot(const Conv2dShape& s) {
  check_shape(s);
  return dw_dot(s);
}

bool conv_uses_channel_quads(const Conv2dShape& s, bool backward_input) {
  check_shape(s);
  return channel_quads(s, backward_input);
}

void conv2d_forward(const MicroKernel& micro, const Conv2dShape& s, const std::int8_t* x, const std::int8_t* w,
                    std::int32_t* y, void* scratch) {
  check_shape(s);
  ZT_CHECK_MSG(static_cast<std::int64_t>(s.in_c) * s.kernel * s.kernel <= kMaxTerms,
               "conv2d_s8: C·k·k > 65536 could overflow int32");
  if (s.batch == 0) return;
  ZT_CHECK(scratch != nullptr);
  canvas_conv(micro, s, false, x, w, y, scratch);
}

void conv2d_backward_input(const MicroKernel& micro, const Conv2dShape& s, const std::int8_t* e,
                           const std::int8_t* w, std::int32_t* dx, void* scratch) {
  check_shape(s);
  ZT_CHECK_MSG(static_cast<std::int64_t>(s.out_c) * s.kernel * s.kernel <= kMaxTerms,
               "conv2d_s8: O·k·k > 65536 could overflow int32");
  if (s.batch == 0) return;
  ZT_CHECK(scratch != nullptr);
  canvas_conv(micro, s, true, e, w, dx, scratch);
}

void conv2d_backward_weights(const MicroKernel& micro, const Conv2dShape& s, const std::int8_t* x,
                             const std::int8_t* e, std::int32_t* g, void* scratch) {
  check_shape(s);
  const int k = s.kernel, oh = s.out_h(), ow = s.out_w(), c_n = s.in_c, o_n = s.out_c;
  const ptrdiff_t gsz = static_cast<ptrdiff_t>(o_n) * c_n * k * k;
  if (s.batch == 0) {
    std::fill_n(g, gsz, 0);
    return;
  }
  ZT_CHECK(scratch != nullptr);
  std::uint8_t* base = aligned_base(scratch);
  if (dw_dot(s)) {
    dw_dot_run(micro, s, x, e, g, base);
    return;
  }
  const Dw d = dw_of(s);
  const TilePlan plan = plan_tiles(micro, true, d.ckk, d.panels);
  const ptrdiff_t x_sz = static_cast<ptrdiff_t>(c_n) * s.in_h * s.in_w, e_sz = static_cast<ptrdiff_t>(o_n) * oh * ow;
  // Quads per micro-kernel call: ≤ kMaxTerms products in one int32 sum.
  const int max_call_q = kMaxTerms / 4;
  const std::int64_t macs = static_cast<std::int64_t>(s.batch) * d.ckk * o_n * d.nq * 4;
  int team_size = 1;
  with_team(go_parallel(macs), [&](bool team) {
    const int slot_i = thread_slot(team);
#ifdef ZT_OPENMP
    if (team && slot_i == 0) team_size = omp_get_num_threads();
#endif
    std::uint8_t* sl = base + slot_i * d.slot;
    auto* xp = reinterpret_cast<std::int8_t*>(sl + d.xp_off);
    auto* rsum = reinterpret_cast<std::int32_t*>(sl + d.rsum_off);
    auto* corr_all = reinterpret_cast<std::int32_t*>(sl + d.corr_off);
    auto* tap_off = reinterpret_cast<ptrdiff_t*>(sl + d.tap_off);
    std::uint8_t* epk = sl + d.epk_off;
    std::uint8_t* ecan = sl + d.ecan_off;
    auto* g32 = reinterpret_cast<std::int32_t*>(sl + d.g32_off);
    auto* g64 = reinterpret_cast<std::int64_t*>(sl + d.g64_off);
    std::fill_n(g64, gsz, 0);
    for (int c = 0, t = 0; c < c_n; ++c)
      for (int ky = 0; ky < k; ++ky)
        for (int kx = 0; kx < k; ++kx, ++t) tap_off[t] = c * d.pstride + static_cast<ptrdiff_t>(ky) * d.wc + kx;
    // Encoded zeros: lanes past the channels and (when rows start on a word) the dropped
    // columns are never overwritten.
    std::memset(epk, micro.b_bias, static_cast<std::size_t>(d.nq) * d.opad * 4);
    std::memset(xp, 0, static_cast<std::size_t>(c_n * d.pstride));
    int terms = 0;  // products summed in g32 since it was last moved into g64
    const auto flush = [&] {
      for (int t = 0; t < d.ckk; ++t)
        for (int o = 0; o < o_n; ++o) g64[static_cast<ptrdiff_t>(o) * d.ckk + t] += g32[static_cast<ptrdiff_t>(t) * d.opad + o];
      terms = 0;
    };
    team_for(team, s.batch, [&](int b) {
      // Padded x (plain int8, zero borders) and the sums of its canvas rows: rsum[c][r] = Σ of
      // the bytes before canvas row r.
      const std::int8_t* xb = x + b * x_sz;
      for (int c = 0; c < c_n; ++c) {
        const std::int8_t* xc = xb + static_cast<ptrdiff_t>(c) * s.in_h * s.in_w;
        copy_rows(xp + c * d.pstride + static_cast<ptrdiff_t>(s.pad) * d.wc + s.pad, d.wc, xc, s.in_w, s.in_h, s.in_w);
        std::int32_t* rs = rsum + c * (d.nrows + 1);
        rs[0] = 0;
        for (int r = 0; r < d.nrows; ++r) {
          const int xr = r - s.pad;
          rs[r + 1] = rs[r] + (xr >= 0 && xr < s.in_h ? sum_s8_row(xc + static_cast<ptrdiff_t>(xr) * s.in_w, s.in_w) : 0);
        }
      }
      // Σ of the padded plane of channel c before flat index ky·wc + base (base = r0·wc + rem).
      const auto prefix = [&](int c, int ky, int r0, int rem) {
        const ptrdiff_t r = ky + r0;
        return rsum[c * (d.nrows + 1) + r] + sum_s8(xp + c * d.pstride + r * d.wc, rem);
      };
      // e on the canvas (encoded, zero in the dropped columns), then packed [q][o][4].
      const std::int8_t* eb = e + b * e_sz;
      const ptrdiff_t ecan_row = 4 * static_cast<ptrdiff_t>(d.nq);
      const ptrdiff_t q_bytes = static_cast<ptrdiff_t>(d.opad) * 4;
      if (d.wc % 4 == 0) {
        // Rows start on a word: write the words holding e straight into the packed layout (the
        // dropped columns keep the encoded zeros written once per thread).
        const int full = ow / 4, rest = ow % 4;
        for (int o = 0; o < o_n; ++o)
          for (int r = 0; r < oh; ++r) {
            const std::int8_t* src = eb + (static_cast<ptrdiff_t>(o) * oh + r) * ow;
            std::uint8_t* dst = epk + (static_cast<ptrdiff_t>(r) * (d.wc / 4)) * q_bytes + 4 * o;
            for (int i = 0; i < full; ++i) {
              std::uint32_t v;
              std::memcpy(&v, src + 4 * i, 4);
              v ^= 0x01010101u * micro.b_bias;
              std::memcpy(dst + i * q_bytes, &v, 4);
            }
            if (rest > 0) {
              std::uint8_t* dw = dst + full * q_bytes;
              for (int j = 0; j < 4; ++j)
                dw[j] = j < rest ? static_cast<std::uint8_t>(static_cast<std::uint8_t>(src[4 * full + j]) ^ micro.b_bias) : micro.b_bias;
            }
          }
      } else {
        std::memset(ecan, micro.b_bias, static_cast<std::size_t>(o_n * ecan_row));
        for (int o = 0; o < o_n; ++o)
          for (int r = 0; r < oh; ++r)
            copy_xor_row(ecan + o * ecan_row + static_cast<ptrdiff_t>(r) * d.wc, eb + (static_cast<ptrdiff_t>(o) * oh + r) * ow,
                         ow, micro.b_bias);
        for (int o = 0; o < o_n; ++o) {
          const std::uint8_t* src = ecan + o * ecan_row;
          std::uint8_t* dst = epk + 4 * o;
          for (int q = 0; q < d.nq; ++q) std::memcpy(dst + q * q_bytes, src + 4 * q, 4);
        }
      }
      for (int q0 = 0; q0 < d.nq; q0 += max_call_q) {
        const int nq = std::min(max_call_q, d.nq - q0);
        if (terms + 4 * nq > kMaxTerms) flush();
        // Tap (c, ky, kx) reads x bytes [i, i + 4·nq), i = ky·wc + kx + 4·q0: its correction is
        // 128 · (prefix(i + 4·nq) − prefix(i)), stepped along kx.
        const int b1 = 4 * q0, b2 = b1 + 4 * nq;
        const int r1 = b1 / d.wc, rem1 = b1 % d.wc, r2 = b2 / d.wc, rem2 = b2 % d.wc;
        for (int c = 0; c < c_n; ++c)
          for (int ky = 0; ky < k; ++ky) {
            const ptrdiff_t i1 = static_cast<ptrdiff_t>(ky) * d.wc + b1, i2 = i1 + 4 * nq;
            std::int32_t s1 = prefix(c, ky, r1, rem1), s2 = prefix(c, ky, r2, rem2);
            const std::int8_t* pc = xp + c * d.pstride;
            std::int32_t* ct = corr_all + (c * k + ky) * k;
            for (int kx = 0; kx < k; ++kx) {
              ct[kx] = 128 * (s2 - s1);
              if (kx + 1 < k) s1 += pc[i1 + kx], s2 += pc[i2 + kx];
            }
          }
        for (int rb = 0; rb < plan.row_blocks; ++rb) {
          int t0, mr;
          block_of(d.ckk, plan.row_blocks, rb, t0, mr);
          const std::int8_t* rows[16];
          for (int m = 0; m < mr; ++m) rows[m] = xp + tap_off[t0 + m] + 4 * static_cast<ptrdiff_t>(q0);
          for (int gi = 0; gi < plan.groups; ++gi) {
            const int p0 = gi * plan.nv, nv = std::min(plan.nv, d.panels - p0);
            MicroArgs a;
            a.nq = nq;
            a.a_rows = rows;
            a.a_step = 4;
            a.b = epk + static_cast<ptrdiff_t>(q0) * d.opad * 4 + p0 * kVecBytes;
            a.b_step = static_cast<ptrdiff_t>(d.opad) * 4;
            a.c = g32 + static_cast<ptrdiff_t>(t0) * d.opad + p0 * kLanes;
            a.ldc = d.opad;
            a.n_valid = std::min(nv * kLanes, o_n - p0 * kLanes);
            a.corr = corr_all + t0;
            a.accumulate = terms > 0;
            micro.tile_fn(true, mr, nv)(a);
          }
        }
        terms += 4 * nq;
      }
    });
    if (terms > 0) flush();
  });
  reduce_slots(base + d.g64_off, d.slot, team_size, gsz, g);
}

}  // namespace s8

std::size_t conv2d_s8_scratch_bytes(const Conv2dShape& s, int threads) {
  s8::check_shape(s);
  ZT_CHECK(threads >= 1);
  if (s.batch == 0) return 0;
  const s8::Canvas f = s8::canvas_of(s, false), b = s8::canvas_of(s, true);
  const s8::ptrdiff_t dw = threads * (s8::dw_dot(s) ? s8::dw_dot_of(s).slot : s8::dw_of(s).slot);
  const s8::ptrdiff_t need = std::max({f.shared + threads * f.slot, b.shared + threads * b.slot, dw});
  return static_cast<std::size_t>(need + s8::kAlign);  // + room to align the base
}

// The public functions of each path: the algorithms above on that path's micro-kernel.
#define ZT_CONV2D_S8_PATH(path)                                                                    \
  void conv2d_forward_s8_##path(const Conv2dShape& s, const std::int8_t* x, const std::int8_t* w,  \
                                std::int32_t* y, void* scratch) {                                  \
    s8::conv2d_forward(s8::micro_kernel_##path, s, x, w, y, scratch);                              \
  }                                                                                                \
  void conv2d_backward_input_s8_##path(const Conv2dShape& s, const std::int8_t* e,                 \
                                       const std::int8_t* w, std::int32_t* dx, void* scratch) {    \
    s8::conv2d_backward_input(s8::micro_kernel_##path, s, e, w, dx, scratch);                      \
  }                                                                                                \
  void conv2d_backward_weights_s8_##path(const Conv2dShape& s, const std::int8_t* x,               \
                                         const std::int8_t* e, std::int32_t* g, void* scratch) {   \
    s8::conv2d_backward_weights(s8::micro_kernel_##path, s, x, e, g, scratch);                     \
  }
ZT_CONV2D_S8_PATH(portable)
#if defined(ZT_HAVE_AVX512_VNNI)
ZT_CONV2D_S8_PATH(avx512_vnni)
#endif
#if defined(ZT_HAVE_AVX2)
ZT_CONV2D_S8_PATH(avx2)
#endif
#if defined(ZT_HAVE_NEON)
ZT_CONV2D_S8_PATH(neon)
#endif
#if defined(ZT_HAVE_NEON_DOT)
ZT_CONV2D_S8_PATH(neon_dot)
#endif
#undef ZT_CONV2D_S8_PATH

Conv2dForwardS8Fn select_conv2d_forward_s8(Isa isa) {
  return ZT_SELECT_DOT(isa, conv2d_forward_s8);
}
Conv2dBackwardInputS8Fn select_conv2d_backward_input_s8(Isa isa) {
  return ZT_SELECT_DOT(isa, conv2d_backward_input_s8);
}
Conv2dBackwardWeightsS8Fn select_conv2d_backward_weights_s8(Isa isa) {
  return ZT_SELECT_DOT(isa, conv2d_backward_weights_s8);
}

}  // namespace zt::kernels
