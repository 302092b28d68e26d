# check-exports.cmake - a plugin must export exactly one symbol,
# twice_plugin_entry (it builds with -fvisibility=hidden). Run as
#   cmake -DNM=nm -DPLUGIN=x.so -P check-exports.cmake
# Not a check of the descriptor itself: the loader and the mock do that.
execute_process(COMMAND ${NM} -D --defined-only ${PLUGIN}
                OUTPUT_VARIABLE out RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${PLUGIN}: ${err}")
endif()
string(REGEX MATCHALL "[^\n]+" lines "${out}")
set(found 0)
foreach(line IN LISTS lines)
    string(REGEX REPLACE "^[0-9a-fA-F]* *[A-Za-z] " "" name "${line}")
    if(name STREQUAL "twice_plugin_entry")
        set(found 1)
    elseif(NOT name MATCHES "^(_init|_fini|_edata|_end|__bss_start)$")
        message(FATAL_ERROR "${PLUGIN} exports ${name}: only twice_plugin_entry may be "
                            "exported (build with -fvisibility=hidden)")
    endif()
endforeach()
if(NOT found)
    message(FATAL_ERROR "${PLUGIN} does not export twice_plugin_entry")
endif()
message(STATUS "${PLUGIN}: exports twice_plugin_entry only")
