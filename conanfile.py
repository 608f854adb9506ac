# SPDX-License-Identifier: MIT
"""Conan 2 recipe for heapkit, the library alone (static, freestanding C99).

    conan create . -o heapkit/*:align=16 -o heapkit/*:hardening=2

The test package (tests/conan_package) builds tests/consumer/app against the
result through CMakeDeps. `make package-test` runs this offline.
"""
import re

from conan import ConanFile
from conan.tools.cmake import CMake, CMakeToolchain, cmake_layout
from conan.tools.files import copy, load, rmdir


class HeapkitConan(ConanFile):
    name = "heapkit"
    description = "Allocators for small RAM and hard deadlines, behind one interface"
    license = "MIT"
    topics = ("allocator", "embedded", "real-time", "tlsf", "buddy", "memory-pool")
    package_type = "static-library"
    settings = "os", "arch", "compiler", "build_type"
    # align and hardening are HK_ALIGN and HK_HARDENING (docs/install.md).
    options = {"align": [8, 16], "hardening": [0, 1, 2, 3], "fPIC": [True, False]}
    default_options = {"align": 8, "hardening": 1, "fPIC": True}
    exports_sources = "CMakeLists.txt", "LICENSE", "cmake/*", "include/*", "src/*"
    test_package_folder = "tests/conan_package"

    def set_version(self):
        text = load(self, f"{self.recipe_folder}/CMakeLists.txt")
        self.version = re.search(r"project\(heapkit VERSION ([0-9.]+)", text).group(1)

    def config_options(self):
        if self.settings.os == "Windows":
            del self.options.fPIC

    def configure(self):
        # C only: no C++ standard or runtime in the package id.
        self.settings.rm_safe("compiler.cppstd")
        self.settings.rm_safe("compiler.libcxx")

    def layout(self):
        cmake_layout(self)

    def generate(self):
        tc = CMakeToolchain(self)
        tc.cache_variables["HEAPKIT_TESTS"] = False
        tc.cache_variables["HEAPKIT_LAB"] = False
        tc.cache_variables["HEAPKIT_MALLOC"] = False
        tc.cache_variables["HEAPKIT_INSTALL"] = True
        tc.cache_variables["HEAPKIT_ALIGN"] = str(self.options.align)
        tc.cache_variables["HEAPKIT_HARDENING"] = str(self.options.hardening)
        tc.generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def package(self):
        copy(self, "LICENSE", self.source_folder, f"{self.package_folder}/licenses")
        CMake(self).install()
        # Conan's generators describe the package (package_info) in place of its own files.
        for tree in ("lib/cmake", "lib/pkgconfig", "share"):
            rmdir(self, f"{self.package_folder}/{tree}")

    def package_info(self):
        self.cpp_info.libs = ["heapkit"]
        self.cpp_info.defines = [f"HK_ALIGN={self.options.align}", f"HK_HARDENING={self.options.hardening}"]
        self.cpp_info.set_property("cmake_file_name", "heapkit")
        self.cpp_info.set_property("cmake_target_name", "heapkit::heapkit")
        self.cpp_info.set_property("pkg_config_name", "heapkit")
