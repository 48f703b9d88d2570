#[=======================================================================[.rst:
pk.cmake — compile pk kernel files with pkc inside a CMake build
=================================================================

  pk_add_kernels(<target> SOURCES <file>... [TARGETS cpu|cuda...])

For each kernel file ``<dir>/<stem>.cpp`` (a file with ``PK_KERNEL`` functions),
run ``pkc`` at build time. It writes, into
``${CMAKE_CURRENT_BINARY_DIR}/pk/``:

* ``<stem>.pk.cpp`` — the file with every kernel body replaced by fused loops;
  it is compiled into ``<target>`` *in place of* the original (the original is
  removed from the target's sources if it was listed there);
* ``<stem>.pk.cu``  — CUDA kernels and launchers ``pk::cuda::<kernel>(...)``;
* ``<stem>.pk.h``   — the launchers' declarations.

All three are always generated. ``TARGETS`` (default ``cpu``) says what is
compiled into ``<target>``: with ``cuda`` and CUDA enabled (nvcc found,
``enable_language(CUDA)`` done), ``<stem>.pk.cu`` is compiled too, the CUDA
toolkit's include dir is added, and ``PK_CUDA_KERNELS=1`` is defined for the
target's sources. Without CUDA the ``.pk.cu`` is generated but not compiled.

pkc is given the target's C++ standard (``-std=c++20`` unless the target's
``CXX_STANDARD`` is newer), its include directories and compile definitions
(usage requirements included; generator expressions are evaluated), the pk
include dir and ``-I<dir of the kernel file>`` (quoted includes resolve as in
the original). The target gets the output dir as an include dir (so
``#include "<stem>.pk.h"`` works), the kernel file's dir for the ``.pk.cpp``,
and links ``OpenMP::OpenMP_CXX``, ``pk_headers`` and pk's runtime library
``pk_runtime`` (``pk::headers``, ``pk::runtime`` when installed; PRIVATE,
keyword form), which holds the matrix product compiled once (it defines
``PK_RUNTIME_LIBRARY`` for the target, see ``<pk/gemm.h>``).
pkc reruns when the kernel file, any header it includes (via pkc's depfile,
Ninja and Makefile generators) or pkc itself changes.

pkc keeps a precompiled ``<pk/pk.h>`` in ``${CMAKE_BINARY_DIR}/pk-pch/`` (one
per set of flags, about 16 MB each) and includes it in front of every kernel
file whose first directive is ``#include <pk/pk.h>``: parsing that header is
most of pkc's time on a file (``pkc --pch-dir``). ``PK_PKC_PCH=OFF`` (a cache
or normal variable) turns it off.

The target property ``PK_GENERATED_SOURCES`` lists every generated file of the
target (``.pk.cpp``, ``.pk.cu``, ``.pk.h`` of each kernel file).

Call it in the directory that defines ``<target>``. A kernel file used by two
targets of the same directory is generated once, with the first target's flags.

  pk_kernel_outputs(<prefix> SOURCE <file> [BINARY_DIR <dir>])

