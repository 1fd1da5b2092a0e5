// The feature registry (DESIGN.md vocabulary, "feature"): the defined names a feature may have,
// each with its definition, the platforms it applies to and its parameters. Names are never
// invented ad hoc: a proposer's claim about a name outside this registry is refused, and a new
// mechanism enters lathe by adding an entry here (with its definition) in a reviewed change.
#pragma once

#include <span>
#include <string_view>

namespace lathe {

struct feature_definition {
  std::string_view name;        // "smem_tiling"
  std::string_view platforms;   // "cuda", "cpu" or "cuda,cpu"
  std::string_view params;      // parameter names, comma-separated ("width"); empty: none
  std::string_view definition;  // one sentence: what must be in a kernel for it to be present
};

// Every registered feature, sorted by name.
std::span<const feature_definition> feature_registry();
// nullptr when `name` is not registered.
const feature_definition* find_feature(std::string_view name);

}  // namespace lathe
