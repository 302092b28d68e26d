# strip.cmake - run by cpack (CPACK_PRE_BUILD_SCRIPTS) on the staged files
# before they are packed: strips ELF files the way Debian's dh_strip does
# (no debug info, no .comment/.note sections; archives keep their symbols).
# Not a debug-symbol package: the debug info is dropped.
file(GLOB_RECURSE staged LIST_DIRECTORIES false "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*")
foreach(f ${staged})
    if(IS_SYMLINK "${f}")
        continue()
    endif()
    file(READ "${f}" magic LIMIT 8 HEX)
    if(f MATCHES "\\.a$" AND magic STREQUAL "213c617263683e0a") # "!<arch>\n"
        set(how --strip-debug --enable-deterministic-archives)
    elseif(magic MATCHES "^7f454c46") # ELF
        if(f MATCHES "\\.so$")
            set(how --strip-unneeded)
        else()
            set(how --strip-all)
        endif()
    else()
        continue()
    endif()
    execute_process(COMMAND strip ${how} --remove-section=.comment --remove-section=.note
                            "${f}" RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "strip ${f} failed (${rc})")
    endif()
endforeach()
