// The one interface every model sits behind (DESIGN.md "Two proposers"): a hosted chat API, a
// local OpenAI-compatible server, the Anthropic messages API, an agent CLI (`command`), or a
// cassette (`replay`). Only llm/ talks to models; agent/ builds the prompts.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"

namespace lathe::llm {

struct message {
  std::string role;  // "user" | "assistant"
  std::string content;
};

struct request {
  std::string system;             // system prompt (may be empty)
  std::vector<message> messages;  // the conversation, oldest first
  double temperature = 0.0;
  std::optional<double> top_p;
  int64_t max_tokens = 4096;
  std::vector<std::string> stop;
  // A JSON schema the reply must follow (providers that support structured output pass it on;
  // agent/ validates every reply anyway). Empty: free text.
  std::string json_schema;
  // What agent/ rendered, for cassettes and the call record: template id, version and the hash
  // of its rendered fields (DESIGN.md: a cassette's key).
  std::string template_id;
  int32_t template_version = 0;
  std::string fields_hash;
  // From template version 2 on: the hash of the first user message and system prompt with the
  // context fields (this machine, this run's measurements) left out; a cassette checks it in
  // place of the first message's text (agent/prompt.h is_context_field). Empty: the text itself.
  std::string prompt_key;
};

enum class finish_reason : uint8_t { stop, length, stop_sequence, content_filter, error, other };
const char* to_string(finish_reason f);

struct response {
  std::string text;
  int64_t tokens_in = 0, tokens_out = 0;
  finish_reason finish = finish_reason::stop;
  double latency_seconds = 0;   // request sent -> reply complete, retries included
  std::string request_id;       // the provider's id for the call (x-request-id, "id")
  std::string model;            // the model that answered, as the provider names it
  int32_t attempts = 1;         // HTTP attempts (retries + 1)
};

// Why a call failed, beyond the message: callers retry nothing themselves (transport did), but
// budgets and reports tell these apart.
enum class call_error : uint8_t {
  none,
  unauthorized,   // 401/403: key missing or wrong (never retried)
  bad_request,    // 4xx other than 408/429: the request is wrong (never retried)
  rate_limited,   // 429 after the last retry
  server,         // 5xx after the last retry
  timeout,        // connect or total timeout after the last retry
  network,        // connection refused/reset, DNS
  malformed,      // the reply is not the protocol's JSON
  cancelled,
  missing_cassette,
  budget,         // the reservation was refused
  waiting,        // batch mode: the prompt is written out and its answer is not there yet
};
const char* to_string(call_error e);

struct call_failure {
  call_error kind = call_error::none;
  std::string message;  // never contains a key
  int32_t http_status = 0;
  int32_t attempts = 0;
};

using call_result = tl::expected<response, call_failure>;

// Cancellation shared by every call of a run (Ctrl-C, a budget running out).
struct cancel_token {
  std::atomic<bool> cancelled{false};
};

class provider {
 public:
  virtual ~provider() = default;
  // "openai/<model>", "anthropic/<model>", "command/<name>", "replay/<cassette dir>": the
  // provenance string llm:<this> (DESIGN.md vocabulary).
  virtual std::string name() const = 0;
  virtual call_result call(const request& r, const cancel_token* cancel = nullptr) = 0;
};

}  // namespace lathe::llm
