# package.cmake - initial cache for a build that makes the packages:
#   cmake -S . -B build-pkg -C packaging/package.cmake
#   cmake --build build-pkg --target package
# The /usr layout (multiarch libdir on Debian), no tests, optimised with
# debug info (CPack strips it), and the hardening flags Debian and Fedora
# build their packages with. Not for development builds.
set(CMAKE_INSTALL_PREFIX /usr CACHE PATH "")
set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "")
set(TWICE_TESTS OFF CACHE BOOL "")
set(CMAKE_C_FLAGS "-fstack-protector-strong -D_FORTIFY_SOURCE=2 -Wformat -Werror=format-security"
    CACHE STRING "")
set(CMAKE_EXE_LINKER_FLAGS "-Wl,-z,relro -Wl,-z,now" CACHE STRING "")
set(CMAKE_MODULE_LINKER_FLAGS "-Wl,-z,relro -Wl,-z,now" CACHE STRING "")
set(CMAKE_SHARED_LINKER_FLAGS "-Wl,-z,relro -Wl,-z,now" CACHE STRING "")
