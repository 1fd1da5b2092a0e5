// The library as one JSON document, "schema": "lathe.library/1" (docs/schemas.md): lineages,
// cards with every trial and their verification logs, the sources of every kernel they name
// (bundles by content hash) and what the gate evaluations they cite said. Exported from one
// store, imported into another, so that a fresh workspace gets a complete library.
//
// Import rules: idempotent (a second import of the same document changes nothing, not even a
// timestamp); a record already present with other content is kept and reported, never
// overwritten, unless asked; a card whose name another card (another id) holds is reported and
// not written; an imported card keeps its status and records in its verification log where it
// came from. Evaluation ids are local to a store, so imported records drop them (their trials
// and steps keep ratios, outcomes and verdicts; the file keeps what each evaluation said).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/card.h"
#include "core/error.h"
#include "core/kernel.h"
#include "core/lineage.h"
#include "core/provenance.h"
#include "store/store.h"

namespace lathe::skills {

inline constexpr const char* library_schema = "lathe.library/1";
inline constexpr const char* import_schema = "lathe.import/1";

// What one cited evaluation said in the exporting store (its id means nothing elsewhere).
struct evaluation_note {
  int64_t id = 0;
  std::string created_at, task, kernel_hash, kernel_name, outcome, provenance, target;
  std::optional<double> speedup;
};

struct library_document {
  std::string source;       // the exporting workspace, as the export request named it
  std::string exported_at;  // UTC, ISO 8601
  std::vector<lineage> lineages;
  std::vector<skill_card> cards;             // with their trials
  std::vector<kernel_bundle> kernels;        // every named kernel the exporting store holds
  std::vector<evaluation_note> evaluations;  // every evaluation id the records cite
  std::vector<std::string> missing_kernels;  // named, but not in the exporting store
};

void to_json(nlohmann::json& j, const library_document& d);  // with "schema"
// The document as the file `lathe skills export` writes (indented JSON, one trailing newline).
std::string library_text(const library_document& d);
// Refuses a document of another schema (or none) with the schema it found.
result<library_document> parse_library(std::string_view text);

struct export_request {
  std::vector<std::string> lineages;  // lineage ids
  std::vector<std::string> cards;     // card ids or names
  bool with_source_lineages = true;   // add the lineages the selected cards were induced from
  std::string source;                 // written as the document's source (a workspace path)
};

// Both lists empty: the whole library. A named lineage or card that is not there: not_found.
result<library_document> export_library(const store& s, const export_request& r);

enum class import_action : uint8_t {
  added,           // written
  unchanged,       // already there with this content
  updated,         // there with other content, replaced (import_options::replace_changed)
  kept_different,  // there with other content, kept; `reason` says what to do
  name_clash,      // another card (another id) holds the name; not written
  refused,         // not importable (a kernel whose sources do not match its hash…)
};
const char* to_string(import_action a);

struct import_entry {
  std::string kind;  // "lineage", "card", "trial", "kernel"
  std::string id;    // lineage id, card id, kernel hash; a trial: its card's id
  std::string name;  // card name; a trial: its task
  import_action action = import_action::added;
  std::string reason;
  std::vector<std::string> unmapped;  // imports from other formats: fields lathe has no place for
};

struct import_report {
  std::string format;  // "lathe.library/1", "klineage/lineage", "klineage/skill"
  std::string source;  // the file or folder imported
  std::vector<import_entry> entries;
  size_t count(const std::string& kind, import_action a) const;
  bool has(import_action a) const;
};
void to_json(nlohmann::json& j, const import_report& r);  // with "schema": "lathe.import/1"

struct import_options {
  bool replace_changed = false;  // replace lineages and cards present with other content
};

result<import_report> import_library(store& s, const library_document& doc,
                                     const import_options& o = {});

// The per-record rules of import_library, for other importers (klineage_import.h). `as_sent`
// is the record as it appears in its source when that differs from `c` (a restore into the
// store it came from finds it unchanged); null when the two are the same.
result<import_entry> import_card(store& s, const skill_card& c, const skill_card* as_sent,
                                 const import_options& o);
result<import_entry> import_lineage(store& s, const lineage& l, const lineage* as_sent,
                                    const import_options& o);
// Appends each trial the card does not already have (compared without created_at, each
// existing trial matching once); one entry per trial added.
result<std::vector<import_entry>> import_trials(store& s, const std::string& card_id,
                                                const std::vector<card_trial>& trials);

}  // namespace lathe::skills
