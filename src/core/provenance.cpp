#include "core/provenance.h"

namespace lathe {

std::string to_string(const provenance& p) {
  // "human" has no detail; the others read kind:detail ("llm:openai/gpt-x", "rules:unroll").
  std::string s = p.kind.empty() ? std::string("unknown") : p.kind;
  if (!p.detail.empty()) s += ":" + p.detail;
  if (p.mechanical) s += " (mechanical)";
  return s;
}

}  // namespace lathe
