// One structured question to a model: the reply must be JSON following a schema; a reply that
// is not is shown back to the model with what is wrong, a bounded number of times (issue 4: "a
// bounded repair round-trip that shows the model its error").
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "llm/provider.h"

namespace lathe::agent {

struct structured_reply {
  nlohmann::json value;                // valid against the schema
  std::vector<llm::response> calls;    // every call made, repairs included (for budgets, records)
  int repairs = 0;
};

struct ask_failure {
  enum class kind : uint8_t { call, invalid } what = kind::invalid;
  llm::call_failure call;              // when what == call
  std::string last_error;              // when invalid: why the last reply was refused
  std::vector<llm::response> calls;
};

// The JSON in a reply: the first ```json (or ```) fenced block, else the whole text, else the
// span from the first '{' to the last '}'. A parse error is returned as text for the model.
tl::expected<nlohmann::json, std::string> extract_json(const std::string& text);

// Asks `r` of `p`; validates the reply against `schema` (agent/schema.h); on a bad reply, adds
// it and a message naming every violation to the conversation and asks again, at most
// `max_repairs` times. Repair calls carry the template id with "/repair" and a fields hash that
// counts the attempt, so that cassettes key them apart.
tl::expected<structured_reply, ask_failure> ask_json(llm::provider& p, llm::request r,
                                                     const nlohmann::json& schema, int max_repairs,
                                                     const llm::cancel_token* cancel = nullptr);

}  // namespace lathe::agent
