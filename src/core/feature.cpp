#include "core/feature.h"

namespace lathe {

std::string to_string(const provenance& p) {
  // "human" has no detail; the others read kind:detail ("llm:openai/gpt-x", "rules:unroll").
  std::string s = p.kind.empty() ? std::string("unknown") : p.kind;
  if (!p.detail.empty()) s += ":" + p.detail;
  if (p.mechanical) s += " (mechanical)";
  return s;
}

const char* to_string(detection_method m) {
  switch (m) {
    case detection_method::source:
      return "source";
    case detection_method::ptx:
      return "ptx";
    case detection_method::sass:
      return "sass";
    case detection_method::disassembly:
      return "disassembly";
    case detection_method::proposer_audit:
      return "proposer_audit";
  }
  return "?";
}

const char* to_string(termination t) {
  switch (t) {
    case termination::complete:
      return "complete";
    case termination::step_limit:
      return "step_limit";
    case termination::rejection_limit:
      return "rejection_limit";
    case termination::unknown:
      return "unknown";
  }
  return "?";
}

const char* to_string(run_kind k) {
  switch (k) {
    case run_kind::decompose:
      return "decompose";
    case run_kind::optimize:
      return "optimize";
    case run_kind::evolve:
      return "evolve";
    case run_kind::bench:
      return "bench";
  }
  return "?";
}

const char* to_string(run_state s) {
  switch (s) {
    case run_state::running:
      return "running";
    case run_state::finished:
      return "finished";
    case run_state::failed:
      return "failed";
    case run_state::interrupted:
      return "interrupted";
  }
  return "?";
}

}  // namespace lathe
