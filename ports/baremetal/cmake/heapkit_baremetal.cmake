# SPDX-License-Identifier: MIT
# Links programs against a bare-metal board port (ports/baremetal/<board>/).
# Include it after project() in a build configured with one of the toolchain
# files here (they set HEAPKIT_BOARD and the QEMU emulator):
#
#   include(<repo>/ports/baremetal/cmake/heapkit_baremetal.cmake)
#   heapkit_baremetal_executable(prog prog.c)      # startup, runtime, linker script
#   target_link_libraries(prog PRIVATE heapkit)
#   add_test(NAME prog COMMAND prog args...)       # ctest runs it in QEMU
#
# heapkit_board is an object library with the startup code and the shared
# runtime; linking it also adds -T<board>/link.ld.
if(NOT HEAPKIT_BOARD)
  message(FATAL_ERROR "HEAPKIT_BOARD is not set: configure with -DCMAKE_TOOLCHAIN_FILE=ports/baremetal/cmake/<arch>.cmake")
endif()
get_filename_component(HEAPKIT_BAREMETAL_DIR "${CMAKE_CURRENT_LIST_DIR}" DIRECTORY)
set(HEAPKIT_BOARD_LINKER_SCRIPT "${HEAPKIT_BAREMETAL_DIR}/${HEAPKIT_BOARD}/link.ld")

if(NOT TARGET heapkit_board)
  add_library(heapkit_board OBJECT
    "${HEAPKIT_BAREMETAL_DIR}/${HEAPKIT_BOARD}/startup.c"
    "${HEAPKIT_BAREMETAL_DIR}/common/runtime.c")
  target_include_directories(heapkit_board PUBLIC "${HEAPKIT_BAREMETAL_DIR}/common")
  target_compile_options(heapkit_board PRIVATE -Wall -Wextra -Werror)
  target_link_options(heapkit_board INTERFACE "-T${HEAPKIT_BOARD_LINKER_SCRIPT}" "-Wl,--gc-sections")
  set_property(TARGET heapkit_board APPEND PROPERTY INTERFACE_LINK_DEPENDS "${HEAPKIT_BOARD_LINKER_SCRIPT}")
endif()

function(heapkit_baremetal_executable name)
  add_executable(${name} ${ARGN})
  target_link_libraries(${name} PRIVATE heapkit_board)
  set_target_properties(${name} PROPERTIES SUFFIX ".elf")
endfunction()

# The FreeRTOS kernel for a firmware on a board (FreeRTOS-Kernel V11.2.0, crate freertos-next
# 0.12.0): unpacked by tools/fetch_peers.sh into <peers_dir> at configure time, once, so that
# no two build steps fetch it at the same time; <out_var> gets the kernel's directory.
function(heapkit_freertos_kernel peers_dir out_var)
  set(kernel "${peers_dir}/src/freertos-next-0.12.0/FreeRTOS-Kernel")
  if(NOT EXISTS "${kernel}/tasks.c")
    message(STATUS "Fetching FreeRTOS-Kernel V11.2.0 (crate freertos-next 0.12.0) into ${peers_dir}")
    get_filename_component(root "${HEAPKIT_BAREMETAL_DIR}/../.." ABSOLUTE)
    execute_process(COMMAND sh "${root}/tools/fetch_peers.sh" "${peers_dir}"
                    RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err ERROR_STRIP_TRAILING_WHITESPACE)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "the FreeRTOS kernel could not be fetched: ${err}")
    endif()
  endif()
  set(${out_var} "${kernel}" PARENT_SCOPE)
endfunction()
