# Builds the .deb of a build directory with cpack and checks it (ctest package.deb):
#   cmake -DBIN=<build dir> -DCPACK=<cpack> -DVERSION=<x.y.z> -DARCH=<deb arch>
#         -DMACHINE=<readelf -h Machine> -DREADELF=<readelf> [-DMPI=ON] -P check_deb.cmake
# Control fields: Package, Version, Architecture, and a Depends naming every run-time library
# package; contents: the binary (for the right machine, without a RUNPATH into the build
# machine), the man page, the example configs and the data subset.
set(out ${BIN}/package-check)
file(REMOVE_RECURSE ${out})
execute_process(COMMAND ${CPACK} -G DEB -B ${out} --config ${BIN}/CPackConfig.cmake
                RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE log)
set(deb ${out}/zotrain_${VERSION}_${ARCH}.deb)
if(NOT rc EQUAL 0 OR NOT EXISTS ${deb})
  message(FATAL_ERROR "cpack failed or wrote no ${deb} (exit ${rc}):\n${log}")
endif()

function(check what text regex)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "${deb}: ${what} does not match '${regex}':\n${text}")
  endif()
endfunction()

execute_process(COMMAND dpkg-deb -I ${deb} control OUTPUT_VARIABLE control RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "dpkg-deb -I ${deb} failed")
endif()
message(STATUS "control:\n${control}")
check("Package" "${control}" "(^|\n)Package: zotrain\n")
check("Version" "${control}" "(^|\n)Version: ${VERSION}\n")
check("Architecture" "${control}" "(^|\n)Architecture: ${ARCH}\n")
check("Maintainer" "${control}" "(^|\n)Maintainer: [^\n]+\n")
string(REGEX MATCH "(^|\n)Depends: [^\n]*" depends "${control}")
string(STRIP "${depends}" depends)
foreach(pkg libc6 libgcc-s1 libstdc\\+\\+6 libgomp1 libhdf5-103-1 zlib1g libfmt9 libspdlog1\\.10)
  check("Depends" "${depends}" "[ ,]${pkg}([ ,]|-fmt9|$)")
endforeach()
if(MPI)  # built with MPI: libmpi's package, and mpirun recommended
  check("Depends" "${depends}" "[ ,]libopenmpi3([ ,]|$)")
  check("Recommends" "${control}" "(^|\n)Recommends: openmpi-bin\n")
endif()

execute_process(COMMAND dpkg-deb -c ${deb} OUTPUT_VARIABLE contents RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "dpkg-deb -c ${deb} failed")
endif()
foreach(f ./usr/bin/zotrain ./usr/share/man/man1/zotrain.1.gz
          ./usr/share/zotrain/configs/quickstart.json
          ./usr/share/zotrain/configs/paper/lenet5-mnist-zo-feat-cls1.json
          ./usr/share/zotrain/data/mnist-subset/train-images-idx3-ubyte.gz)
  string(REPLACE "+" "\\+" re "${f}")
  string(REPLACE "." "\\." re "${re}")
  check("contents" "${contents}" " ${re}\n")
endforeach()

set(root ${out}/root)
execute_process(COMMAND dpkg-deb -x ${deb} ${root} RESULT_VARIABLE rc)
execute_process(COMMAND ${READELF} -h -d ${root}/usr/bin/zotrain OUTPUT_VARIABLE elf)
check("usr/bin/zotrain's machine" "${elf}" "Machine: +${MACHINE}\n")
if(elf MATCHES "\\((RUNPATH|RPATH)\\)")
  message(FATAL_ERROR "${deb}: usr/bin/zotrain has a RUNPATH/RPATH:\n${elf}")
endif()
execute_process(COMMAND gzip -dc ${root}/usr/share/man/man1/zotrain.1.gz OUTPUT_VARIABLE man)
check("the man page" "${man}" "^\\.TH ZOTRAIN 1 .*\n\\.SH OPTIONS\n.*\\\\-\\\\-config.*\\.SH DESCRIPTION\n.*method\\.partition")
file(SIZE ${deb} size)
message(STATUS "${deb}: ${size} bytes, ${depends}")
