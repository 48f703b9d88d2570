# ctest external.*: install the pk of BUILD_DIR into a fresh prefix, then
# configure, build and run test/external against it (find_package(pk)).
#   cmake -DBUILD_DIR=<pk build> -DWORK_DIR=<scratch> [-DWITH_CUDA=ON]
#         -DGENERATOR=<generator> -P run.cmake
foreach(v BUILD_DIR WORK_DIR GENERATOR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run.cmake: -D${v}=... is required")
  endif()
endforeach()
get_filename_component(src "${CMAKE_CURRENT_LIST_DIR}" ABSOLUTE)
file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    list(JOIN ARGN " " cmd)
    message(FATAL_ERROR "failed (${rc}): ${cmd}")
  endif()
endfunction()

run("${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}")
foreach(f bin/pkc include/pk/pk.h lib/cmake/pk/pkConfig.cmake lib/cmake/pk/pk.cmake)
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "not installed: ${prefix}/${f}")
  endif()
endforeach()

set(cuda_args "")
if(WITH_CUDA)
  set(cuda_args -DAPP_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90)
  if(DEFINED CUDA_COMPILER)
    list(APPEND cuda_args "-DCMAKE_CUDA_COMPILER=${CUDA_COMPILER}")
  endif()
endif()
run("${CMAKE_COMMAND}" -S "${src}" -B "${WORK_DIR}/build" -G "${GENERATOR}"
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}" ${cuda_args})
run("${CMAKE_COMMAND}" --build "${WORK_DIR}/build")
run("${WORK_DIR}/build/app")
