// The report model: what `lathe report` shows, built from the store as one JSON document
// (`lathe.report/1` for a run, `lathe.card_report/1` for a skill card; docs/report.md and
// docs/schemas.md). The HTML page (report/html.h) is rendered from this document and nothing
// else, so the page and `--json` always agree. Reads only; nothing here changes the store.
#pragma once

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "core/error.h"
#include "store/store.h"

namespace lathe::report {

inline constexpr const char* run_report_schema = "lathe.report/1";
inline constexpr const char* card_report_schema = "lathe.card_report/1";

struct report_options {
  // At most this many evaluations are included whole (a long evolve run has hundreds); the
  // model says how many were left out.
  size_t max_evaluations = 400;
  // Diff lines per kernel pair; a larger diff is cut and says so.
  size_t max_diff_lines = 800;
  // Kernel pairs diffed (graph edges, in order).
  size_t max_diffs = 60;
};

// A run of any kind (decompose, optimize, evolve; bench gets its header, evaluations and
// provenance). Errors: no such run (errc::not_found, naming it), a store that cannot be read.
result<nlohmann::json> run_report(const store& db, const std::string& run_id, const report_options& o = {});

// One skill card with its lineage evidence (the steps it was induced from), its evidence's
// evaluations and its verification log (notes and every trial).
result<nlohmann::json> card_report(const store& db, const std::string& card_id_or_name,
                                   const report_options& o = {});

}  // namespace lathe::report
