#include "core/candidate_language.h"

#include <regex>

#include "core/enum_parse.h"

namespace lathe {

std::string_view to_string(candidate_language l) {
  switch (l) {
    case candidate_language::c_abi: return "c-abi";
    case candidate_language::python: return "python";
    case candidate_language::modelnew: return "modelnew";
  }
  return "c-abi";
}

std::optional<candidate_language> parse_candidate_language(std::string_view name) {
  return parse_enum(name, candidate_language::modelnew);
}

candidate_language language_of(const kernel_bundle& k) {
  if (k.manifest.lang != language::python) return candidate_language::c_abi;
  auto it = k.sources.find(k.manifest.entry);
  if (it == k.sources.end()) return candidate_language::python;
  // At the start of a line: a class nested in a function or another class is not the module's.
  static const std::regex model_new(R"((^|\n)class[ \t]+ModelNew\b)");
  return std::regex_search(it->second, model_new) ? candidate_language::modelnew : candidate_language::python;
}

}  // namespace lathe
