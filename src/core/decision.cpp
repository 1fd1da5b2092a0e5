#include "core/decision.h"

namespace lathe {

std::string_view to_string(decision d) {
  switch (d) {
    case decision::faster: return "faster";
    case decision::slower: return "slower";
    case decision::same: return "same";
    case decision::undecided: return "undecided";
  }
  return "?";
}

std::optional<decision> parse_decision(std::string_view name) {
  for (decision d : {decision::faster, decision::slower, decision::same, decision::undecided})
    if (to_string(d) == name) return d;
  return std::nullopt;
}

}  // namespace lathe
