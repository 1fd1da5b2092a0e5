// Internal to search/: the bodies of run events (journal.h) that a resumed run reads back — an
// optimize `proposal` (the proposer's answer or its failure) and what an evolve run keeps of a
// gate evaluation (`measured`, inside its `start` and `child` events; child_json in evolve.h).
// Written and read in one place each, so that a stored run replays the same
// (tests/search/records_test.cpp pins old records).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "agent/proposer.h"
#include "core/error.h"
#include "core/evaluation.h"
#include "core/outcome.h"
#include "search/archive.h"
#include "store/store.h"

namespace lathe::search::detail {

// The proposal's fields of a `proposal` event, written into `body` (its kernel by hash).
void put_proposal(nlohmann::json& body, const agent::proposal& p);
// A recorded proposal, its kernel read back from the store.
result<agent::proposal> proposal_from(const nlohmann::json& rec, store& db);
// A recorded proposer failure ({"failure": {"kind", "message"}}); a kind it does not know reads
// as `refused` (batch mode's `waiting` is never recorded).
agent::failure failure_from(const nlohmann::json& rec);

// What an evolve run keeps of a gate evaluation against the baseline (or an incumbent), for the
// scores and the proposer's feedback.
struct measured {
  verdict_summary v;
  std::optional<lathe::outcome> outcome;  // none: a migrant's, never gated here
  std::string message, diagnostics;
  std::string inspection;       // median, roofline position, ptxas resources
  int64_t id = 0;
  std::optional<double> ratio;  // the paired ratio whatever the outcome (a contest reads it)
  double margin = 0.05;         // the gate's margin for that ratio
  std::optional<lathe::decision> decision;  // the gate's, on that ratio (a contest reads it)
};
nlohmann::json measured_json(const measured& m);
measured measured_from(const nlohmann::json& j);
// An evaluation as evolve keeps it.
measured summarize(const evaluation& e, platform plat);

}  // namespace lathe::search::detail
