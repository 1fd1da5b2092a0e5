// Imports from KLineage, the reference implementation of the method (DESIGN.md): its saved
// lineages (save_lineage's JSON: states, transitions, skills, termination, reason), its skill
// memories (a JSON array of cards) and its SKILL.md cards (front matter skill_id, intent,
// preconditions, scope; a Markdown body with the recipe and a Before/After snippet). Fields that
// map onto lathe's become lathe's; every field that does not is named in the import report and
// in the card's verification log, never dropped silently (docs/skills.md, "Interchange").
//
// What an import is and is not: the cards get provenance import:klineage and status candidate
// (KLineage's own admission and trials are recorded as text, not as lathe trials: lathe admits a
// card only after its own held-out trials); lineage kernels are named by KLineage's fingerprints
// ("klineage:<sha256>") and their sources are not stored, because they target KLineage's kernel
// ABI, which lathe's gate cannot build or check; measured ratios are KLineage's, labelled so.
#pragma once

#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/card.h"
#include "core/error.h"
#include "core/lineage.h"
#include "skills/interchange.h"
#include "store/store.h"

namespace lathe::skills {

struct klineage_card {
  skill_card card;
  std::vector<std::string> unmapped;  // "field: why it has no place in a lathe card"
};

// One SKILL.md card. `origin` (a path) goes into the verification log.
result<klineage_card> klineage_card_from_skill_md(std::string_view text, const std::string& origin);
// One card as KLineage's to_dict writes it: the four SKILL.md fields and `body`, or the long form
// (anchor, carrier, precondition, effect, risk, evidence, verification_log, requires, provides,
// conflicts; plural spellings accepted). Its evidence becomes `sources` only when it is imported
// with its lineage (klineage_lineage_from_json matches the transitions by fingerprint).
result<klineage_card> klineage_card_from_json(const nlohmann::json& j, const std::string& origin);

struct klineage_lineage {
  lineage l;
  std::vector<klineage_card> cards;   // its `skills`
  std::vector<std::string> unmapped;
};

result<klineage_lineage> klineage_lineage_from_json(const nlohmann::json& j, const std::string& origin);

// Imports `path` into the store: a SKILL.md file, a card folder (holding SKILL.md), a folder of
// card folders, a saved lineage (.json with "states"), a skill memory (.json array) or one card
// (.json object with "skill_id"). The rules of import_library apply (idempotent, name clashes
// reported, present records with other content kept unless `o` says replace).
result<import_report> import_klineage(store& s, const std::filesystem::path& path,
                                      const import_options& o = {});

}  // namespace lathe::skills
