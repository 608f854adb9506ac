# SPDX-License-Identifier: MIT
"""Conan test package: tests/consumer/app (find_package(heapkit 0.2 CONFIG))
built against the package through CMakeDeps, told the package's align and
hardening options, which must reach it as HK_ALIGN and HK_HARDENING."""
import os

from conan import ConanFile
from conan.tools.build import can_run
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout


class HeapkitTestConan(ConanFile):
    settings = "os", "arch", "compiler", "build_type"

    def configure(self):
        self.settings.rm_safe("compiler.cppstd")
        self.settings.rm_safe("compiler.libcxx")

    def requirements(self):
        self.requires(self.tested_reference_str)

    def layout(self):
        # In the repository's git-ignored build/, not beside this file.
        cmake_layout(self, build_folder="../../build/conan_package")

    def generate(self):
        heapkit = self.dependencies["heapkit"]
        CMakeDeps(self).generate()
        tc = CMakeToolchain(self)
        tc.cache_variables["CONSUME"] = "find_package"
        tc.cache_variables["CONSUMER_EXPECT_ALIGN"] = str(heapkit.options.align)
        tc.cache_variables["CONSUMER_EXPECT_HARDENING"] = str(heapkit.options.hardening)
        tc.generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure(build_script_folder=os.path.join(self.source_folder, "..", "consumer", "app"))
        cmake.build()

    def test(self):
        if can_run(self):
            self.run(os.path.join(self.cpp.build.bindir, "consumer"), env="conanrun")
        else:
            self.output.info("cross build: the consumer is built and linked, not run")
