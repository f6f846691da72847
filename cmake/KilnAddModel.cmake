# KilnAddModel.cmake — kiln_add_model(): a model compiled to C at build time,
# as a static library an app links. Loaded by find_package(kiln).
#
#   kiln_add_model(TARGET encoder MODEL encoder.onnx
#                  [NAME cname]                  API prefix (default: TARGET)
#                  [SHAPES name=dims ...]        --shape, e.g. src=1x16x64
#                  [WEIGHTS file]                a .lua model's .safetensors / .gguf
#                  [SET key=value ...]           a .lua model's config{} overrides
#                  [ISA native|avx2|avx512|portable] [THREADS n] [QUANTIZE int8|none]
#                  [WEIGHTS_MODE auto|blob|inline]  where the weights go (default auto)
#                  [DEPENDS file ...]            more files whose change recompiles
#                  [OPTIONS kiln args ...])      anything else kiln compile takes
#   target_link_libraries(app PRIVATE encoder)   # then #include "cname.h"
#
# The build runs `kiln compile` when the model, the weights file, a DEPENDS
# file or the kiln binary changes, into BUILD/kiln_models/TARGET/ (cname.c,
# cname.h, kiln_rt.h, and cname_weights.S + cname.weights.bin for a blob),
# and builds the .c and the .S into the library. That folder is the
# library's PUBLIC include folder; libm, and Threads for THREADS > 1 (and
# OpenBLAS for OPTIONS --gemm=openblas), are its PUBLIC link libraries.
#
# With WEIGHTS_MODE auto (kiln's default: a blob above 1 MiB of weights) or
# blob the app binds the blob before the first run; cname.h defines
# CNAME_WEIGHTS_SIZE exactly when there is one:
#   #ifdef ENCODER_WEIGHTS_SIZE
#     if (encoder_bind_linked_weights() != KILN_OK) ...
#   #endif
include_guard(GLOBAL)

# the arguments, joined (ARGVn keep their semicolons, ARGN would split them)
function(_kiln_fail)
  set(msg "")
  math(EXPR last "${ARGC} - 1")
  foreach(i RANGE ${last})
    string(APPEND msg "${ARGV${i}}")
  endforeach()
  message(FATAL_ERROR "kiln_add_model: ${msg}")
endfunction()

# one of ALLOWED for KEYWORD's value, else a FATAL_ERROR naming them
function(_kiln_one_of keyword value)
  if(NOT value IN_LIST ARGN)
    string(JOIN ", " allowed ${ARGN})
    _kiln_fail("${keyword} ${value}: expected one of ${allowed}")
  endif()
endfunction()

