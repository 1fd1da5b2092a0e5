// Which proposer a verb uses (`--proposer rules|llm|auto`; DESIGN.md "Two proposers"): the rule
// engine is the default when no model is configured, so that every verb runs offline. The verbs
// that ask a proposer (decompose, optimize, evolve) build the chosen one; this decides which.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "llm/config.h"
#include "store/workspace.h"

namespace lathe::cli {

enum class proposer_choice : uint8_t { rules, llm };
const char* to_string(proposer_choice c);

// `flag` is "rules", "llm" or "auto" (auto: llm when a model is configured, else rules).
// Errors (invalid_argument): another flag; "llm" without a configured model.
result<proposer_choice> choose_proposer(std::string_view flag, bool model_configured);

struct proposer_decision {
  proposer_choice choice = proposer_choice::rules;
  std::optional<llm::config> cfg;  // the model's configuration when choice is llm
  std::string why;                 // one line for the user: "rules engine (no lathe.toml in …)"
  // Where the configuration came from, for a run's provenance: the file read, "none (looked for
  // in …)", or "not read (--proposer rules)".
  std::string config_source;
};

// The one resolution of lathe.toml for every verb (doctor, decompose, optimize, evolve, bench):
// the workspace's .lathe/lathe.toml, the lathe.toml beside .lathe/, then the user's
// ($XDG_CONFIG_HOME/lathe or ~/.config/lathe), the first that exists (llm::find_config).
result<llm::found_config> find_model_config(const workspace& ws, const llm::env_lookup& env);

// The same with lathe.toml looked up (llm::find_config) for `auto` and `llm`; `rules` reads no
// file. A lathe.toml that exists but is wrong is an error, not a silent fall-back to the rules:
// the user meant to configure a model.
result<proposer_decision> decide_proposer(std::string_view flag, const workspace& ws,
                                          const llm::env_lookup& env);

}  // namespace lathe::cli
