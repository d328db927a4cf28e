# ctest fuzz.<reader>.regressions: runs HARNESS once on every file of INPUTS (inputs that once
# crashed it; none yet is fine) and of SEEDS. libFuzzer given files only executes them.
# -DHARNESS=... -DINPUTS=dir -DSEEDS=dir
file(GLOB inputs LIST_DIRECTORIES false ${INPUTS}/* ${SEEDS}/*)
list(FILTER inputs EXCLUDE REGEX "/\\.[^/]*$")
list(LENGTH inputs n)
if(n EQUAL 0)
  message(STATUS "no inputs in ${INPUTS} or ${SEEDS}")
  return()
endif()
execute_process(COMMAND ${HARNESS} -timeout=30 -rss_limit_mb=2048 ${inputs}
                RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "exit code ${code} over ${n} inputs")
if(NOT code EQUAL 0)
  message(STATUS "output:\n${out}${err}")
  message(FATAL_ERROR "${HARNESS} fails on an input of ${INPUTS} or ${SEEDS} (exit code ${code})")
endif()
