# Records the weights digests of every case (tests/cli/digest_cases.cmake) into
# tests/fixtures/digest/digests.json, keeping the other flavours' entries. Run through the build:
#   cmake --build build/host --target record-digests
# Record only from a tree whose results are known good (the digests are the reference that
# later changes are checked against); commit the file with a note of the tree it came from.
include(${CMAKE_CURRENT_LIST_DIR}/digest_cases.cmake)
set(list_file ${OUT}/recorded.txt)
file(REMOVE ${list_file})
foreach(model IN LISTS ZT_DIGEST_MODELS)
  foreach(precision IN LISTS ZT_DIGEST_PRECISIONS)
    foreach(method IN LISTS ZT_DIGEST_METHODS)
      execute_process(COMMAND ${CMAKE_COMMAND} -DEXE=${EXE} "-DEMU=${EMU}" -DSRC=${SRC}
                              -DOUT=${OUT} -DCASE=${model}.${precision}.${method}
                              -DFLAVOUR=${FLAVOUR} -DRECORD=${list_file}
                              -P ${CMAKE_CURRENT_LIST_DIR}/digest_run.cmake
                      RESULT_VARIABLE rc)
      if(NOT rc EQUAL 0)
        message(FATAL_ERROR "recording ${model}.${precision}.${method} failed")
      endif()
    endforeach()
  endforeach()
endforeach()

set(golden_file ${SRC}/tests/fixtures/digest/digests.json)
if(EXISTS ${golden_file})
  file(READ ${golden_file} golden)
else()
  set(golden "{\"about\": \"\", \"digests\": {}}")
endif()
string(JSON golden SET "${golden}" about "\"weights_digest of each case (tests/cli/digest_cases.cmake); int8/... on every architecture, <flavour>/... for FP32 builds of that flavour. Written by the record-digests target.\"")
file(STRINGS ${list_file} lines)
foreach(line IN LISTS lines)
  string(REPLACE " " ";" kv "${line}")
  list(GET kv 0 key)
  list(GET kv 1 digest)
  string(JSON golden SET "${golden}" digests "${key}" "\"${digest}\"")
  message(STATUS "${key} ${digest}")
endforeach()
file(WRITE ${golden_file}.tmp "${golden}\n")
file(RENAME ${golden_file}.tmp ${golden_file})
message(STATUS "wrote ${golden_file}")
