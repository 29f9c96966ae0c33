# Locates the CUTLASS/CuTe headers: FUSEDMOE_CUTLASS_DIR if given, else the pinned copy that
# scripts/fetch_deps.sh unpacks into .deps/cutlass (run here at configure time when missing).
if(NOT FUSEDMOE_CUTLASS_DIR)
  set(_fm_cutlass "${PROJECT_SOURCE_DIR}/.deps/cutlass")
  if(NOT EXISTS "${_fm_cutlass}/include/cute/tensor.hpp")
    message(STATUS "fusedmoe: fetching pinned CUTLASS headers (scripts/fetch_deps.sh)")
    execute_process(COMMAND bash "${PROJECT_SOURCE_DIR}/scripts/fetch_deps.sh"
                    RESULT_VARIABLE _fm_rc)
    if(NOT _fm_rc EQUAL 0)
      message(FATAL_ERROR "fusedmoe: scripts/fetch_deps.sh failed; set FUSEDMOE_CUTLASS_DIR to a CUTLASS checkout")
    endif()
  endif()
  set(FUSEDMOE_CUTLASS_DIR "${_fm_cutlass}" CACHE PATH "" FORCE)
endif()
if(NOT EXISTS "${FUSEDMOE_CUTLASS_DIR}/include/cute/tensor.hpp")
  message(FATAL_ERROR "fusedmoe: no CUTLASS headers at ${FUSEDMOE_CUTLASS_DIR} (expected include/cute/tensor.hpp)")
endif()
file(STRINGS "${FUSEDMOE_CUTLASS_DIR}/include/cutlass/version.h" _fm_v REGEX "#define CUTLASS_(MAJOR|MINOR|PATCH) ")
string(REGEX REPLACE ".*MAJOR ([0-9]+).*MINOR ([0-9]+).*PATCH ([0-9]+).*" "\\1.\\2.\\3" FUSEDMOE_CUTLASS_VERSION "${_fm_v}")
message(STATUS "fusedmoe: CUTLASS ${FUSEDMOE_CUTLASS_VERSION} at ${FUSEDMOE_CUTLASS_DIR}")

add_library(fusedmoe_cutlass INTERFACE)
target_include_directories(fusedmoe_cutlass SYSTEM INTERFACE
  "${FUSEDMOE_CUTLASS_DIR}/include" "${FUSEDMOE_CUTLASS_DIR}/tools/util/include")
