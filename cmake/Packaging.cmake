# Debian packages with CPack: `cpack -G DEB` in a build directory writes
# zotrain_<version>_<arch>.deb (amd64, arm64 or armhf, from the build's target) holding
# usr/bin/zotrain, its man page (generated from `zotrain --help`, cmake/manpage.cmake), the example
# configs and the bundled MNIST subset. Depends: dpkg-shlibdeps where the target's libraries are
# installed packages (the host build); for a cross build, computed from its sysroot packages'
# shlibs files (cmake/deb_depends.cmake), since dpkg knows nothing of them.
# tests/CMakeLists.txt's package.deb test builds the package and checks it (cmake/check_deb.cmake).

# ---- man page: run the built binary (through the emulator when cross-compiling) ------------
string(REPLACE ";" "|" _zt_emu "${CMAKE_CROSSCOMPILING_EMULATOR}")  # a list through one -D
set(ZT_MANPAGE ${CMAKE_BINARY_DIR}/man/zotrain.1.gz)
add_custom_command(OUTPUT ${ZT_MANPAGE}
                   COMMAND ${CMAKE_COMMAND} "-DEXE=$<TARGET_FILE:zotrain>" "-DEMU=${_zt_emu}"
                           "-DOUT=${ZT_MANPAGE}" -P ${PROJECT_SOURCE_DIR}/cmake/manpage.cmake
                   DEPENDS zotrain ${PROJECT_SOURCE_DIR}/cmake/manpage.cmake
                   COMMENT "Generating the man page from zotrain --help" VERBATIM)
add_custom_target(zotrain_manpage ALL DEPENDS ${ZT_MANPAGE})
install(FILES ${ZT_MANPAGE} DESTINATION share/man/man1)
install(DIRECTORY data/mnist-subset DESTINATION share/zotrain/data)

# ---- Debian architecture of the target -----------------------------------------------------
if(CMAKE_LIBRARY_ARCHITECTURE STREQUAL "aarch64-linux-gnu")
  set(ZT_DEB_ARCH arm64)
elseif(CMAKE_LIBRARY_ARCHITECTURE STREQUAL "arm-linux-gnueabihf")
  set(ZT_DEB_ARCH armhf)
elseif(CMAKE_LIBRARY_ARCHITECTURE STREQUAL "x86_64-linux-gnu")
  set(ZT_DEB_ARCH amd64)
elseif(NOT CMAKE_CROSSCOMPILING)
  execute_process(COMMAND dpkg --print-architecture OUTPUT_VARIABLE ZT_DEB_ARCH
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
endif()
if(NOT ZT_DEB_ARCH)
  set(ZT_DEB_ARCH unknown)
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME zotrain)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "train small neural networks on ARM boards with zeroth-order optimisation")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "zotrain trains LeNet-5 and PointNet (FP32 or int8) on MNIST, Fashion-MNIST or\nModelNet40 with ElasticZO: the first layers by zeroth-order optimisation (about\nthe memory of inference), the last ones by backprop. It reports accuracy,\nper-phase time and memory. Built for small boards such as the Raspberry Pi Zero 2 W.")
set(ZT_PACKAGE_MAINTAINER "zotrain developers <zotrain@invalid>" CACHE STRING
    "Maintainer field of the .deb packages")
set(CPACK_PACKAGE_CONTACT "${ZT_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE ${ZT_DEB_ARCH})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # zotrain_<version>_<arch>.deb
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# Built with MPI: libmpi comes in through Depends (libopenmpi3); mpirun, to start a run over several
# processes or boards (docs/guide/several-boards.md), is recommended.
if(ZT_HAVE_MPI)
  set(CPACK_DEBIAN_PACKAGE_RECOMMENDS openmpi-bin)
endif()
set(CPACK_STRIP_FILES ON)               # CMAKE_STRIP: the target's strip when cross-compiling
if(ZT_DEB_SHLIBS_FILE)
  # Read when cpack runs (the binary exists then): its NEEDED sonames mapped through the shlibs file.
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
  file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/CPackProjectConfig.cmake CONTENT
"include(${PROJECT_SOURCE_DIR}/cmake/deb_depends.cmake)
zt_deb_depends(CPACK_DEBIAN_PACKAGE_DEPENDS \"$<TARGET_FILE:zotrain>\" \"${CMAKE_READELF}\"
               \"${ZT_DEB_SHLIBS_FILE}\")
")
  set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_BINARY_DIR}/CPackProjectConfig.cmake)
else()
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
endif()
include(CPack)
