# Cross-compiling memdiff for 64-bit Windows with mingw-w64 (Debian/Ubuntu: apt install mingw-w64):
#   cmake -S . -B build-win -DCMAKE_TOOLCHAIN_FILE=cmake/mingw-w64.cmake
# The programs it builds run under Wine (docs/windows.md). Override the prefix for another
# triplet, e.g. -DMEMDIFF_MINGW_PREFIX=i686-w64-mingw32 for 32-bit Windows.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)

set(MEMDIFF_MINGW_PREFIX x86_64-w64-mingw32 CACHE STRING "mingw-w64 target triplet")
set(CMAKE_C_COMPILER ${MEMDIFF_MINGW_PREFIX}-gcc)
set(CMAKE_RC_COMPILER ${MEMDIFF_MINGW_PREFIX}-windres)

# Headers and libraries of the target only; programs (cmake helpers, pkg-config) of the host.
# uthash is a header of the host's /usr/include: the build finds it with UTHASH_INCLUDE_DIR,
# searched in the host's paths too (CMakeLists.txt), since it is plain C with no OS in it.
set(CMAKE_FIND_ROOT_PATH /usr/${MEMDIFF_MINGW_PREFIX})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# Run cross-built programs (ctest, try_run) through Wine when it is there.
find_program(MEMDIFF_WINE wine)
if(MEMDIFF_WINE)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${MEMDIFF_WINE})
endif()
