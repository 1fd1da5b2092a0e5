#include "core/feature.h"

#include <cstdio>
#include <ctime>
#include <random>

#include "core/text.h"

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

const char* to_string(forward_status s) {
  switch (s) {
    case forward_status::not_tried:
      return "not_tried";
    case forward_status::accepted:
      return "accepted";
    case forward_status::rejected:
      return "rejected";
    case forward_status::identity_roundtrip:
      return "identity_roundtrip";
    case forward_status::undecided:
      return "undecided";
  }
  return "?";
}

const char* to_string(trial_verdict v) {
  switch (v) {
    case trial_verdict::reproduced:
      return "reproduced";
    case trial_verdict::not_reproduced:
      return "not_reproduced";
    case trial_verdict::gate_failed:
      return "gate_failed";
    case trial_verdict::not_applicable:
      return "not_applicable";
  }
  return "?";
}

const char* to_string(card_status s) {
  switch (s) {
    case card_status::candidate:
      return "candidate";
    case card_status::admitted:
      return "admitted";
    case card_status::replay_admitted:
      return "replay-admitted";
    case card_status::refused:
      return "refused";
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

namespace lathe {

std::string new_run_id(run_kind k) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  std::random_device rd;
  char tail[8];
  std::snprintf(tail, sizeof tail, "%04x", static_cast<unsigned>(rd() & 0xffffu));
  return cat(to_string(k), "-", stamp, "-", tail);
}

}  // namespace lathe