function(kiln_add_model)
  set(one TARGET MODEL NAME WEIGHTS ISA THREADS QUANTIZE WEIGHTS_MODE)
  set(many SHAPES SET DEPENDS OPTIONS)
  cmake_parse_arguments(PARSE_ARGV 0 K "" "${one}" "${many}")
  if(K_UNPARSED_ARGUMENTS)
    string(JOIN " " extra ${K_UNPARSED_ARGUMENTS})
    string(JOIN ", " kw ${one} ${many})
    _kiln_fail("unexpected argument(s) '${extra}'; expected keywords ${kw}")
  endif()
  foreach(kw IN LISTS K_KEYWORDS_MISSING_VALUES)
    _kiln_fail("${kw} needs a value")
  endforeach()
  if(NOT K_TARGET)
    _kiln_fail("no TARGET; expected kiln_add_model(TARGET name MODEL file.onnx|.lua|.kir ...)")
  endif()
  if(TARGET ${K_TARGET})
    _kiln_fail("TARGET ${K_TARGET}: a target of that name already exists; expected a new name")
  endif()
  if(NOT K_MODEL)
    _kiln_fail("TARGET ${K_TARGET}: no MODEL; expected MODEL file.onnx, file.lua or file.kir")
  endif()
  if(NOT TARGET kiln::kiln)
    _kiln_fail("no kiln::kiln target; expected find_package(kiln) before kiln_add_model")
  endif()

  # the model and the files beside it
  get_filename_component(model "${K_MODEL}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  get_source_file_property(generated "${model}" GENERATED)
  if(NOT EXISTS "${model}" AND NOT generated)
    _kiln_fail("MODEL ${model}: no such file; expected an existing .onnx, .lua or .kir file")
  endif()
  if(NOT model MATCHES "\\.(onnx|lua|kir)$")
    _kiln_fail("MODEL ${model}: unknown kind; expected a file name ending in .onnx, .lua or .kir")
  endif()
  set(deps "${model}")
  if(model MATCHES "\\.kir$")
    string(REGEX REPLACE "\\.kir$" ".bin" sidecar "${model}")
    if(EXISTS "${sidecar}")
      list(APPEND deps "${sidecar}")
    endif()
  endif()
  if((DEFINED K_WEIGHTS OR K_SET) AND NOT model MATCHES "\\.lua$")
    _kiln_fail("MODEL ${model}: WEIGHTS and SET are for .lua models; expected a .lua MODEL "
               "(ONNX and .kir models carry their own weights: see SHAPES)")
  endif()

  # the kiln compile command line
  if(NOT DEFINED K_NAME)
    set(K_NAME "${K_TARGET}")
  endif()
  if(NOT K_NAME MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    _kiln_fail("NAME ${K_NAME}: the API prefix must be a C identifier; expected NAME cname "
               "(it defaults to TARGET)")
  endif()
  if(NOT DEFINED K_WEIGHTS_MODE)
    set(K_WEIGHTS_MODE auto)
  endif()
  _kiln_one_of(WEIGHTS_MODE "${K_WEIGHTS_MODE}" auto blob inline)
  set(out "${CMAKE_CURRENT_BINARY_DIR}/kiln_models/${K_TARGET}")
  set(args compile "${model}" -o "${out}/${K_NAME}.c" --name "${K_NAME}" "--weights-mode=${K_WEIGHTS_MODE}")
  foreach(s IN LISTS K_SHAPES)
    if(NOT s MATCHES "^[^=]+=([0-9]+([x,][0-9]+)*)?$")
      _kiln_fail("SHAPES ${s}: expected NAME=DIMS, e.g. src=1x16x64 (or a symbolic dim: seq=16)")
    endif()
    list(APPEND args --shape "${s}")
  endforeach()
  if(DEFINED K_WEIGHTS)
    get_filename_component(weights "${K_WEIGHTS}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    if(NOT EXISTS "${weights}")
      _kiln_fail("WEIGHTS ${weights}: no such file; expected a .safetensors or .gguf file")
    endif()
    list(APPEND args --weights "${weights}")
    list(APPEND deps "${weights}")
  endif()
  foreach(s IN LISTS K_SET)
    if(NOT s MATCHES "^[^=]+=")
      _kiln_fail("SET ${s}: expected KEY=VALUE, e.g. seq=128")
    endif()
    list(APPEND args --set "${s}")
  endforeach()
  if(DEFINED K_ISA)
    _kiln_one_of(ISA "${K_ISA}" native avx2 avx512 portable generic)
    list(APPEND args "--isa=${K_ISA}")
  endif()
  if(NOT DEFINED K_THREADS)
    set(K_THREADS 1)
  endif()
  if(NOT K_THREADS MATCHES "^[1-9][0-9]*$" OR K_THREADS GREATER 1024)
    _kiln_fail("THREADS ${K_THREADS}: expected a thread count from 1 to 1024")
  endif()
  list(APPEND args "--threads=${K_THREADS}")
  if(DEFINED K_QUANTIZE)
    _kiln_one_of(QUANTIZE "${K_QUANTIZE}" int8 none)
    list(APPEND args "--quantize=${K_QUANTIZE}")
  endif()
  set(openblas FALSE)
  set(prev "")
  foreach(o IN LISTS K_OPTIONS)
    if(o MATCHES "^(-o|--output|--name|--weights|--weights-mode)(=|$)")
      _kiln_fail("OPTIONS ${o}: kiln_add_model sets the output, the name and the weights itself; "
                 "expected NAME, WEIGHTS or WEIGHTS_MODE instead")
    endif()
    if(o STREQUAL "--gemm=openblas" OR (prev STREQUAL "--gemm" AND o STREQUAL "openblas"))
      set(openblas TRUE)
    endif()
    set(prev "${o}")
  endforeach()
  list(APPEND args ${K_OPTIONS})
  foreach(f IN LISTS K_DEPENDS)
    get_filename_component(f "${f}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND deps "${f}")
  endforeach()

  # build step: stale blob files out, kiln compile, a stub .S when no blob
  set(stub "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/kiln_weights_stub.cmake")
  get_filename_component(model_name "${model}" NAME)
  set(asm "${out}/${K_NAME}_weights.S")
  file(MAKE_DIRECTORY "${out}")
  add_custom_command(
    OUTPUT "${out}/${K_NAME}.c" "${out}/${K_NAME}.h" "${out}/kiln_rt.h" "${asm}"
    BYPRODUCTS "${out}/${K_NAME}.weights.bin"
    COMMAND ${CMAKE_COMMAND} -E rm -f "${asm}" "${out}/${K_NAME}.weights.bin"
    COMMAND kiln::kiln ${args}
    COMMAND ${CMAKE_COMMAND} "-DS=${asm}" -P "${stub}"
    DEPENDS ${deps} "$<TARGET_FILE:kiln::kiln>" "${stub}"
    COMMENT "kiln: compiling ${model_name} to ${K_NAME}.c"
    VERBATIM)
  add_library(${K_TARGET} STATIC "${out}/${K_NAME}.c" "${asm}")
  target_include_directories(${K_TARGET} PUBLIC "${out}")
  if(UNIX)
    target_link_libraries(${K_TARGET} PUBLIC m)
  endif()
  if(K_THREADS GREATER 1)   # KILN_PARALLEL_FOR splits loops among kiln_rt.h's pthreads
    set(THREADS_PREFER_PTHREAD_FLAG ON)
    find_package(Threads REQUIRED)
    target_compile_definitions(${K_TARGET} PRIVATE KILN_THREADS)
    target_link_libraries(${K_TARGET} PUBLIC Threads::Threads)
  endif()
  if(openblas)              # the .c includes <cblas.h> and calls cblas_sgemm
    find_path(KILN_CBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas)
    find_library(KILN_OPENBLAS_LIBRARY openblas)
    if(NOT KILN_CBLAS_INCLUDE_DIR OR NOT KILN_OPENBLAS_LIBRARY)
      _kiln_fail("OPTIONS --gemm=openblas: no cblas.h or libopenblas found; expected OpenBLAS "
                 "(Debian: libopenblas-dev)")
    endif()
    target_include_directories(${K_TARGET} PRIVATE "${KILN_CBLAS_INCLUDE_DIR}")
    target_link_libraries(${K_TARGET} PUBLIC "${KILN_OPENBLAS_LIBRARY}")
  endif()
endfunction()
