// The gate's decision on a paired ratio (PROTOCOL.md "Timing"; gate/paired.h decide), one rule
// for every verb: a closed set, stored as its text.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace lathe {

enum class decision : uint8_t {
  faster,     // the ratio's interval lies above 1 + epsilon (its low end clears it)
  slower,     // the interval lies below 1 / (1 + epsilon)
  same,       // neither, on a machine quiet enough to say so
  undecided,  // the machine's noise leaves it open (the outcome is then `unstable`)
};

std::string_view to_string(decision d);
std::optional<decision> parse_decision(std::string_view name);

}  // namespace lathe
