# SPDX-License-Identifier: MIT
# CMake toolchain file: heapkit bare metal on QEMU's mps2-an385 (Cortex-M3),
# arm-none-eabi-gcc with newlib, semihosting through librdimon.
#
#   cmake -S ports/baremetal -B build/m3 -DCMAKE_TOOLCHAIN_FILE=$PWD/ports/baremetal/cmake/arm-cortex-m3.cmake
#
# Programs link against the board with heapkit_baremetal_executable()
# (heapkit_baremetal.cmake); ctest runs them through run-qemu.sh.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_ASM_COMPILER arm-none-eabi-gcc)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

set(CMAKE_C_FLAGS_INIT "-mcpu=cortex-m3 -mthumb")
set(CMAKE_ASM_FLAGS_INIT "-mcpu=cortex-m3 -mthumb")
set(CMAKE_EXE_LINKER_FLAGS_INIT "--specs=rdimon.specs -nostartfiles")

set(HEAPKIT_BOARD mps2-an385)
get_filename_component(_hk_baremetal_dir "${CMAKE_CURRENT_LIST_DIR}" DIRECTORY)
set(CMAKE_CROSSCOMPILING_EMULATOR "${_hk_baremetal_dir}/run-qemu.sh;mps2-an385")

set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
