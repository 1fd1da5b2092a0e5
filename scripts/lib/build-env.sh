# Sourced by scripts/test, scripts/main-job, scripts/check, scripts/gpu-run and .ci/run: the
# CMake arguments every build of lathe configures with, and ccache's statistics after a build.
#
# ccache (Debian's `ccache`) is the compiler launcher wherever it is installed. Its base directory
# is the checkout, so the paths it hashes are relative to it: a fresh clone in another folder of
# the same machine (which is what CI is) finds the objects a build of the same sources left in the
# cache. A machine without ccache (the GPU machine: every call there starts bare) builds as before.
# The linker is chosen in CMakeLists.txt (LATHE_LINKER: mold, else lld, else the default).
#
#   lathe_checkout=DIR; source scripts/lib/build-env.sh
#   cmake -S . -B build "${lathe_cmake_args[@]}" …; cmake --build build …; lathe_cache_stats
lathe_cmake_args=()
if command -v ccache >/dev/null 2>&1; then
  export CCACHE_BASEDIR="${lathe_checkout:-$PWD}"
  # One cache per user for every clone; 5 GiB holds two full builds (a build is ~1.1 GiB of
  # objects), so a CI clone still finds what the last build of main left.
  export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
  export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"
  # Precompiled headers: ccache may serve an object built with one only when it may trust the
  # header's time stamps and the -include it was built with (ccache's manual, "Precompiled headers").
  export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"
  # A .gch holds the clone's own paths, so its bytes differ in every clone and each object built
  # with it missed in CI (17 of lathe_cli's); ccache hashes the .gch.sum beside it instead, a
  # digest of the header's meaning (cmake/pch_sum.cmake).
  export CCACHE_PCH_EXTSUM="${CCACHE_PCH_EXTSUM:-true}"
  lathe_cmake_args+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
                     -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi

# The generator, for a build folder that is not configured yet: Ninja where installed (Debian's
# ninja-build, which scripts/install-deps brings for load_inline anyway). With Make, building the
# fifty targets a one-file change in src/gate touches took 139 s on two cores, nearly all of it
# Make walking each target's dependencies again; Ninja checks the whole graph once. A folder
# already configured keeps its generator (CMake refuses to change it).
lathe_generator_args() {
  if [ ! -f "$1/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then echo "-G Ninja"; fi
}

# The cache's hit rate since the last `ccache -z` (lathe_cache_zero), one line.
lathe_cache_zero() { command -v ccache >/dev/null 2>&1 && ccache -z >/dev/null 2>&1 || true; }
lathe_cache_stats() {
  command -v ccache >/dev/null 2>&1 || { echo "ccache: not installed (every compile ran)"; return 0; }
  ccache --print-stats 2>/dev/null | awk -F'\t' '
    $1=="direct_cache_hit"||$1=="preprocessed_cache_hit" {hit+=$2}
    $1=="cache_miss" {miss=$2}
    $1=="could_not_use_precompiled_header"||$1=="could_not_use_modules"||$1=="unsupported_compiler_option"||$1=="preprocessor_error"||$1=="compiler_produced_no_output"||$1=="unsupported_source_language"||$1=="called_for_link" {other+=$2}
    END {n=hit+miss; printf "ccache: %d hits, %d misses (%.0f%% hit), %d not cacheable\n", hit, miss, n? 100*hit/n : 0, other}'
}
