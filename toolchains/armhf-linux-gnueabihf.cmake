# Cross-compile for 32-bit ARM Linux (armv7-a hard-float, e.g. 32-bit Raspberry Pi OS).
# Target libraries come from Debian multiarch (dpkg --add-architecture armhf).
# Tests run under qemu; pick the emulated CPU with -DZT_QEMU_CPU=cortex-a7|cortex-a53.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR armv7l)
set(CMAKE_C_COMPILER arm-linux-gnueabihf-gcc)
set(CMAKE_CXX_COMPILER arm-linux-gnueabihf-g++)
set(CMAKE_LIBRARY_ARCHITECTURE arm-linux-gnueabihf)
set(CMAKE_FIND_ROOT_PATH /usr/arm-linux-gnueabihf)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
if(NOT ZT_QEMU_CPU)
  set(ZT_QEMU_CPU cortex-a7)
endif()
# Run with the multiarch runtime (-L /: /lib/ld-linux-*.so and /lib/arm-linux-gnueabihf/), not the cross
# sysroot: the cross package's ld.so (2.36-8cross1) mixed with the multiarch libc6 that the
# target -dev packages pull in (2.36-9+deb12u*) hangs in thread creation under qemu.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-arm;-cpu;${ZT_QEMU_CPU};-L;/)
