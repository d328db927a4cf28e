// Internal to the kernels: the select_*(Isa) switch, written once. A NEON, AVX-512 VNNI or AVX2
// function is named only in builds that have it (ZT_HAVE_NEON, ZT_HAVE_NEON_DOT,
// ZT_HAVE_AVX512_VNNI, ZT_HAVE_AVX2), so other builds reference no undefined symbol:
// ZT_IF_NEON(a, b) is a there and b elsewhere. For a family named f_ref, f_portable, f_neon (and
// f_neon_dot / f_avx512_vnni / f_avx2 where the dot product changes anything):
//   ZT_NEON_FN(f)         &f_neon where built, else &f_portable
//   ZT_NEON_DOT_FN(f)     &f_neon_dot where built, else ZT_NEON_FN(f)
//   ZT_AVX512_VNNI_FN(f)  &f_avx512_vnni where built, else &f_portable
//   ZT_AVX2_FN(f)         &f_avx2 where built, else &f_portable
//   ZT_SELECT(isa, f)  the select_* body: f_ref, f_portable or f_neon by isa (the one dispatch
//                      of every kernel family; kNeonDot means kNeon, and kAvx512Vnni and kAvx2
//                      mean kPortable here)
//   ZT_SELECT_DOT(isa, f)  the same with f_neon_dot, f_avx512_vnni and f_avx2 (the int8
//                      products)
//   ZT_SELECT_PLAIN(isa, f)  the same as ZT_SELECT for a family whose one plain f is both its
//                      reference and its portable path (exact selections: int8 ReLU and pools),
//                      with f_neon
//   ZT_DEFINE_SELECT(Fn, f)  the definition `Fn select_f(Isa isa)` with the body ZT_SELECT
//                      (ZT_DEFINE_SELECT_DOT, ZT_DEFINE_SELECT_PLAIN: ZT_SELECT_DOT,
//                      ZT_SELECT_PLAIN), so a family's select functions are one line each
#pragma once

#include "zotrain/kernels/isa.hpp"

#if defined(ZT_HAVE_NEON)
#define ZT_IF_NEON(a, b) a
#else
#define ZT_IF_NEON(a, b) b
#endif
#if defined(ZT_HAVE_NEON_DOT)
#define ZT_IF_NEON_DOT(a, b) a
#else
#define ZT_IF_NEON_DOT(a, b) b
#endif
#if defined(ZT_HAVE_AVX512_VNNI)
#define ZT_IF_AVX512_VNNI(a, b) a
#else
#define ZT_IF_AVX512_VNNI(a, b) b
#endif
#if defined(ZT_HAVE_AVX2)
#define ZT_IF_AVX2(a, b) a
#else
#define ZT_IF_AVX2(a, b) b
#endif
#define ZT_NEON_FN(f) ZT_IF_NEON(&f##_neon, &f##_portable)
#define ZT_NEON_DOT_FN(f) ZT_IF_NEON_DOT(&f##_neon_dot, ZT_NEON_FN(f))
#define ZT_AVX512_VNNI_FN(f) ZT_IF_AVX512_VNNI(&f##_avx512_vnni, &f##_portable)
#define ZT_AVX2_FN(f) ZT_IF_AVX2(&f##_avx2, &f##_portable)
#define ZT_SELECT(isa, f)                                                                \
  ::zt::kernels::detail::pick_isa<decltype(&f##_ref)>((isa), &f##_ref, &f##_portable,   \
                                                      ZT_NEON_FN(f), ZT_NEON_FN(f),      \
                                                      &f##_portable, &f##_portable)
#define ZT_SELECT_PLAIN(isa, f)                                                          \
  ::zt::kernels::detail::pick_isa<decltype(&f)>((isa), &f, &f, ZT_IF_NEON(&f##_neon, &f),  \
                                                ZT_IF_NEON(&f##_neon, &f), &f, &f)
#define ZT_SELECT_DOT(isa, f)                                                            \
  ::zt::kernels::detail::pick_isa<decltype(&f##_ref)>((isa), &f##_ref, &f##_portable,   \
                                                      ZT_NEON_FN(f), ZT_NEON_DOT_FN(f),  \
                                                      ZT_AVX512_VNNI_FN(f), ZT_AVX2_FN(f))
#define ZT_DEFINE_SELECT(Fn, f) \
  Fn select_##f(Isa isa) { return ZT_SELECT(isa, f); }
#define ZT_DEFINE_SELECT_DOT(Fn, f) \
  Fn select_##f(Isa isa) { return ZT_SELECT_DOT(isa, f); }
#define ZT_DEFINE_SELECT_PLAIN(Fn, f) \
  Fn select_##f(Isa isa) { return ZT_SELECT_PLAIN(isa, f); }

namespace zt::kernels::detail {

template <class Fn>
constexpr Fn pick_isa(Isa isa, Fn ref, Fn portable, Fn neon, Fn neon_dot, Fn avx512_vnni,
                      Fn avx2) {
  switch (isa) {
    case Isa::kReference: return ref;
    case Isa::kPortable: return portable;
    case Isa::kNeon: return neon;
    case Isa::kNeonDot: return neon_dot;
    case Isa::kAvx512Vnni: return avx512_vnni;
    case Isa::kAvx2: return avx2;
  }
  return portable;
}

}  // namespace zt::kernels::detail
