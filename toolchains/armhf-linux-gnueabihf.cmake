# Cross-compile for 32-bit ARM Linux (armv7-a hard-float, e.g. 32-bit Raspberry Pi OS), against
# the armhf sysroot of scripts/make-sysroot.sh (toolchains/debian-sysroot.cmake).
# Tests run under qemu; pick the emulated CPU with -DZT_QEMU_CPU=cortex-a7|max (qemu-arm 7.2 has no
# cortex-a53 model; max is an ARMv8 core in AArch32 state, as a Cortex-A53 runs a 32-bit OS).
set(CMAKE_SYSTEM_PROCESSOR armv7l)
set(ZT_TRIPLET arm-linux-gnueabihf)
set(ZT_DEB_ARCH armhf)
set(ZT_QEMU qemu-arm)
set(ZT_QEMU_DEFAULT_CPU cortex-a7)
# GCC notes on every std::pair<long long, double> passed by value that its ARM argument passing
# changed in GCC 7.1; everything here is built by one GCC 12, so the note is noise.
set(CMAKE_CXX_FLAGS_INIT -Wno-psabi)
include(${CMAKE_CURRENT_LIST_DIR}/debian-sysroot.cmake)
