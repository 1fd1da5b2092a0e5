// One model call as the store keeps it (table `llm_calls`, schema version 4), so that a run can
// be audited and replayed: what was asked, what came back, what it cost and how it went.
//
// The record has no place for headers or keys on purpose: the prompt is the rendered request
// (system prompt, messages, sampling parameters, the template that produced it) as JSON, built by
// llm/call_log.cpp from the request's allowed fields only. The store is below llm/ and cannot see
// its types, so the enums arrive as their names (llm/provider.h to_string).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace lathe {

struct llm_call {
  int64_t id = 0;                     // assigned by the store
  std::string created_at;             // assigned by the store (UTC, ISO 8601)
  std::optional<std::string> run_id;  // nullopt: a call outside any run (doctor, a one-off)
  std::string provider;               // "openai", "anthropic", "command", "replay"
  std::string model;                  // the model that answered as the provider names it
                                      // ("gpt-4o-2024-08-06"), else the configured one
  std::string template_id;            // agent/'s prompt template and its version
  int32_t template_version = 0;
  std::string fields_hash;           // hash of the rendered template fields (cassette key)
  std::string prompt;                // the rendered request as JSON: stored as a blob
  std::optional<std::string> reply;  // the reply text (a blob); nullopt: no reply came
  int64_t tokens_in = 0, tokens_out = 0;
  std::optional<double> cost_usd;  // nullopt: no price is configured for the model
  double latency_seconds = 0;
  std::string finish_reason;        // llm::finish_reason's name ("stop", "length"…)
  std::string error_kind = "none";  // llm::call_error's name; "none" for a success
  std::string error_message;        // empty for a success
  int32_t attempts = 1;             // HTTP attempts (retries + 1)
  std::string request_id;           // the provider's id for the call, when it gave one
};

}  // namespace lathe
