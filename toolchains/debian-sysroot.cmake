# Shared by the cross toolchain files: a Debian cross compiler (g++-<triplet>, the host's) with a
# target sysroot made by scripts/make-sysroot.sh from the target architecture's own package index
# (/opt/zotrain-cross/<Debian arch>; -DZT_SYSROOT=... for another place). Nothing of the target is
# installed through the host's dpkg.
# The including file sets ZT_TRIPLET, ZT_DEB_ARCH (the Debian architecture), ZT_QEMU (the
# qemu-user binary) and ZT_QEMU_DEFAULT_CPU, and CMAKE_SYSTEM_PROCESSOR.
#
# With --sysroot, Debian's cross GCC still takes its C library headers, start files and
# libstdc++ from its own directories (/usr/<triplet>, /usr/lib/gcc-cross), searched before the
# sysroot's; the sysroot supplies every other header and library, at compile and link time, and
# through qemu -L its own ld.so and libraries at run time (one consistent set from one index; the
# cross package's ld.so mixed with another libc build hangs in thread creation under qemu).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_C_COMPILER ${ZT_TRIPLET}-gcc)
set(CMAKE_CXX_COMPILER ${ZT_TRIPLET}-g++)
set(CMAKE_LIBRARY_ARCHITECTURE ${ZT_TRIPLET})

if(NOT ZT_SYSROOT)
  set(ZT_SYSROOT /opt/zotrain-cross/${ZT_DEB_ARCH})
endif()
set(ZT_SYSROOT ${ZT_SYSROOT} CACHE PATH "${ZT_DEB_ARCH} sysroot (scripts/make-sysroot.sh ${ZT_DEB_ARCH})")
# The recipe is written last: without it the sysroot is missing or incomplete.
if(NOT EXISTS ${ZT_SYSROOT}/var/lib/zotrain/recipe)
  message(FATAL_ERROR "no ${ZT_DEB_ARCH} sysroot in ${ZT_SYSROOT}: run "
                      "scripts/install-deps.sh --cross (or scripts/make-sysroot.sh ${ZT_DEB_ARCH})")
endif()
set(CMAKE_SYSROOT ${ZT_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# The .deb's Depends come from the sysroot packages' shlibs files (cmake/Packaging.cmake): dpkg
# knows nothing of these libraries.
set(ZT_DEB_SHLIBS_FILE ${ZT_SYSROOT}/var/lib/zotrain/shlibs)
# No build RPATH into the sysroot: its ld.so finds every library in its default directories.
set(CMAKE_SKIP_BUILD_RPATH ON)

if(NOT ZT_QEMU_CPU)
  set(ZT_QEMU_CPU ${ZT_QEMU_DEFAULT_CPU})
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR ${ZT_QEMU};-cpu;${ZT_QEMU_CPU};-L;${ZT_SYSROOT})