Sets ``<prefix>_CPP``, ``<prefix>_CU``, ``<prefix>_H``, ``<prefix>_DEPFILE``
and ``<prefix>_DIR`` in the caller's scope: the paths pk_add_kernels() uses for
``<file>`` when called from the current directory, or from the directory whose
binary dir is ``BINARY_DIR`` (a target's ``BINARY_DIR`` property). Usable before
or after it.

pkc is the ``pkc`` target when it exists (building pk itself, or pk added with
``add_subdirectory``/``FetchContent``), otherwise the ``PK_PKC_EXECUTABLE``
cache variable (set by ``find_package(pk CONFIG)``, else found on PATH).
#]=======================================================================]

include_guard(GLOBAL)

function(pk_kernel_outputs prefix)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "SOURCE;BINARY_DIR" "")
  if(NOT arg_SOURCE)
    message(FATAL_ERROR "pk_kernel_outputs: SOURCE <file> is required")
  endif()
  if(NOT arg_BINARY_DIR)
    set(arg_BINARY_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  endif()
  get_filename_component(stem "${arg_SOURCE}" NAME_WLE)
  set(dir "${arg_BINARY_DIR}/pk")
  set(${prefix}_DIR "${dir}" PARENT_SCOPE)
  set(${prefix}_CPP "${dir}/${stem}.pk.cpp" PARENT_SCOPE)
  set(${prefix}_CU "${dir}/${stem}.pk.cu" PARENT_SCOPE)
  set(${prefix}_H "${dir}/${stem}.pk.h" PARENT_SCOPE)
  set(${prefix}_DEPFILE "${dir}/${stem}.pk.d" PARENT_SCOPE)
endfunction()

function(pk_add_kernels target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;TARGETS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "pk_add_kernels(${target}): unexpected arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TARGET ${target})
    message(FATAL_ERROR "pk_add_kernels: ${target} is not a target")
  endif()
  if(NOT arg_SOURCES)
    message(FATAL_ERROR "pk_add_kernels(${target}): SOURCES <file>... is required")
  endif()
  if(NOT arg_TARGETS)
    set(arg_TARGETS cpu)
  endif()
  foreach(t IN LISTS arg_TARGETS)
    if(NOT t MATCHES "^(cpu|cuda)$")
      message(FATAL_ERROR "pk_add_kernels(${target}): TARGETS takes cpu and/or cuda, not '${t}'")
    endif()
  endforeach()

  # Imported targets are directory-scoped: find OpenMP where it is used.
  if(NOT TARGET OpenMP::OpenMP_CXX)
    find_package(OpenMP REQUIRED COMPONENTS CXX)
  endif()

  # pkc: the target when building pk, else an installed executable.
  if(TARGET pkc)
    set(pkc "$<TARGET_FILE:pkc>")
    set(pkc_dep pkc)
  else()
    find_program(PK_PKC_EXECUTABLE pkc)
    if(NOT PK_PKC_EXECUTABLE)
      message(FATAL_ERROR "pk_add_kernels: no pkc target and no pkc executable (set PK_PKC_EXECUTABLE)")
    endif()
    set(pkc "${PK_PKC_EXECUTABLE}")
    set(pkc_dep "${PK_PKC_EXECUTABLE}")
  endif()

  # The pk headers: include/ next to this file in a source tree, the
  # installed include dir when pk came from find_package (pkConfig.cmake).
  if(DEFINED PK_PACKAGE_INCLUDE_DIR)
    set(pk_include "${PK_PACKAGE_INCLUDE_DIR}")
  else()
    get_filename_component(pk_include "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/../include" ABSOLUTE)
  endif()
  # pk's targets, pk_<part> in a source build, pk::<part> when installed:
  # pk_headers, and pk_runtime (lib/Runtime), the matrix product compiled
  # once, not in every generated file that multiplies (it defines
  # PK_RUNTIME_LIBRARY for the target). Without them (pk.cmake included
  # from a source tree that did not build pk) the include dir is added by
  # hand and <pk/gemm.h> compiles the product inline.
  foreach(part headers runtime)
    set(pk_${part}_lib "")
    if(TARGET pk_${part})
      set(pk_${part}_lib pk_${part})
    elseif(TARGET pk::${part})
      set(pk_${part}_lib pk::${part})
    endif()
  endforeach()

  set(with_cuda OFF)
  if("cuda" IN_LIST arg_TARGETS AND CMAKE_CUDA_COMPILER_LOADED)
    set(with_cuda ON)
  endif()

  # The flags after `--`, evaluated at generate time from the target.
  set(std "$<TARGET_PROPERTY:${target},CXX_STANDARD>")
  set(std_flag "-std=c++$<IF:$<IN_LIST:${std},23$<SEMICOLON>26>,${std},20>")
  set(incs "$<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>")
  set(defs "$<TARGET_PROPERTY:${target},COMPILE_DEFINITIONS>")
  set(inc_flags "$<$<BOOL:${incs}>:-I$<JOIN:${incs},$<SEMICOLON>-I>>")
  set(def_flags "$<$<BOOL:${defs}>:-D$<JOIN:${defs},$<SEMICOLON>-D>>")

  set(use_depfile OFF)
  if(CMAKE_GENERATOR MATCHES "Ninja|Makefiles")
    set(use_depfile ON)
  endif()

  get_target_property(target_sources_list ${target} SOURCES)
  get_target_property(target_source_dir ${target} SOURCE_DIR)
  set(generated "")
  foreach(src IN LISTS arg_SOURCES)
    get_filename_component(abs_src "${src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    get_filename_component(src_dir "${abs_src}" DIRECTORY)
    pk_kernel_outputs(out SOURCE "${abs_src}")
    file(RELATIVE_PATH rel_src "${PROJECT_SOURCE_DIR}" "${abs_src}")
    if(rel_src MATCHES "^\\.\\./")
      set(rel_src "${abs_src}")
    endif()

    # One rule per output file in this directory (a second target reuses it).
    get_property(done DIRECTORY PROPERTY PK_KERNEL_RULES)
    get_property(rule_src DIRECTORY PROPERTY "PK_KERNEL_SOURCE:${out_CPP}")
    if(out_CPP IN_LIST done AND NOT rule_src STREQUAL abs_src)
      message(FATAL_ERROR "pk_add_kernels(${target}): ${abs_src} and ${rule_src} "
        "would both generate ${out_CPP}; rename one, or call pk_add_kernels() from another directory")
    endif()
    if(NOT out_CPP IN_LIST done)
      set_property(DIRECTORY APPEND PROPERTY PK_KERNEL_RULES "${out_CPP}")
      set_property(DIRECTORY PROPERTY "PK_KERNEL_SOURCE:${out_CPP}" "${abs_src}")
      file(MAKE_DIRECTORY "${out_DIR}")
      set(depfile_args "")
      set(depfile_flag "")
      if(use_depfile)
        set(depfile_args DEPFILE "${out_DEPFILE}")
        set(depfile_flag "--depfile=${out_DEPFILE}")
      endif()
      set(pch_flag "")
      if(NOT DEFINED PK_PKC_PCH OR PK_PKC_PCH)
        set(pch_flag "--pch-dir=${CMAKE_BINARY_DIR}/pk-pch")
      endif()
      add_custom_command(
        OUTPUT "${out_CPP}" "${out_CU}" "${out_H}"
        COMMAND "${pkc}" --target=cpu,cuda -o "${out_DIR}" ${depfile_flag} ${pch_flag} "${abs_src}"
                -- "${std_flag}" "${inc_flags}" "-I${pk_include}" "-I${src_dir}" "${def_flags}"
        DEPENDS "${abs_src}" ${pkc_dep}
        ${depfile_args}
        WORKING_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}"
        COMMENT "pkc ${rel_src} -> ${out_CPP}"
        COMMAND_EXPAND_LISTS
        VERBATIM)
    endif()

    # The original must not be compiled into the target as well.
    foreach(s IN LISTS target_sources_list)
      get_filename_component(abs_s "${s}" ABSOLUTE BASE_DIR "${target_source_dir}")
      if(abs_s STREQUAL abs_src)
        list(REMOVE_ITEM target_sources_list "${s}")
        set_property(TARGET ${target} PROPERTY SOURCES "${target_sources_list}")
      endif()
    endforeach()

    target_sources(${target} PRIVATE "${out_CPP}" "${out_H}")
    set_property(SOURCE "${out_CPP}" TARGET_DIRECTORY ${target}
                 APPEND PROPERTY INCLUDE_DIRECTORIES "${src_dir}")
    list(APPEND generated "${out_CPP}" "${out_CU}" "${out_H}")
    if(with_cuda)
      target_sources(${target} PRIVATE "${out_CU}")
      set_property(SOURCE "${out_CU}" TARGET_DIRECTORY ${target}
                   APPEND PROPERTY INCLUDE_DIRECTORIES "${src_dir}")
    endif()
    target_include_directories(${target} PRIVATE "${out_DIR}")
  endforeach()

  target_link_libraries(${target} PRIVATE OpenMP::OpenMP_CXX ${pk_headers_lib}
                        ${pk_runtime_lib})
  if(NOT pk_headers_lib)
    target_include_directories(${target} PRIVATE "${pk_include}")
    target_compile_features(${target} PRIVATE cxx_std_20)
  endif()
  if(with_cuda)
    target_include_directories(${target} PRIVATE ${CMAKE_CUDA_TOOLKIT_INCLUDE_DIRECTORIES})
    target_compile_definitions(${target} PRIVATE PK_CUDA_KERNELS=1)
  endif()
  set_property(TARGET ${target} APPEND PROPERTY PK_GENERATED_SOURCES ${generated})
endfunction()
