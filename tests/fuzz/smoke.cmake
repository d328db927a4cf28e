# ctest fuzz.<reader>: fuzzes HARNESS for SECONDS on a fresh copy of SEEDS in WORK (the committed
# corpus is never written to). Fails when libFuzzer reports a crash, leak, timeout or
# out-of-memory; the input that caused it is kept in WORK/artifacts.
# -DHARNESS=... -DSEEDS=dir -DDICT=file -DWORK=dir -DSECONDS=n
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus ${WORK}/artifacts)
file(GLOB seeds ${SEEDS}/*)
file(COPY ${seeds} DESTINATION ${WORK}/corpus)
# A fixed seed fixes libFuzzer's own random choices, not the run: which inputs it keeps depends
# on the coverage each one reaches, and that also depends on state the readers' libraries carry
# from input to input (two runs of fuzz_modelnet40 with -seed=1 -runs=2500 ended with 52 and 56
# corpus inputs). What a smoke run finds is a real bug either way, and its input is kept.
# Exploratory fuzzing, longer and with random seeds, is done by hand (docs/results/fuzz.md).
set(args -seed=1 -max_total_time=${SECONDS} -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
         -artifact_prefix=${WORK}/artifacts/)
if(EXISTS ${DICT})
  list(APPEND args -dict=${DICT})
endif()
execute_process(COMMAND ${HARNESS} ${args} ${WORK}/corpus
                RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
# libFuzzer's log is long: keep its stats and anything about a finding.
string(REGEX MATCHALL "[^\n]*(INFO: Loaded|#[0-9]+[ \t]+DONE|stat::|ERROR|SUMMARY|Test unit written|==[0-9]+==)[^\n]*" lines "${err}")
list(JOIN lines "\n" shown)
message(STATUS "exit code ${code}\n${shown}")
if(NOT code EQUAL 0)
  message(STATUS "full output:\n${out}${err}")
  message(FATAL_ERROR "${HARNESS} found a problem (exit code ${code}); the input is in ${WORK}/artifacts")
endif()
