# check-symbols.cmake - libtwice-mock.a defines, as global symbols, exactly
# the functions twice/mock.h declares: none missing, and nothing else (the
# daemon's code linked inside must stay local, or a plugin's own buf_append
# would clash with it). Run as
#   cmake -DNM=nm -DARCHIVE=libtwice-mock.a -DHEADER=twice/mock.h -P check-symbols.cmake
# Names the toolchain reserves (a leading underscore: sanitizers) are ignored.
file(READ ${HEADER} header)
string(REGEX MATCHALL "twice_mock_[a-z_]+\\(" declared "${header}")
list(TRANSFORM declared REPLACE "\\($" "")
list(REMOVE_DUPLICATES declared)
list(SORT declared)

execute_process(COMMAND ${NM} -g --defined-only ${ARCHIVE}
                OUTPUT_VARIABLE out RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${ARCHIVE}: ${err}")
endif()
string(REGEX MATCHALL "[^\n]+" lines "${out}")
set(defined)
foreach(line IN LISTS lines)
    if(line MATCHES "^[0-9a-fA-F]+ [A-Za-z] (.+)$")
        set(name ${CMAKE_MATCH_1})
        if(NOT name MATCHES "^_")
            list(APPEND defined ${name})
        endif()
    endif()
endforeach()
list(REMOVE_DUPLICATES defined)
list(SORT defined)

set(extra ${defined})
list(REMOVE_ITEM extra ${declared})
set(missing ${declared})
if(defined)
    list(REMOVE_ITEM missing ${defined})
endif()
if(extra)
    message(FATAL_ERROR "${ARCHIVE} exports symbols twice/mock.h does not declare: ${extra}")
endif()
if(missing)
    message(FATAL_ERROR "${ARCHIVE} does not define: ${missing}")
endif()
list(LENGTH declared n)
message(STATUS "${ARCHIVE}: exports the ${n} functions of twice/mock.h and nothing else")
