# Runs the same int8 experiment with the host build (HOST_EXE) and the target build (EXE, through
# the emulator EMU) and fails unless both report the same weights_digest in summary.json, i.e.
# bit-identical int8 weights on x86-64 and the target architecture.
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
  string(JSON digest_${side} GET "${summary}" weights_digest)
endforeach()
message(STATUS "weights digest: host ${digest_host}, target ${digest_target}")
if(NOT digest_host STREQUAL digest_target)
  message(FATAL_ERROR "int8 weights differ between host (${digest_host}) and target (${digest_target})")
endif()
