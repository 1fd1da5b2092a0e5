# Precompiled headers and ccache.
#
# lathe_pch_launcher(target): the target's compiles go through scripts/lib/pch-launcher, which
# writes a .gch.sum beside the precompiled header it builds (the script says why and what the sum
# holds). For the targets that own a precompiled header (REUSE_FROM users share the owner's).
function(lathe_pch_launcher target)
  set(launcher ${PROJECT_SOURCE_DIR}/scripts/lib/pch-launcher ${CMAKE_CXX_COMPILER_LAUNCHER})
  set_target_properties(${target} PROPERTIES CXX_COMPILER_LAUNCHER "${launcher}")
endfunction()
