# Cross-compile for 64-bit ARM Linux (Raspberry Pi Zero 2 W / 3 / 4 / 5 on a 64-bit OS), against
# the arm64 sysroot of scripts/make-sysroot.sh (toolchains/debian-sysroot.cmake).
# Tests run under qemu; pick the emulated CPU with -DZT_QEMU_CPU=cortex-a53|cortex-a72|cortex-a76.
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(ZT_TRIPLET aarch64-linux-gnu)
set(ZT_DEB_ARCH arm64)
set(ZT_QEMU qemu-aarch64)
set(ZT_QEMU_DEFAULT_CPU cortex-a53)
include(${CMAKE_CURRENT_LIST_DIR}/debian-sysroot.cmake)
