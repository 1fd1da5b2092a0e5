// Shared by simd_intrinsics.remove / simd_intrinsics.add (catalog_intrinsics.cpp) and the tests:
// lathe's portable scalar stand-in for the x86 AVX/AVX2/FMA intrinsics (`lathe_scalar_m256.inc`,
// written into the bundle by the backward rule), and the renaming between an intrinsic's name and
// its stand-in's. Not part of the catalog's API.
//
// Names: an intrinsic keeps its name behind a `lathe` prefix, so the mapping is one-to-one and
// the de-vectorized source still reads like the original: `_mm256_add_ps` → `lathe_mm256_add_ps`,
// `__m256` → `lathe_m256` (one underscore dropped), `_CMP_LT_OQ` → `LATHE_CMP_LT_OQ`. No stand-in
// starts with `_mm` or `__m`, so the source detector (detect_source.cpp) and isa.remove no longer
// see intrinsics in the result.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agent/rules/catalog_detail.h"

namespace lathe::agent::rules::detail::intrin {

// The file the backward rule writes, beside the file that included the intrinsics header. `.inc`,
// not `.h`: the catalog's rules and the source detector read only code files (catalog_edit.cpp
// code_files, detect_source.cpp), so no other rule offers a site inside lathe's generated text
// (its 8-lane loops would be loop_unroll.add and omp_parallel.add sites, its pointer parameters
// restrict.add sites), and the kernel's features are read from the kernel alone. An edit may
// create an `.inc` (docs/edits.md), and the build finds it beside its includer.
inline constexpr std::string_view kShimFile = "lathe_scalar_m256.inc";
// The header's line that lists the intrinsics it stands in for (the forward rule reads it, then
// regenerates the header from it and compares byte for byte).
inline constexpr std::string_view kEntriesLine = "// lathe-shim-entries:";

struct shim_entry {
  std::string name;  // as <immintrin.h> spells it: "_mm256_add_ps", "__m256", "_CMP_LT_OQ"
  std::string text;  // its definition in the shim, in lathe names; empty for the vector types,
                     // which the header always defines
};

// Every intrinsic, vector type and constant the shim stands in for, in header order.
const std::vector<shim_entry>& shim_entries();
const shim_entry* shim_entry_of(std::string_view name);  // by intrinsic name; nullptr if none

// "_mm256_add_ps" → "lathe_mm256_add_ps" (any name: the mapping is textual).
std::string lathe_name(std::string_view name);
// The intrinsic a stand-in name replaces: "lathe_mm256_add_ps" → "_mm256_add_ps"; "" when the
// name is no stand-in of the table.
std::string intrinsic_of(std::string_view lathe);

// The whole header for these intrinsic names (each must be in the table): the fixed preamble
// (vector types, bit helpers), the listed entries in table order, their names on kEntriesLine.
std::string shim_header(const std::set<std::string>& names);
// The names on a header's kEntriesLine; nullopt when there is no such line.
std::optional<std::set<std::string>> shim_header_entries(std::string_view header);

// Identifiers of the x86 intrinsic family: `_mm…`, `__m64/128/256/512…`, `__mmask…`, `_MM_…`,
// `_CMP_…`, `__builtin_ia32_…`. A source that uses one the table lacks is no site.
bool intrinsic_family(std::string_view id);

}  // namespace lathe::agent::rules::detail::intrin

namespace lathe::agent::rules::detail {
std::vector<const rule*> intrinsics_rules();
}  // namespace lathe::agent::rules::detail
