# Every dependency is a Debian package; a missing one stops configuration with the package name.
macro(lathe_require pkg debian)
  find_package(${pkg} ${ARGN} QUIET)
  if(NOT ${pkg}_FOUND)
    message(FATAL_ERROR "lathe needs ${pkg}: install the Debian/Ubuntu package '${debian}' "
                        "(scripts/install-deps does it)")
  endif()
endmacro()

if(LATHE_DEPS_PREFIX)
  list(PREPEND CMAKE_PREFIX_PATH ${LATHE_DEPS_PREFIX}/usr ${LATHE_DEPS_PREFIX}/usr/lib/x86_64-linux-gnu/cmake
       ${LATHE_DEPS_PREFIX}/usr/share/cmake)
endif()

lathe_require(nlohmann_json nlohmann-json3-dev)
lathe_require(CLI11 libcli11-dev)
lathe_require(tl-expected libexpected-dev)
lathe_require(dlpack libdlpack-dev)
lathe_require(Threads libc6-dev)

# toml++ from its headers alone (the GPU machine gets no shared library), its implementation
# compiled once in src/core/tomlpp.cpp rather than in every file that includes it.
find_path(LATHE_TOMLPP_INCLUDE toml++/toml.h HINTS ${LATHE_DEPS_PREFIX}/usr/include)
if(NOT LATHE_TOMLPP_INCLUDE)
  message(FATAL_ERROR "lathe needs toml++: install the Debian/Ubuntu package 'libtomlplusplus-dev'")
endif()
add_library(lathe_tomlpp STATIC ${PROJECT_SOURCE_DIR}/src/core/tomlpp.cpp)
target_include_directories(lathe_tomlpp SYSTEM PUBLIC ${LATHE_TOMLPP_INCLUDE})
target_compile_definitions(lathe_tomlpp PUBLIC TOML_HEADER_ONLY=0 TOML_EXCEPTIONS=0)

# SQLite and xxhash: static archives when present (GPU machine), else the shared ones.
find_path(LATHE_SQLITE_INCLUDE sqlite3.h HINTS ${LATHE_DEPS_PREFIX}/usr/include)
find_library(LATHE_SQLITE_LIB NAMES libsqlite3.a sqlite3
             HINTS ${LATHE_DEPS_PREFIX}/usr/lib/x86_64-linux-gnu)
if(NOT LATHE_SQLITE_INCLUDE OR NOT LATHE_SQLITE_LIB)
  message(FATAL_ERROR "lathe needs SQLite: install the Debian/Ubuntu package 'libsqlite3-dev'")
endif()
add_library(lathe_sqlite INTERFACE)
target_include_directories(lathe_sqlite SYSTEM INTERFACE ${LATHE_SQLITE_INCLUDE})
target_link_libraries(lathe_sqlite INTERFACE ${LATHE_SQLITE_LIB} ${CMAKE_DL_LIBS} Threads::Threads m)

find_path(LATHE_XXHASH_INCLUDE xxhash.h HINTS ${LATHE_DEPS_PREFIX}/usr/include)
find_library(LATHE_XXHASH_LIB NAMES libxxhash.a xxhash
             HINTS ${LATHE_DEPS_PREFIX}/usr/lib/x86_64-linux-gnu)
if(NOT LATHE_XXHASH_INCLUDE OR NOT LATHE_XXHASH_LIB)
  message(FATAL_ERROR "lathe needs xxhash: install the Debian/Ubuntu package 'libxxhash-dev'")
endif()
add_library(lathe_xxhash INTERFACE)
target_include_directories(lathe_xxhash SYSTEM INTERFACE ${LATHE_XXHASH_INCLUDE})
target_link_libraries(lathe_xxhash INTERFACE ${LATHE_XXHASH_LIB})

if(LATHE_BUILD_TESTS)
  lathe_require(GTest libgtest-dev)
endif()
