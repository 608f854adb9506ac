# SPDX-License-Identifier: MIT
# Install rules: the public headers, libheapkit.a, the CMake package
# (find_package(heapkit 0.2 CONFIG) gives heapkit::heapkit) and heapkit.pc.
# HK_ALIGN and HK_HARDENING reach users through both: the exported target's
# compile definitions and the .pc file's Cflags.
include(CMakePackageConfigHelpers)

set(HEAPKIT_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/heapkit")

install(TARGETS heapkit EXPORT heapkitTargets ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}")
install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/heapkit" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
install(EXPORT heapkitTargets NAMESPACE heapkit:: DESTINATION "${HEAPKIT_CMAKE_DIR}")
install(FILES "${PROJECT_SOURCE_DIR}/LICENSE" DESTINATION "${CMAKE_INSTALL_DOCDIR}")

configure_package_config_file("${CMAKE_CURRENT_LIST_DIR}/heapkitConfig.cmake.in"
                              "${PROJECT_BINARY_DIR}/heapkitConfig.cmake"
                              INSTALL_DESTINATION "${HEAPKIT_CMAKE_DIR}")
# Before 1.0 a minor release may change the API (0.2 did: hk_check_t, the
# hardening levels), so a request for 0.2 accepts 0.2.x only; from 1.0 on
# this becomes SameMajorVersion.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/heapkitConfigVersion.cmake"
                                 COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/heapkitConfig.cmake" "${PROJECT_BINARY_DIR}/heapkitConfigVersion.cmake"
        DESTINATION "${HEAPKIT_CMAKE_DIR}")

# heapkit.pc finds its prefix from its own place (${pcfiledir}), so the tree
# works wherever `cmake --install --prefix` puts it.
set(HEAPKIT_PC_DIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
foreach(kind LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${kind}}")
    set(HEAPKIT_PC_${kind} "${CMAKE_INSTALL_${kind}}")
  else()
    set(HEAPKIT_PC_${kind} "\${prefix}/${CMAKE_INSTALL_${kind}}")
  endif()
endforeach()
if(IS_ABSOLUTE "${HEAPKIT_PC_DIR}")
  set(HEAPKIT_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH HEAPKIT_PC_UP "/${HEAPKIT_PC_DIR}" "/")
  string(REGEX REPLACE "/$" "" HEAPKIT_PC_UP "${HEAPKIT_PC_UP}")
  set(HEAPKIT_PC_PREFIX "\${pcfiledir}/${HEAPKIT_PC_UP}")
endif()
configure_file("${CMAKE_CURRENT_LIST_DIR}/heapkit.pc.in" "${PROJECT_BINARY_DIR}/heapkit.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/heapkit.pc" DESTINATION "${HEAPKIT_PC_DIR}")
