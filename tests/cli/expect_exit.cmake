# Runs EXE (through EMU when cross-compiling) with ARGS and checks its exit code and output.
# -DEXE=... -DEMU=... -DARGS=a;b;c -DEXPECT_CODE=N -DEXPECT_REGEX=...
set(cmd ${EMU} ${EXE} ${ARGS})
execute_process(COMMAND ${cmd} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "exit code ${code}\nstdout:\n${out}\nstderr:\n${err}")
if(NOT "${code}" STREQUAL "${EXPECT_CODE}")
  message(FATAL_ERROR "expected exit code ${EXPECT_CODE}, got ${code}")
endif()
if(DEFINED EXPECT_REGEX AND NOT "${out}${err}" MATCHES "${EXPECT_REGEX}")
  message(FATAL_ERROR "output does not match '${EXPECT_REGEX}'")
endif()
