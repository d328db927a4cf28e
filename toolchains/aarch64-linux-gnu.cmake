# Cross-compile for 64-bit ARM Linux (Raspberry Pi Zero 2 W / 3 / 4 / 5 on a 64-bit OS).
# Target libraries come from Debian multiarch (dpkg --add-architecture arm64).
# Tests run under qemu; pick the emulated CPU with -DZT_QEMU_CPU=cortex-a53|cortex-a72|cortex-a76.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
if(NOT ZT_QEMU_CPU)
  set(ZT_QEMU_CPU cortex-a53)
endif()
# Run with the multiarch runtime (-L /: /lib/ld-linux-*.so and /lib/aarch64-linux-gnu/), not the cross
# sysroot: the cross package's ld.so (2.36-8cross1) mixed with the multiarch libc6 that the
# target -dev packages pull in (2.36-9+deb12u*) hangs in thread creation under qemu.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64;-cpu;${ZT_QEMU_CPU};-L;/)
