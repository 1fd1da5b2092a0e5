// OpenAI-compatible chat completions: POST {base_url}/chat/completions. One wire format serves
// OpenAI, DeepSeek, OpenRouter and the local servers (vLLM, SGLang, Ollama's /v1, llama.cpp
// server), so everything that differs between them is an option here, not another provider.
//
// Keys: read from the environment variable `key_env` at every call, held only for that call,
// sent as `Authorization: Bearer …`. By default (key_policy::when_remote) a missing key is an
// error only when the base URL is not local: a vLLM on localhost needs none, api.openai.com does.
#pragma once

#include <string>

#include "llm/http.h"
#include "llm/provider.h"

namespace lathe::llm {

struct openai_options {
  std::string model;
  // Empty: $OPENAI_BASE_URL when set, else https://api.openai.com/v1. Include the API prefix
  // (…/v1); a trailing slash is ignored.
  std::string base_url;
  std::string key_env = "OPENAI_API_KEY";
  key_policy key = key_policy::when_remote;
  // OpenAI's reasoning models refuse "max_tokens" and want "max_completion_tokens"; the
  // compatible servers know only the former.
  std::string max_tokens_field = "max_tokens";
  // response_format.json_schema.{name, strict} when the request carries a schema. strict=true
  // makes OpenAI constrain decoding to the schema (vLLM and SGLang do so regardless).
  std::string schema_name = "reply";
  bool strict_schema = true;
  http_options http;
};

class openai_provider final : public provider {
 public:
  explicit openai_provider(openai_options options);

  std::string name() const override;  // "openai/<model>"
  call_result call(const request& r, const cancel_token* cancel = nullptr) override;

  const std::string& url() const { return url_; }  // the endpoint the calls go to

 private:
  openai_options options_;
  std::string url_;
  http_client client_;
};

}  // namespace lathe::llm
