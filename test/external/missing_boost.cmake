# A machine without Boost.Context ([oracle] item 8): configuring pk must stop
# with a message that names the package and the way out, never drop the shim
# and its tests in silence; with that way out (-DPK_BUILD_CUDA_SHIM=OFF) it
# configures, says what it turned off, and registers no test on the shim.
#
#   cmake -DSOURCE_DIR=<pk> -DWORK_DIR=<scratch> -DGENERATOR=<gen>
#         -P missing_boost.cmake
#
# Boost is hidden with CMAKE_DISABLE_FIND_PACKAGE_Boost. Two configures of the
# whole tree, about 5 s each; nothing is built.

foreach(var SOURCE_DIR WORK_DIR GENERATOR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "missing_boost.cmake: -D${var}=... is required")
  endif()
endforeach()

function(configure_pk dir out_rc out_text)
  file(REMOVE_RECURSE "${dir}")
  execute_process(
    COMMAND ${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${dir}" -G "${GENERATOR}"
            -DCMAKE_DISABLE_FIND_PACKAGE_Boost=ON ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(${out_rc} "${rc}" PARENT_SCOPE)
  set(${out_text} "${out}${err}" PARENT_SCOPE)
endfunction()

# 1. Without Boost: an error that names libboost-context-dev and the option.
configure_pk("${WORK_DIR}/default" rc text)
string(REGEX REPLACE "[ \t\r\n]+" " " flat "${text}")
if(rc EQUAL 0)
  message(FATAL_ERROR "configuring without Boost.Context succeeded; it must "
                      "stop with an error:\n${text}")
endif()
foreach(needle "Boost.Context" "libboost-context-dev"
               "-DPK_BUILD_CUDA_SHIM=OFF" "cuda_shim.*, shim.*")
  string(FIND "${flat}" "${needle}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the configure error does not say '${needle}':\n${text}")
  endif()
endforeach()

# 2. With -DPK_BUILD_CUDA_SHIM=OFF: configures, says what is off, and no
# cuda_shim.* or shim.* test exists.
configure_pk("${WORK_DIR}/shim-off" rc text -DPK_BUILD_CUDA_SHIM=OFF)
string(REGEX REPLACE "[ \t\r\n]+" " " flat "${text}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "-DPK_BUILD_CUDA_SHIM=OFF without Boost failed:\n${text}")
endif()
string(FIND "${flat}" "PK_BUILD_CUDA_SHIM=OFF turns off the CUDA shim" at)
if(at EQUAL -1)
  message(FATAL_ERROR "-DPK_BUILD_CUDA_SHIM=OFF does not say what it turned "
                      "off:\n${text}")
endif()
execute_process(COMMAND ${CMAKE_CTEST_COMMAND} -N
                WORKING_DIRECTORY "${WORK_DIR}/shim-off"
                RESULT_VARIABLE rc OUTPUT_VARIABLE tests ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT tests MATCHES "Total Tests: [1-9]")
  message(FATAL_ERROR "ctest -N in the shim-off tree failed:\n${tests}${err}")
endif()
if(tests MATCHES "(^|\n) *Test +#[0-9]+: (cuda_shim|shim)\\.")
  message(FATAL_ERROR "-DPK_BUILD_CUDA_SHIM=OFF still registers shim tests:\n"
                      "${tests}")
endif()
file(REMOVE_RECURSE "${WORK_DIR}")
message(STATUS "missing Boost: a configure error, and PK_BUILD_CUDA_SHIM=OFF "
               "configures without shim tests")
