// One structured question to a model: the reply must be JSON following a schema; a reply that
// is not is shown back to the model with what is wrong, a bounded number of times (issue 4: "a
// bounded repair round-trip that shows the model its error"). lathe's own checks of a reply
// (registry names, edits that apply) share the same bound (docs/proposer.md "Replies").
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/kernel.h"
#include "llm/provider.h"

namespace lathe::agent {

struct structured_reply {
  nlohmann::json value;              // valid against the schema, accepted by the check
  std::vector<llm::response> calls;  // every call made, repairs included (for budgets, records)
  int repairs = 0;
};

// Why a reply was sent back: the first line of the feedback message names the kind
// ("lathe-feedback: invalid_reply" / "lathe-feedback: edit_not_applied"), so that a transcript
// reader and the mock model see what is asked of them.
enum class feedback_kind : uint8_t { invalid_reply, edit_not_applied };
const char* to_string(feedback_kind k);

struct reply_problem {
  feedback_kind what = feedback_kind::invalid_reply;
  std::string message;  // for the model: what is wrong and what to do
};

// lathe's check of a reply that already follows its schema; nullopt accepts it. `text` is the
// whole reply (edit blocks may stand outside the JSON).
using reply_check = std::function<std::optional<reply_problem>(const nlohmann::json& value,
                                                               const std::string& text)>;

struct ask_failure {
  enum class kind : uint8_t { call, invalid, edit_not_applied } what = kind::invalid;
  llm::call_failure call;            // when what == call
  std::string last_error;            // otherwise: why the last reply was refused
  std::vector<llm::response> calls;  // the calls that came back (a failed one is not here)
  int32_t attempts = 0;              // calls made, the failed one included
};

struct ask_options {
  int max_repairs = 2;                    // repair rounds after the first call, any kind
  const kernel_bundle* bundle = nullptr;  // the working directory of a workspace_provider
  reply_check check;                      // empty: the schema alone decides
  const llm::cancel_token* cancel = nullptr;
};

// The JSON in a reply: the first ```json fence that parses, else the whole text, else another
// fence that parses to an object (a reply may show ```cpp code before its JSON), else the span
// from a '{' to the last '}'. A parse error is returned as text for the model.
tl::expected<nlohmann::json, std::string> extract_json(const std::string& text);

// Asks `r` of `p` (through `call_in` with `options.bundle` when `p` is a workspace_provider and a
// bundle is given); validates the reply against `schema` (agent/schema.h), then `options.check`;
// on a refused reply, adds it and a feedback message naming what is wrong to the conversation and
// asks again, at most `max_repairs` times. Repair calls carry the template id with "/repair" and a
// fields hash that counts the attempt, so that cassettes key them apart.
tl::expected<structured_reply, ask_failure> ask_json(llm::provider& p, llm::request r,
                                                     const nlohmann::json& schema,
                                                     const ask_options& options);

// The schema alone, without a bundle.
tl::expected<structured_reply, ask_failure> ask_json(llm::provider& p, llm::request r,
                                                     const nlohmann::json& schema, int max_repairs,
                                                     const llm::cancel_token* cancel = nullptr);

}  // namespace lathe::agent
