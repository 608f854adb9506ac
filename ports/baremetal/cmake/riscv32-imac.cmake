# SPDX-License-Identifier: MIT
# CMake toolchain file: heapkit bare metal on QEMU's riscv virt machine,
# RV32IMAC/ilp32 (the BL602's RV32IMAFC without the FPU), riscv64-unknown-elf-gcc with picolibc,
# stdio and exit through picolibc's semihosting library.
#
#   cmake -S ports/baremetal -B build/rv32 -DCMAKE_TOOLCHAIN_FILE=$PWD/ports/baremetal/cmake/riscv32-imac.cmake
#
# Programs link against the board with heapkit_baremetal_executable()
# (heapkit_baremetal.cmake); ctest runs them through run-qemu.sh.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR riscv32)
set(CMAKE_C_COMPILER riscv64-unknown-elf-gcc)
set(CMAKE_ASM_COMPILER riscv64-unknown-elf-gcc)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

set(CMAKE_C_FLAGS_INIT "-march=rv32imac -mabi=ilp32 --specs=picolibc.specs")
set(CMAKE_ASM_FLAGS_INIT "-march=rv32imac -mabi=ilp32")
# (CMAKE_C_FLAGS, with picolibc.specs, reach the link line too.) The board's linker
# script replaces picolibc.ld; everything sits in one RWX DRAM region.
set(CMAKE_EXE_LINKER_FLAGS_INIT "--oslib=semihost -nostartfiles -Wl,--no-warn-rwx-segments")

set(HEAPKIT_BOARD riscv-virt)
get_filename_component(_hk_baremetal_dir "${CMAKE_CURRENT_LIST_DIR}" DIRECTORY)
set(CMAKE_CROSSCOMPILING_EMULATOR "${_hk_baremetal_dir}/run-qemu.sh;riscv-virt")

set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
