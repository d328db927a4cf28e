# Writes the man page zotrain.1.gz from `zotrain --help` (CLI11's layout), so the page lists
# exactly the options, methods and config keys the binary has. Run at build time:
#   cmake -DEXE=<zotrain> [-DEMU=<emulator|args...>] -DOUT=<zotrain.1.gz> -P manpage.cmake
# EMU ('|'-separated) runs a cross-built binary (qemu). Layout of the help text and what becomes of it:
#   "zotrain 0.1.0 - <summary>"        NAME
#   "Usage: ..."                       SYNOPSIS
#   "Options:" then "  -x,--long ARG  text" (text may wrap onto deeper-indented lines)  OPTIONS
#   the rest: "  item" / "  key (...): text" lines become tagged paragraphs, other lines running
#   text, blank lines paragraph breaks                                                  DESCRIPTION
cmake_minimum_required(VERSION 3.22)  # list() keeps empty lines, if() does not dereference quoted text
foreach(var EXE OUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "manpage.cmake: -D${var}=... is required")
  endif()
endforeach()
string(REPLACE "|" ";" EMU "${EMU}")
execute_process(COMMAND ${EMU} ${EXE} --help RESULT_VARIABLE rc OUTPUT_VARIABLE help
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR help STREQUAL "")
  message(FATAL_ERROR "manpage.cmake: '${EXE} --help' failed (${rc}): ${err}")
endif()

# One list element per line: ';' and brackets would confuse CMake lists, so stand-ins until output.
string(REPLACE ";" "@SEMI@" help "${help}")
string(REPLACE "[" "@LB@" help "${help}")
string(REPLACE "]" "@RB@" help "${help}")
string(REPLACE "\n" ";" lines "${help}")

# roff-escapes one line of text (backslash, and a leading '.' or ' that roff takes as a request).
function(zt_roff out text)
  string(REPLACE "\\" "\\e" text "${text}")
  string(REGEX REPLACE "^([.'])" "\\\\&\\1" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()
# Option names in bold with escaped hyphens, arguments in italics: "-c,--config TEXT".
function(zt_roff_option out spec)
  string(REGEX MATCH "^([^ ]+)( (.*))?$" _ "${spec}")
  set(names "${CMAKE_MATCH_1}")
  set(arg "${CMAKE_MATCH_3}")
  string(REPLACE "-" "\\-" names "${names}")
  string(REPLACE "," "\\fR, \\fB" names "${names}")
  set(r "\\fB${names}\\fR")
  if(NOT arg STREQUAL "")
    zt_roff(arg "${arg}")
    string(REPLACE "-" "\\-" arg "${arg}")
    set(r "${r} \\fI${arg}\\fR")
  endif()
  set(${out} "${r}" PARENT_SCOPE)
endfunction()

list(GET lines 0 first)
string(REGEX MATCH "^([^ ]+) ([^ ]+) - (.*)$" _ "${first}")
set(name "${CMAKE_MATCH_1}")
set(version "${CMAKE_MATCH_2}")
zt_roff(summary "${CMAKE_MATCH_3}")
if(name STREQUAL "")
  message(FATAL_ERROR "manpage.cmake: unexpected first help line: ${first}")
endif()
string(TOUPPER "${name}" upper)
set(page ".TH ${upper} 1 \"\" \"${name} ${version}\" \"User Commands\"\n")
string(APPEND page ".SH NAME\n${name} \\- ${summary}\n")

set(section head)  # head | options | text
set(in_list OFF)   # DESCRIPTION: the last thing written is a tagged paragraph
foreach(line IN LISTS lines)
  if(line MATCHES "^Usage: (.*)$")
    zt_roff(usage "${CMAKE_MATCH_1}")
    string(REPLACE "-" "\\-" usage "${usage}")
    string(APPEND page ".SH SYNOPSIS\n.B ${usage}\n")
  elseif(line STREQUAL "Options:")
    set(section options)
    string(APPEND page ".SH OPTIONS\n")
  elseif(section STREQUAL "options")
    if(line MATCHES "^  (-[^ ]*( [^ ]+)*)(   *(.*))?$")            # "  -x,--long ARG   text"
      zt_roff_option(opt "${CMAKE_MATCH_1}")
      zt_roff(text "${CMAKE_MATCH_4}")
      string(APPEND page ".TP\n${opt}\n")
      if(NOT text STREQUAL "")
        string(APPEND page "${text}\n")
      endif()
    elseif(line MATCHES "^   +(.*)$")                              # wrapped description
      zt_roff(text "${CMAKE_MATCH_1}")
      string(APPEND page "${text}\n")
    elseif(line STREQUAL "")
      set(section text)
      string(APPEND page ".SH DESCRIPTION\n")
    endif()
  elseif(section STREQUAL "text")
    if(line STREQUAL "")
      string(APPEND page ".PP\n")
      set(in_list OFF)
    elseif(line MATCHES "^  ([^ ]+) (\\(.*, default [^ ]*\\)): (.*)$")  # "  key (type, default x): text"
      zt_roff(key "${CMAKE_MATCH_1}")
      zt_roff(type "${CMAKE_MATCH_2}")
      zt_roff(text "${CMAKE_MATCH_3}")
      string(APPEND page ".TP\n\\fB${key}\\fR ${type}\n${text}\n")
      set(in_list ON)
    elseif(line MATCHES "^  ([^ ]+)$")                             # "  item" (text follows)
      zt_roff(key "${CMAKE_MATCH_1}")
      string(APPEND page ".TP\n\\fB${key}\\fR\n")
      set(in_list ON)
    elseif(line MATCHES "^ +(.*)$")
      zt_roff(text "${CMAKE_MATCH_1}")
      string(APPEND page "${text}\n")
    else()                                                         # running text
      if(in_list OR line MATCHES "^[A-Z][a-z]+: ")  # after a list, or "Example: ...": new paragraph
        string(APPEND page ".PP\n")
        set(in_list OFF)
      endif()
      zt_roff(text "${line}")
      string(APPEND page "${text}\n")
    endif()
  endif()
endforeach()
string(APPEND page ".SH FILES\n.TP\n.I /usr/share/${name}/configs\n"
       "Ready experiments: quickstart.json, the paper's settings (paper/), PointNet.\n"
       ".TP\n.I /usr/share/${name}/data/mnist-subset\n"
       "6,000 training and 1,000 test MNIST images for the quick start, e.g.\n"
       "\\fB${name} \\-\\-config /usr/share/${name}/configs/quickstart.json "
       "\\-\\-set data.root=/usr/share/${name}/data/mnist-subset \\-\\-output\\-dir run1\\fR\n")
string(REGEX REPLACE "(\\.PP\n)+" ".PP\n" page "${page}")
string(REPLACE ".PP\n.SH" ".SH" page "${page}")
string(REPLACE "@SEMI@" ";" page "${page}")
string(REPLACE "@LB@" "[" page "${page}")
string(REPLACE "@RB@" "]" page "${page}")

get_filename_component(dir "${OUT}" DIRECTORY)
get_filename_component(stem "${OUT}" NAME_WLE)
file(WRITE "${dir}/${stem}" "${page}")
# -n: no name or time stamp in the gzip header, so the package is reproducible.
execute_process(COMMAND gzip -9nf "${dir}/${stem}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "manpage.cmake: gzip failed")
endif()
