# Cross-compile for 32-bit ARM Linux (armv7-a hard-float, e.g. 32-bit Raspberry Pi OS).
# Target libraries come from the armhf sysroot that scripts/install-deps.sh --cross unpacks into
# /opt/zotrain-cross/armhf (-DZT_ARMHF_SYSROOT=... for another place): Debian packages, not
# multiarch, whose armhf set cannot be installed beside the host's (see install-deps.sh).
# The compiler keeps its own libc headers and start files (/usr/arm-linux-gnueabihf); the
# sysroot supplies everything else, at link time and, through qemu -L, at run time.
# Tests run under qemu; pick the emulated CPU with -DZT_QEMU_CPU=cortex-a7|max (qemu-arm 7.2 has no
# cortex-a53 model; max is an ARMv8 core in AArch32 state, as a Cortex-A53 runs a 32-bit OS).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR armv7l)
set(CMAKE_C_COMPILER arm-linux-gnueabihf-gcc)
set(CMAKE_CXX_COMPILER arm-linux-gnueabihf-g++)
set(CMAKE_LIBRARY_ARCHITECTURE arm-linux-gnueabihf)
if(NOT ZT_ARMHF_SYSROOT)
  set(ZT_ARMHF_SYSROOT /opt/zotrain-cross/armhf)
endif()
set(ZT_ARMHF_SYSROOT ${ZT_ARMHF_SYSROOT} CACHE PATH "armhf sysroot (scripts/install-deps.sh --cross)")
if(NOT EXISTS ${ZT_ARMHF_SYSROOT}/lib/ld-linux-armhf.so.3)
  message(FATAL_ERROR "no armhf sysroot in ${ZT_ARMHF_SYSROOT}: run scripts/install-deps.sh --cross")
endif()
# GCC notes on every std::pair<long long, double> passed by value that its ARM argument passing
# changed in GCC 7.1; everything here is built by one GCC 12, so the note is noise.
set(CMAKE_CXX_FLAGS_INIT -Wno-psabi)
set(CMAKE_FIND_ROOT_PATH /usr/arm-linux-gnueabihf ${ZT_ARMHF_SYSROOT})
# The .deb's Depends come from the sysroot packages' shlibs files (cmake/Packaging.cmake).
set(ZT_DEB_SHLIBS_FILE ${ZT_ARMHF_SYSROOT}/var/lib/zotrain/shlibs)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)  # the header-only CLI11 and nlohmann_json: host's
# Shared libraries' own dependencies (libspdlog -> libfmt, libhdf5 -> libcurl, ...) are in the
# sysroot, which the linker does not search on its own.
set(_zt_rpath_link
    "-Wl,-rpath-link,${ZT_ARMHF_SYSROOT}/lib/arm-linux-gnueabihf:${ZT_ARMHF_SYSROOT}/usr/lib/arm-linux-gnueabihf")
set(CMAKE_EXE_LINKER_FLAGS_INIT "${_zt_rpath_link}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "${_zt_rpath_link}")
# No build RPATH into the sysroot: its ld.so finds every library in its default directories, and
# a host path in the binaries would only shadow the compiler's libgomp (CMake warns about that).
set(CMAKE_SKIP_BUILD_RPATH ON)
if(NOT ZT_QEMU_CPU)
  set(ZT_QEMU_CPU cortex-a7)
endif()
# The sysroot's own ld.so and libc run the binaries (the cross package's ld.so mixed with another
# libc build hangs in thread creation under qemu, see aarch64-linux-gnu.cmake).
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-arm;-cpu;${ZT_QEMU_CPU};-L;${ZT_ARMHF_SYSROOT})
