# zt_bit_exact_sources(<dir> <source>...): sources whose floating-point results must be the same
# bits on every ISA and architecture (the Gaussian perturbation, point-cloud augmentation, the
# synthetic shapes). They are compiled without FMA contraction (-ffp-contract=off: GCC would
# otherwise fuse a*b+c where the target has FMA, changing roundings) and with ZT_BIT_EXACT=1,
# which the exact headers (src/kernels/perturb/perturb_internal.hpp, src/data/exact_math.hpp)
# require: a new file that includes one of them without being listed here fails to compile
# instead of silently losing cross-architecture identity. <dir> is the directory whose targets
# compile the sources (source properties are per directory).
function(zt_bit_exact_sources dir)
  set_property(SOURCE ${ARGN} DIRECTORY ${dir} APPEND PROPERTY COMPILE_OPTIONS -ffp-contract=off)
  set_property(SOURCE ${ARGN} DIRECTORY ${dir} APPEND PROPERTY COMPILE_DEFINITIONS ZT_BIT_EXACT=1)
endfunction()
