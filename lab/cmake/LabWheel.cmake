# SPDX-License-Identifier: MIT
# What `pip install ./lab` puts into the heapkit package (lab/pyproject.toml:
# scikit-build-core runs this project's CMake with the wheel's platlib as the
# install prefix and installs the component "lab" only). Included by the top
# level after the lab's and the malloc port's targets exist, only under
# scikit-build-core, so a plain `cmake --install` never installs the lab.
#
# heapkit/native.py reads this layout: executables in heapkit/bin, shared
# libraries in heapkit/lib, and under heapkit/sources the C sources that the
# lab compiles at run time with a cross compiler (`heapkit bench --target`,
# explore's firmware image), in the repository's own layout.

set(lab_pkg heapkit)

# The tools the heapkit command runs. hk-netapp exists when libpcap was found;
# the malloc port (libheapkit_malloc.so, hk-kth-process, hk-fits-process) on Linux hosts only.
foreach(lab_tool hk-replay hk-explore hk-netapp hk-kth-process hk-fits-process)
  if(TARGET ${lab_tool})
    install(TARGETS ${lab_tool} RUNTIME DESTINATION ${lab_pkg}/bin COMPONENT lab)
  endif()
endforeach()
foreach(lab_lib hkcapture heapkit_malloc)
  if(TARGET ${lab_lib})
    install(TARGETS ${lab_lib} LIBRARY DESTINATION ${lab_pkg}/lib COMPONENT lab)
  endif()
endforeach()

set(lab_top "${PROJECT_SOURCE_DIR}")
set(lab_src ${lab_pkg}/sources)
install(DIRECTORY ${lab_top}/include/ DESTINATION ${lab_src}/include COMPONENT lab)
install(DIRECTORY ${lab_top}/src/ DESTINATION ${lab_src}/src COMPONENT lab
        FILES_MATCHING PATTERN "*.[ch]")
install(DIRECTORY ${lab_top}/lab/target/ DESTINATION ${lab_src}/lab/target COMPONENT lab)
install(FILES ${lab_top}/lab/engine/peers/tlsf_conte/lv_tlsf_shim.h
        DESTINATION ${lab_src}/lab/engine/peers/tlsf_conte COMPONENT lab)
install(DIRECTORY ${lab_top}/ports/baremetal/common ${lab_top}/ports/baremetal/mps2-an385
                  ${lab_top}/ports/baremetal/riscv-virt
        DESTINATION ${lab_src}/ports/baremetal COMPONENT lab)
install(PROGRAMS ${lab_top}/ports/baremetal/run-qemu.sh DESTINATION ${lab_src}/ports/baremetal COMPONENT lab)
install(PROGRAMS ${lab_top}/tools/fetch_peers.sh DESTINATION ${lab_src}/tools COMPONENT lab)

# heapkit's own licence (MIT) goes with its code and binaries.
install(FILES ${lab_top}/LICENSE DESTINATION ${lab_pkg}/licenses COMPONENT lab OPTIONAL)

# The peers compiled into hk-replay (lab/engine/peers/CMakeLists.txt fetched them
# at configure time, when cargo could) travel with their licences: Conte's TLSF
# is BSD-3-Clause, whose notice a binary distribution must reproduce.
if(TARGET hk_lab_peers)
  set(lab_peer_root "${HEAPKIT_PEERS_DIR}/src")
  foreach(lab_notice
      "freertos-next-0.12.0/FreeRTOS-Kernel/LICENSE.md"
      "o1heap-0.0.2/o1heap/LICENSE"
      "umm-malloc-sys-0.3.2/umm_malloc/LICENSE"
      "lvgl-sys-0.6.2/vendor/lvgl/LICENCE.txt"
      "lvgl-sys-0.6.2/vendor/lvgl/src/misc/lv_tlsf.h")
    if(EXISTS "${lab_peer_root}/${lab_notice}")
      get_filename_component(lab_notice_dir "${lab_notice}" DIRECTORY)
      install(FILES "${lab_peer_root}/${lab_notice}"
              DESTINATION ${lab_pkg}/licenses/peers/${lab_notice_dir} COMPONENT lab)
    endif()
  endforeach()
endif()
