// Provenance (DESIGN.md): who produced a piece of work. Its own header because the gate stores it
// with every evaluation (core/evaluation.h), and the gate must not rebuild when a lineage or a
// card changes shape.
#pragma once

#include <string>

namespace lathe {

// Kind + detail, rendered "llm:openai/gpt-x", "rules:unroll", "replay:cassette", "human";
// `mechanical` marks a byte-identical forward step.
struct provenance {
  std::string kind;    // llm | rules | replay | human
  std::string detail;  // provider/model, rule name, cassette
  bool mechanical = false;
};
std::string to_string(const provenance& p);

}  // namespace lathe
