// The reply of each proposer operation (docs/proposer.md "Replies"): its JSON schema, lathe's
// checks beyond the schema (registry names, every ranked id once), and its reading into the
// interface's types. A reply is believed only after all of these.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "agent/proposer.h"

namespace lathe::agent {

// The nine operations, named as their prompt templates are (prompts/<operation>.v<N>.md).
enum class operation : uint8_t {
  propose_backward,
  rederive_forward,
  audit_features,
  abstract_card,
  materialize,
  repair,
  seed_baseline,
  rank_paths,
  mutate,
};
const char* to_string(operation op);
inline constexpr operation all_operations[] = {
    operation::propose_backward, operation::rederive_forward, operation::audit_features,
    operation::abstract_card,    operation::materialize,      operation::repair,
    operation::seed_baseline,    operation::rank_paths,       operation::mutate};

// The schema of `op`'s reply: one object, every key required, no other keys (so that providers
// with strict structured output can enforce it too).
const nlohmann::json& reply_schema(operation op);

// Whether `op` writes code (its reply has `edits`).
bool writes_code(operation op);

// The feature-name lists of a reply (`removes`, `adds`, `requires`, `provides`, `conflicts`,
// `verdicts[].name`) checked against the feature registry: a message naming every unregistered
// name and listing the registry, or nullopt.
std::optional<std::string> unregistered_names(const nlohmann::json& reply);

// Every id of `given` exactly once in the reply's `order`: a message naming the missing,
// duplicated and unknown ids, or nullopt.
std::optional<std::string> ranking_problem(const nlohmann::json& reply,
                                           const std::vector<path_option>& given);

// Readers of schema-valid replies.
std::vector<std::string> string_list(const nlohmann::json& reply, const char* key);
std::vector<feature_verdict> verdicts_of(const nlohmann::json& reply);
skill_card card_of(const nlohmann::json& reply, const std::string& carrier_key);
ranking ranking_of(const nlohmann::json& reply);

}  // namespace lathe::agent
