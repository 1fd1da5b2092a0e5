// Reply schemas: every structured reply of a model is validated before anything acts on it
// (issue 4: "Replies are JSON validated against schemas"). The validator covers the subset of
// JSON Schema the proposer's schemas use — type, properties, required, additionalProperties
// (false), enum, items, minItems, maxItems, minimum, maximum, minLength, maxLength — and says
// where a reply breaks it in words a model can act on ("$.edits[2].path: required").
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace lathe::agent {

struct schema_error {
  std::string path;     // "$", "$.edits[2].path"
  std::string message;  // "required", "expected string, got number", "not one of [a, b]"
};

// Every violation of `schema` by `value` (empty: valid). A keyword outside the subset in the
// schema itself is reported as an error at its path, so a schema cannot silently promise more
// than is checked.
std::vector<schema_error> validate(const nlohmann::json& schema, const nlohmann::json& value);

// "$.a: required; $.b[0]: expected integer, got string" (at most `limit` errors, then "…").
std::string describe(const std::vector<schema_error>& errors, size_t limit = 8);

}  // namespace lathe::agent
