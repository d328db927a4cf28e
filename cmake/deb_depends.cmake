# zt_deb_depends(<out> <elf> <readelf> <shlibs>): the Depends line of a package holding <elf>, from
# the shared libraries it needs (readelf -d: NEEDED) and a shlibs file in Debian's format
# ("[type:] <name> <version> <dependency>", see deb-shlibs(5)) — what dpkg-shlibdeps does, at the
# granularity of shlibs files, for libraries that dpkg has not installed (a sysroot's).
function(zt_deb_depends out elf readelf shlibs)
  execute_process(COMMAND ${readelf} -d ${elf} RESULT_VARIABLE rc OUTPUT_VARIABLE dyn
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "zt_deb_depends: ${readelf} -d ${elf} failed: ${err}")
  endif()
  file(STRINGS ${shlibs} entries)
  string(REGEX MATCHALL "\\(NEEDED\\)[^[]*\\[[^]]*\\]" needed "${dyn}")
  set(deps)
  foreach(n IN LISTS needed)
    string(REGEX REPLACE ".*\\[(.*)\\]" "\\1" soname "${n}")
    if(soname MATCHES "^(.*)\\.so\\.(.*)$")          # libfoo.so.1 -> libfoo 1
      set(name "${CMAKE_MATCH_1}")
      set(version "${CMAKE_MATCH_2}")
    elseif(soname MATCHES "^(.*)-([0-9.]+)\\.so$")   # libfoo-1.2.so -> libfoo 1.2
      set(name "${CMAKE_MATCH_1}")
      set(version "${CMAKE_MATCH_2}")
    else()
      message(FATAL_ERROR "zt_deb_depends: cannot split the soname ${soname}")
    endif()
    set(dep)
    foreach(e IN LISTS entries)
      if(e MATCHES "^([^ :]+:)? *([^ ]+) +([^ ]+) +(.+)$" AND CMAKE_MATCH_1 STREQUAL ""
         AND CMAKE_MATCH_2 STREQUAL name AND CMAKE_MATCH_3 STREQUAL version)
        set(dep "${CMAKE_MATCH_4}")
        break()
      endif()
    endforeach()
    if(dep STREQUAL "")
      message(FATAL_ERROR "zt_deb_depends: no package for ${soname} in ${shlibs}")
    endif()
    list(APPEND deps "${dep}")
  endforeach()
  list(REMOVE_DUPLICATES deps)
  list(SORT deps)
  list(JOIN deps ", " line)
  set(${out} "${line}" PARENT_SCOPE)
endfunction()
