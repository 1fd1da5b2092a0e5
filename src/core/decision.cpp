#include "core/decision.h"

#include "core/enum_parse.h"

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

std::optional<decision> parse_decision(std::string_view name) { return parse_enum(name, decision::undecided); }

}  // namespace lathe
