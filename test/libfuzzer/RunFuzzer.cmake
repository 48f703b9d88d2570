# Runs pk-frontend-fuzzer once, bounded, for ctest (libfuzzer.frontend). The corpus is copied into WORK first: libFuzzer writes
# the new inputs it finds into its first corpus directory, and the source
# tree's corpus must change only through a deliberate merge
# (docs/sanitizers-and-fuzzing.md).
#
#   cmake -DFUZZER=<exe> -DCORPUS=<dir> -DDICT=<file> -DWORK=<dir>
#         -DSECONDS=<n, 0: no limit> -DRUNS=<n, 0: the corpus only, no mutation>
#         -P RunFuzzer.cmake
foreach(var FUZZER CORPUS DICT WORK SECONDS RUNS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "RunFuzzer.cmake: -D${var}=... is required")
  endif()
endforeach()

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/corpus" "${WORK}/artifacts")
file(GLOB inputs "${CORPUS}/*")
if(inputs)
  file(COPY ${inputs} DESTINATION "${WORK}/corpus")
endif()

# -timeout: a normal input takes well under a second; 30 s is a hang.
# -rss_limit_mb: Clang needs ~300 MB for one kernel file; 4 GB is a leak or a
#   blow-up. -malloc_limit_mb likewise for a single allocation.
# -close_fd_mask=3: silence the kernels' diagnostics (stdout/stderr); libFuzzer
#   keeps its own copy of stderr for its log and the sanitizers' reports.
# Leak detection stays on: a run through Clang's tooling frees what it
#   allocates, so a leak report is pk's.
set(ENV{UBSAN_OPTIONS} "print_stacktrace=1:halt_on_error=1")
find_program(symbolizer llvm-symbolizer HINTS /usr/lib/llvm-19/bin)
if(symbolizer)
  set(ENV{ASAN_SYMBOLIZER_PATH} "${symbolizer}")
endif()

execute_process(
  COMMAND "${FUZZER}"
          -max_total_time=${SECONDS} -runs=${RUNS}
          -timeout=30 -rss_limit_mb=4096 -malloc_limit_mb=2048
          -close_fd_mask=3 -print_final_stats=1
          "-dict=${DICT}" "-artifact_prefix=${WORK}/artifacts/"
          "${WORK}/corpus"
  WORKING_DIRECTORY "${WORK}"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(GLOB found "${WORK}/artifacts/*")
  message(FATAL_ERROR "pk-frontend-fuzzer failed (exit ${rc}); "
                      "reproducers: ${found}\n"
                      "Replay one with: ${FUZZER} <reproducer>")
endif()
