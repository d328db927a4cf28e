// Weight gradient of the int8 convolution, in its two forms (conv2d_s8.cpp has the overview):
// lanes (taps × output-channel lanes on the micro-kernel) and dot (vector dot products over
// canvas positions). Integer-only.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "conv2d_s8_internal.hpp"

namespace zt::kernels::s8 {
namespace {

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

// Runs body(team, slot) once per thread of a team (or once on the caller, see with_team) for
// `macs` multiply-adds, slot = the thread's scratch (slot_bytes apart from base), then
// g[0, n) = saturate(Σ of the slots' int64 partials at offset g64_off) in slot order.
template <class Body>
void over_slots(std::int64_t macs, std::uint8_t* base, ptrdiff_t slot_bytes, ptrdiff_t g64_off, ptrdiff_t n,
                std::int32_t* g, const Body& body) {
  int team_size = 1;
  with_team(go_parallel(macs), [&](bool team) {
    const int slot_i = thread_slot(team);
#ifdef ZT_OPENMP
    if (team && slot_i == 0) team_size = omp_get_num_threads();
#endif
    body(team, base + slot_i * slot_bytes);
  });
  reduce_slots(base + g64_off, slot_bytes, team_size, n, g);
}

// tap_off[t] for tap t = (c, ky, kx): its offset in padded x planes pstride bytes apart, rows wc.
void tap_offsets(ptrdiff_t* tap_off, int c_n, int k, ptrdiff_t pstride, int wc) {
  for (int c = 0, t = 0; c < c_n; ++c)
    for (int ky = 0; ky < k; ++ky)
      for (int kx = 0; kx < k; ++kx, ++t) tap_off[t] = c * pstride + static_cast<ptrdiff_t>(ky) * wc + kx;
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
  over_slots(macs, base, d.slot, d.g64_off, gsz, g, [&](bool team, std::uint8_t* sl) {
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
    tap_offsets(tap_off, c_n, k, d.pstride, d.wc);
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
}

void dw_lanes_run(const MicroKernel& micro, const Conv2dShape& s, const std::int8_t* x, const std::int8_t* e,
                  std::int32_t* g, std::uint8_t* base) {
  const int k = s.kernel, oh = s.out_h(), ow = s.out_w(), c_n = s.in_c, o_n = s.out_c;
  const ptrdiff_t gsz = static_cast<ptrdiff_t>(o_n) * c_n * k * k;
  const Dw d = dw_of(s);
  const TilePlan plan = plan_tiles(micro, true, d.ckk, d.panels);
  const ptrdiff_t x_sz = static_cast<ptrdiff_t>(c_n) * s.in_h * s.in_w, e_sz = static_cast<ptrdiff_t>(o_n) * oh * ow;
  // Quads per micro-kernel call: ≤ kMaxTerms products in one int32 sum.
  const int max_call_q = kMaxTerms / 4;
  const std::int64_t macs = static_cast<std::int64_t>(s.batch) * d.ckk * o_n * d.nq * 4;
  over_slots(macs, base, d.slot, d.g64_off, gsz, g, [&](bool team, std::uint8_t* sl) {
    auto* xp = reinterpret_cast<std::int8_t*>(sl + d.xp_off);
    auto* rsum = reinterpret_cast<std::int32_t*>(sl + d.rsum_off);
    auto* corr_all = reinterpret_cast<std::int32_t*>(sl + d.corr_off);
    auto* tap_off = reinterpret_cast<ptrdiff_t*>(sl + d.tap_off);
    std::uint8_t* epk = sl + d.epk_off;
    std::uint8_t* ecan = sl + d.ecan_off;
    auto* g32 = reinterpret_cast<std::int32_t*>(sl + d.g32_off);
    auto* g64 = reinterpret_cast<std::int64_t*>(sl + d.g64_off);
    std::fill_n(g64, gsz, 0);
    tap_offsets(tap_off, c_n, k, d.pstride, d.wc);
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
}

}  // namespace

// The dot form issues O·ckk·steps vector products per sample, the lane form ckk·⌈O/16⌉·nq.
bool dw_dot(const Conv2dShape& s) {
  const Dw l = dw_of(s);
  const DwDot d = dw_dot_of(s);
  return static_cast<std::int64_t>(s.out_c) * d.steps < static_cast<std::int64_t>(l.panels) * l.nq;
}

ptrdiff_t weight_gradient_scratch(const Conv2dShape& s, int threads) {
  return threads * (dw_dot(s) ? dw_dot_of(s).slot : dw_of(s).slot);
}

void weight_gradient(const MicroKernel& micro, const Conv2dShape& s, const std::int8_t* x,
                     const std::int8_t* e, std::int32_t* g, std::uint8_t* base) {
  if (dw_dot(s))
    dw_dot_run(micro, s, x, e, g, base);
  else
    dw_lanes_run(micro, s, x, e, g, base);
}

}  // namespace zt::kernels::s8
