// The mock's catalog of real, mechanical transformations: for each registry feature it knows, how
// to find the places the mechanism sits in a kernel, how to take it out, and where and how it can
// be put in. Every candidate is a complete new text of one file (plus flag changes), computed
// from the original kernel, so candidates are independent and any one of them can be chosen.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agent/edit.h"
#include "kernel_io.h"

namespace lathe::mock {

struct change {
  std::string feature;   // registry name
  std::string action;    // "remove_loop_unroll", "add_restrict", "tune_loop_unroll"
  std::string function;  // the function it touches
  std::string locus;     // "relu_vec" or "relu_vec/u"
  std::string what;      // for the rationale: what was done, where (file:line)
  std::string path;      // the file it changes ("" for a flags-only change)
  std::string text;      // that file's new contents
  std::vector<agent::flag_edit> flags;
};

enum class direction : uint8_t { remove, add };

// Every way to remove (or add) `feature` in `b`, one per site, in source order.
std::vector<change> catalog_changes(const mock_bundle& b, std::string_view feature, direction d);
// Every change of either direction for every feature the catalog knows.
std::vector<change> all_changes(const mock_bundle& b, direction d);
// Tunings for `mutate`: an unroll factor changed to another one.
std::vector<change> tuning_changes(const mock_bundle& b);

// The bundle with `c` applied.
mock_bundle apply_change(const mock_bundle& b, const change& c);

// The features the catalog can remove / add (registry names), for documentation and tests.
std::vector<std::string> catalog_features(direction d);

}  // namespace lathe::mock
