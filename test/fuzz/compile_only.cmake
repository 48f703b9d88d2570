# cmake -DPKC=... -DCXX=... -DSRC=<dir>/<id>.cpp -DOUT=<dir> -DINC=<pk include>
#       -DSHIM_INC=<shim include> -P compile_only.cmake
# Runs pkc on SRC and compiles what it writes without linking: the .pk.cpp,
# and the .pk.cu as C++ against the CUDA shim's headers. Fails if any step
# fails (test/fuzz/regressions/*/compile-only).
get_filename_component(stem "${SRC}" NAME_WE)
get_filename_component(src_dir "${SRC}" DIRECTORY)
file(MAKE_DIRECTORY "${OUT}")
execute_process(COMMAND "${PKC}" -o "${OUT}" "${SRC}" -- -std=c++20 "-I${INC}" "-I${src_dir}"
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkc failed (${rc})")
endif()
set(cxx "${CXX}" -std=c++20 -fsyntax-only -fopenmp "-I${INC}" "-I${src_dir}" "-I${OUT}")
execute_process(COMMAND ${cxx} "${OUT}/${stem}.pk.cpp" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${stem}.pk.cpp does not compile")
endif()
execute_process(COMMAND ${cxx} -x c++ -DPK_CUDA_SHIM=1 "-I${SHIM_INC}" "${OUT}/${stem}.pk.cu"
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${stem}.pk.cu does not compile (as C++ against the shim)")
endif()
