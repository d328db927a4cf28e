# Runs the same experiment with the host build (HOST_EXE) and the target build (EXE, through the
# emulator EMU) and compares their summary.json:
#   without TOLERANCE: weights_digest must be equal — bit-identical (int8) weights on x86-64 and
#                      the target architecture;
#   with TOLERANCE:    test_loss must agree within it (absolute) — FP32 may differ in the last
#                      bits between architectures (FMA contraction, NEON vs AVX sums); a wrong
#                      kernel moves the loss by orders of magnitude more. CMake's math() is
#                      integer-only, so losses are compared in units of 1e-9.
function(to_nano text out)
  if(NOT text MATCHES "^([0-9]+)(\\.([0-9]*))?$")
    message(FATAL_ERROR "test_loss '${text}' is not a plain non-negative decimal")
  endif()
  set(int "${CMAKE_MATCH_1}")
  string(SUBSTRING "${CMAKE_MATCH_3}000000000" 0 9 frac)
  if(frac MATCHES "^0*([1-9][0-9]*)$")  # math() would read leading zeros as octal
    set(frac "${CMAKE_MATCH_1}")
  else()
    set(frac 0)
  endif()
  math(EXPR v "${int} * 1000000000 + ${frac}")
  set(${out} ${v} PARENT_SCOPE)
endfunction()

if(DEFINED TOLERANCE)
  set(key test_loss)
else()
  set(key weights_digest)
endif()
foreach(side host target)
  if(side STREQUAL "host")
    set(cmd ${HOST_EXE})
  else()
    set(cmd ${EMU} ${EXE})
  endif()
  execute_process(COMMAND ${cmd} --config ${CONFIG} ${ARGS} --output-dir ${OUT}/${side}
                          --overwrite --no-progress -q
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${side} run failed (exit ${rc}):\n${out}\n${err}")
  endif()
  file(READ ${OUT}/${side}/summary.json summary)
  string(JSON ${side} GET "${summary}" ${key})
endforeach()

if(NOT DEFINED TOLERANCE)
  message(STATUS "weights digest: host ${host}, target ${target}")
  if(NOT host STREQUAL target)
    message(FATAL_ERROR "int8 weights differ between host (${host}) and target (${target})")
  endif()
  return()
endif()
to_nano("${host}" nano_host)
to_nano("${target}" nano_target)
to_nano("${TOLERANCE}" nano_tol)
math(EXPR diff "${nano_host} - ${nano_target}")
if(diff LESS 0)
  math(EXPR diff "0 - ${diff}")
endif()
message(STATUS "test loss: host ${host}, target ${target}, |difference| ${diff}e-9 (tolerance ${TOLERANCE})")
if(diff GREATER nano_tol)
  message(FATAL_ERROR "FP32 test loss differs between host (${host}) and target (${target}) by "
                      "more than ${TOLERANCE}")
endif()
