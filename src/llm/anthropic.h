// The Anthropic messages API: POST {base_url}/v1/messages with `x-api-key` and
// `anthropic-version`. The system prompt is a top-level field, not a message; the reply is a list
// of content blocks, of which the text blocks make the reply text.
//
// Keys: read from `key_env` (ANTHROPIC_API_KEY) at every call, held only for that call. Required
// by default; a local gateway that speaks this protocol can set key_policy::when_remote.
// request.json_schema is not sent (the API's structured output is still a beta); agent/
// validates every reply against its schema anyway.
#pragma once

#include <string>

#include "llm/http.h"
#include "llm/provider.h"

namespace lathe::llm {

struct anthropic_options {
  std::string model;
  // Empty: $ANTHROPIC_BASE_URL when set, else https://api.anthropic.com. Without the /v1 (the
  // official SDKs' convention); a trailing slash is ignored.
  std::string base_url;
  std::string key_env = "ANTHROPIC_API_KEY";
  key_policy key = key_policy::required;
  std::string version = "2023-06-01";  // the anthropic-version header
  http_options http;
};

class anthropic_provider final : public provider {
 public:
  explicit anthropic_provider(anthropic_options options);

  std::string name() const override;  // "anthropic/<model>"
  call_result call(const request& r, const cancel_token* cancel = nullptr) override;

  const std::string& url() const { return url_; }

 private:
  anthropic_options options_;
  std::string url_;
  http_client client_;
};

}  // namespace lathe::llm
