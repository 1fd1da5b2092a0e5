// Skill cards as Agent Skills folders (the SKILL.md format Claude Code and Codex load): one
// folder per card, named by the card, holding SKILL.md with YAML front matter (`name`,
// `description`, `metadata`) and a Markdown body: intent, preconditions (prose and checkable
// constraints), scope, risk, effect with its evidence (ratios, who produced each piece,
// admission status), an example configuration and a before/after snippet from the carrier.
//
// The format's rules (agentskills.io specification; Anthropic's Agent Skills docs add the last
// two): `name` 1-64 characters of [a-z0-9-], no hyphen first, last or doubled, equal to the
// folder's name; `description` non-empty, at most 1,024 characters, saying what the skill does
// and when to use it; neither holds XML tags; `name` holds neither "anthropic" nor "claude".
// skill_md_problems checks a folder against them, and every folder written here is checked.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/card.h"
#include "core/error.h"
#include "core/provenance.h"

namespace lathe::skills {

inline constexpr size_t skill_name_max = 64;
inline constexpr size_t skill_description_max = 1024;
inline constexpr size_t skill_compatibility_max = 500;

// What is wrong with a skill's name / description, one sentence each; empty: nothing.
std::vector<std::string> skill_name_problems(std::string_view name);
std::vector<std::string> skill_description_problems(std::string_view description);

// `text` as a skill name: lower case; every run of other characters one hyphen; no hyphen at
// either end; cut to 64 characters (at a hyphen when one is near). "" when nothing is left.
std::string kebab_name(std::string_view text);

// Who produced a piece of work, in words that cannot be mistaken for a model's work when it was
// not one: "rule engine (rules:simd.add): mechanical…", "mock model…", "imported from…".
std::string provenance_label(const provenance& p);
// The same in a few words, for tables: "rule engine (rules:simd.add)", "mock model (…)".
std::string provenance_short(const provenance& p);

// The front matter's description: the card's intent (what it does), then when to use it
// (operator, language/platform, its first preconditions) and its lathe status; <= 1,024
// characters, no XML tags, one line.
std::string skill_description(const skill_card& c);

// The complete SKILL.md of a card whose folder is named `name`.
std::string skill_md(const skill_card& c, const std::string& name);

struct written_skill {
  std::string card_id, card_name;
  std::string name;                   // the folder's (and the front matter's) name
  std::filesystem::path folder;       // <dir>/<name>
  bool written = false;
  std::vector<std::string> problems;  // why it was not written, or what the check found
};

// One folder per card under `dir` (created): <name>/SKILL.md, name = kebab_name(card name)
// (a second card giving the same name gets "-<id prefix>"). A card whose name or description
// breaks the rules is not written and says why; each written folder is checked again with
// skill_md_problems. SKILL.md is replaced when the folder exists; other files there are kept.
// Errors only for the file system.
result<std::vector<written_skill>> write_skill_folders(const std::vector<skill_card>& cards,
                                                       const std::filesystem::path& dir);

// Problems of one skill folder as an agent would load it: SKILL.md present, front matter
// readable, name and description by the rules above, name equal to the folder's name,
// `compatibility` (optional) at most 500 characters, `metadata` (optional) a mapping of
// strings, a non-empty body. Empty: loadable.
std::vector<std::string> skill_md_problems(const std::filesystem::path& folder);

}  // namespace lathe::skills
