// A verb's options as its run stores them (the run's args, written when it begins) and reads
// them back on --resume, so that a resumed run goes on as it started: one table of names and
// fields per verb serves both ways, so an option cannot be stored under one name and read under
// another, or stored and forgotten on resume (optimize and evolve each wrote the list once and
// copied it field by field a second time).
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "cli/resume.h"
#include "core/error.h"
#include "core/run.h"

namespace lathe::cli {

template <class O>
struct stored_option {
  const char* name;  // the key in the run's args
  std::variant<std::string O::*, int32_t O::*, uint64_t O::*, double O::*, bool O::*> field;
};

template <class O>
using stored_options = std::vector<stored_option<O>>;

// The options of `table` as a JSON object (what else the run stores, the caller adds).
template <class O>
nlohmann::json stored_json(const O& o, const stored_options<O>& table) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& s : table) std::visit([&](auto m) { j[s.name] = o.*m; }, s.field);
  return j;
}

// The stored options of `table` over `o`'s; one the run did not store keeps its value.
template <class O>
void read_stored(const nlohmann::json& a, O& o, const stored_options<O>& table) {
  for (const auto& s : table) std::visit([&](auto m) { o.*m = a.value(s.name, o.*m); }, s.field);
}

// The gate's settings optimize and evolve store with their run, under the same keys.
inline const stored_options<gate_settings> stored_timing = {
    {"max_time", &gate_settings::max_time},
    {"quick", &gate_settings::quick},
};

// --resume: the run --resume names (of `kind`, on the command line's task if it names one: `verb`
// says what the run does to it, "optimizes"), and its stored options over the command line's:
// each of `table` the run stored, and the proposer when the command line left it "auto".
// O names the run in `resume`, the task in `task` and the proposer in `proposer`. Returns the
// stored arguments, for what the verb reads of them beside its options.
template <class O>
result<nlohmann::json> resume_options(context& ctx, run_kind kind, const std::string& verb, O& o,
                                      const stored_options<O>& table) {
  auto r = run_to_resume(ctx, o.resume, kind);
  if (!r) return tl::unexpected(r.error());
  auto a = stored_args(*r, o.task, verb);
  if (!a) return a;
  read_stored(*a, o, table);
  if (o.proposer == "auto") o.proposer = a->value("proposer", o.proposer);
  return a;
}

}  // namespace lathe::cli
