# ctest external.ccache: pk's output works with compiler caches and
# distributed builds. Two copies of test/external's project, in two trees at
# different paths (the same layout inside each, as two checkouts of one
# project), are built against one installed pk with ccache as the compiler
# launcher and CCACHE_BASEDIR above both trees:
#   - the generated files (.pk.cpp, .pk.cu, .pk.h) are byte-identical in the
#     two trees (deterministic, no absolute paths), so
#   - the second tree's build is served from the cache: every object a hit,
#     the generated kernel's included;
#   - pkc's depfile is honoured: touching a header the kernel includes makes
#     the build re-run pkc.
#   cmake -DBUILD_DIR=<pk build> -DWORK_DIR=<scratch> -DGENERATOR=<generator>
#         -DCCACHE=<ccache> -P ccache.cmake
# Without ccache it prints "SKIPPED" (ctest's SKIP_REGULAR_EXPRESSION).
foreach(v BUILD_DIR WORK_DIR GENERATOR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "ccache.cmake: -D${v}=... is required")
  endif()
endforeach()
if(NOT CCACHE)
  message("external.ccache SKIPPED: no ccache program (Debian's ccache; "
          "cmake/install-deps.sh installs it)")
  return()
endif()
get_filename_component(src "${CMAKE_CURRENT_LIST_DIR}" ABSOLUTE)
file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")
# The caller's cache settings must not leak in (CCACHE_DISABLE, a remote).
set(cache_env --unset=CCACHE_DISABLE --unset=CCACHE_RECACHE
    "CCACHE_DIR=${WORK_DIR}/ccache" "CCACHE_BASEDIR=${WORK_DIR}" "CCACHE_NOREMOTE=1")

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    list(JOIN ARGN " " cmd)
    message(FATAL_ERROR "failed (${rc}): ${cmd}")
  endif()
endfunction()

# One ccache statistic (`ccache --print-stats`: "name<TAB>value" lines).
function(ccache_stat name out)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E env ${cache_env}
                          "${CCACHE}" --print-stats
                  OUTPUT_VARIABLE stats RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ccache --print-stats failed (${rc})")
  endif()
  if(NOT stats MATCHES "(^|\n)${name}\t([0-9]+)")
    message(FATAL_ERROR "ccache --print-stats has no ${name}:\n${stats}")
  endif()
  set(${out} "${CMAKE_MATCH_2}" PARENT_SCOPE)
endfunction()

run("${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}")

# Two trees, "tree-a" and "tree-bb": different paths, same depth.
foreach(tree tree-a tree-bb)
  file(MAKE_DIRECTORY "${WORK_DIR}/${tree}/app")
  file(COPY "${src}/CMakeLists.txt" "${src}/main.cpp" "${src}/kernels"
       DESTINATION "${WORK_DIR}/${tree}/app")
  run("${CMAKE_COMMAND}" -E env ${cache_env}
      "${CMAKE_COMMAND}" -S "${WORK_DIR}/${tree}/app" -B "${WORK_DIR}/${tree}/app/build"
      -G "${GENERATOR}" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}"
      "-DCMAKE_CXX_COMPILER_LAUNCHER=${CCACHE}")
endforeach()

run("${CMAKE_COMMAND}" -E env ${cache_env} "${CCACHE}" --zero-stats)
run("${CMAKE_COMMAND}" -E env ${cache_env}
    "${CMAKE_COMMAND}" --build "${WORK_DIR}/tree-a/app/build")
ccache_stat(cache_miss first_misses)
if(first_misses LESS 2)
  message(FATAL_ERROR "the first build compiled ${first_misses} objects through "
                      "ccache, expected main.cpp and scale_rows.pk.cpp at least: "
                      "is the launcher used?")
endif()

run("${CMAKE_COMMAND}" -E env ${cache_env} "${CCACHE}" --zero-stats)
run("${CMAKE_COMMAND}" -E env ${cache_env}
    "${CMAKE_COMMAND}" --build "${WORK_DIR}/tree-bb/app/build")
# The generated files are the same bytes in both trees: nothing in them
# depends on where the tree is.
foreach(f scale_rows.pk.cpp scale_rows.pk.cu scale_rows.pk.h)
  set(a "${WORK_DIR}/tree-a/app/build/pk/${f}")
  set(b "${WORK_DIR}/tree-bb/app/build/pk/${f}")
  execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${a}" "${b}"
                  RESULT_VARIABLE differ)
  if(differ)
    message(FATAL_ERROR "${f} differs between two trees at different paths:\n  ${a}\n  ${b}")
  endif()
  file(READ "${a}" text)
  string(FIND "${text}" "${WORK_DIR}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "${f} contains the absolute path ${WORK_DIR}")
  endif()
endforeach()

ccache_stat(cache_miss misses)
ccache_stat(direct_cache_hit direct)
ccache_stat(preprocessed_cache_hit preprocessed)
math(EXPR hits "${direct} + ${preprocessed}")
message("second tree: ${hits} ccache hits (${direct} direct, ${preprocessed} "
        "preprocessed), ${misses} misses; the first compiled ${first_misses}")
if(NOT misses EQUAL 0 OR NOT hits EQUAL first_misses)
  message(FATAL_ERROR "the second tree's build was not served from the cache: "
                      "${misses} misses, ${hits} hits of ${first_misses} objects")
endif()
run("${WORK_DIR}/tree-bb/app/build/app")

# The depfile: a header the kernel includes is a dependency of pkc's rule.
if(GENERATOR MATCHES "Ninja")
  set(header "${WORK_DIR}/tree-bb/app/kernels/scale_rows_eps.h")
  file(WRITE "${header}" "#pragma once\ninline constexpr float scale_rows_eps = 1e-6f;\n")
  file(READ "${WORK_DIR}/tree-bb/app/kernels/scale_rows.cpp" kernel)
  file(WRITE "${WORK_DIR}/tree-bb/app/kernels/scale_rows.cpp"
       "#include \"scale_rows_eps.h\"\n${kernel}")
  run("${CMAKE_COMMAND}" -E env ${cache_env}
      "${CMAKE_COMMAND}" --build "${WORK_DIR}/tree-bb/app/build")
  file(TOUCH "${header}")
  execute_process(COMMAND "${CMAKE_COMMAND}" --build "${WORK_DIR}/tree-bb/app/build"
                          -- -n
                  OUTPUT_VARIABLE plan RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT plan MATCHES "pkc ")
    message(FATAL_ERROR "touching ${header}, which the kernel includes, does "
                        "not re-run pkc (the depfile):\n${plan}")
  endif()
endif()
