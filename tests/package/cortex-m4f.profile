# SPDX-License-Identifier: MIT
# Conan host profile: bare-metal Cortex-M4F, arm-none-eabi-gcc, hard float
# (the same target as tests/consumer/arm-cortex-m4f.cmake).
[settings]
os=baremetal
arch=armv7hf
compiler=gcc
compiler.version=12
build_type=MinSizeRel

[conf]
tools.build:compiler_executables={"c": "arm-none-eabi-gcc"}
tools.build:cflags=["-mcpu=cortex-m4", "-mthumb", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard"]
tools.build:exelinkflags=["--specs=nano.specs", "--specs=nosys.specs"]
tools.cmake.cmaketoolchain:extra_variables={"CMAKE_TRY_COMPILE_TARGET_TYPE": "STATIC_LIBRARY"}
