# Runs one weights-digest case (tests/cli/digest_cases.cmake) and compares its weights_digest with
# the recorded one. -DEXE -DEMU (the cross-compiling emulator, may be empty) -DSRC (source dir)
# -DOUT (work dir) -DCASE=<model>.<precision>.<method> -DFLAVOUR (the FP32 build flavour).
# Int8 digests are the same on every architecture (integer arithmetic); FP32 ones depend on the
# build's vector width and FMA use, so they are recorded per flavour, and a flavour with no
# recording prints ZT_SKIP (the test's SKIP_REGULAR_EXPRESSION).
# With -DRECORD=<file>, appends "<key> <digest>" to <file> instead of comparing.
include(${CMAKE_CURRENT_LIST_DIR}/digest_cases.cmake)
string(REPLACE "." ";" parts "${CASE}")
list(GET parts 0 model)
list(GET parts 1 precision)
list(GET parts 2 method)
if(precision STREQUAL "int8")
  set(key "int8/${CASE}")
else()
  set(key "${FLAVOUR}/${CASE}")
endif()

if(NOT DEFINED RECORD)
  file(READ ${SRC}/tests/fixtures/digest/digests.json golden)
  string(JSON expected ERROR_VARIABLE missing GET "${golden}" digests "${key}")
  if(missing)
    message(STATUS "ZT_SKIP: no digest recorded for ${key} (this build's FP32 flavour is "
                   "${FLAVOUR}; the recorded ones are in tests/fixtures/digest/digests.json)")
    return()
  endif()
endif()

set(synthetic ${OUT}/synthetic)
if(model STREQUAL "pointnet" AND NOT EXISTS ${synthetic}/ply_data_test0.h5)
  execute_process(COMMAND ${EMU} ${EXE} --make-synthetic-modelnet ${synthetic}
                          ${ZT_DIGEST_SYNTHETIC_ARGS}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "writing the synthetic set failed (exit ${rc}):\n${out}\n${err}")
  endif()
endif()
zt_digest_case_args(args ${model} ${precision} ${method} ${synthetic})
execute_process(COMMAND ${EMU} ${EXE} --config ${SRC}/tests/fixtures/digest/${model}.json ${args}
                        --output-dir ${OUT}/${CASE} --overwrite --no-progress -q
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${CASE} failed (exit ${rc}):\n${out}\n${err}")
endif()
file(READ ${OUT}/${CASE}/summary.json summary)
string(JSON digest GET "${summary}" weights_digest)

if(DEFINED RECORD)
  file(APPEND ${RECORD} "${key} ${digest}\n")
  return()
endif()
message(STATUS "${key}: ${digest} (recorded ${expected})")
if(NOT digest STREQUAL expected)
  message(FATAL_ERROR "${key}: weights digest ${digest} differs from the recorded ${expected}: "
                      "this change alters training results")
endif()
