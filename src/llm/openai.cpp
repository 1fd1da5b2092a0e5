#include "llm/openai.h"

#include <nlohmann/json.hpp>

namespace lathe::llm {
namespace {

using json = nlohmann::json;

finish_reason finish_of(const json& v) {
  if (!v.is_string()) return finish_reason::other;  // some local servers send null
  const auto& s = v.get_ref<const std::string&>();
  if (s == "stop") return finish_reason::stop;  // end of turn or a stop sequence: not told apart
  if (s == "length") return finish_reason::length;
  if (s == "content_filter") return finish_reason::content_filter;
  return finish_reason::other;  // tool_calls, function_call
}

// message.content is a string, null (a refusal or a tool call), or, on a few servers, a list
// of {type: "text", text} parts.
std::string text_of(const json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string text;
  if (content.is_array())
    for (const auto& part : content)
      if (part.is_object() && part.value("type", "") == "text" && part.contains("text") &&
          part["text"].is_string())
        text += part["text"].get<std::string>();
  return text;
}

}  // namespace

openai_provider::openai_provider(openai_options options)
    : options_(std::move(options)),
      url_(resolve_base_url(options_.base_url, "OPENAI_BASE_URL", "https://api.openai.com/v1") +
           "/chat/completions"),
      client_(options_.http) {
  options_.base_url = url_.substr(0, url_.size() - std::string("/chat/completions").size());
}

std::string openai_provider::name() const { return "openai/" + options_.model; }

call_result openai_provider::call(const request& r, const cancel_token* cancel) {
  auto key = resolve_key(options_.key_env, options_.key, options_.base_url);
  if (!key) return tl::unexpected(key.error());
  const std::vector<std::string> secrets{*key};

  json body = json::object();
  body["model"] = options_.model;
  json messages = json::array();
  if (!r.system.empty()) messages.push_back({{"role", "system"}, {"content", r.system}});
  for (const auto& m : r.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
  body["messages"] = std::move(messages);
  body["temperature"] = r.temperature;
  if (r.top_p) body["top_p"] = *r.top_p;
  body[options_.max_tokens_field] = r.max_tokens;
  if (!r.stop.empty()) body["stop"] = r.stop;
  if (!r.json_schema.empty()) {
    json schema = json::parse(r.json_schema, nullptr, false);
    if (schema.is_discarded() || !schema.is_object()) {
      call_failure f;
      f.kind = call_error::bad_request;
      f.message = "request.json_schema is not a JSON object (template " + r.template_id + ")";
      return tl::unexpected(std::move(f));
    }
    body["response_format"] = {{"type", "json_schema"},
                               {"json_schema",
                                {{"name", options_.schema_name},
                                 {"schema", std::move(schema)},
                                 {"strict", options_.strict_schema}}}};
  }

  http_post post{url_, {}, body.dump()};
  if (!key->empty()) post.headers.push_back({"Authorization", "Bearer " + *key, true});
  auto reply = client_.post_json(post, cancel);
  if (!reply) return tl::unexpected(reply.error());

  const json j = json::parse(reply->body, nullptr, false);
  if (j.is_discarded()) return tl::unexpected(malformed_reply(*reply, url_, "not JSON", secrets));
  if (!j.is_object()) return tl::unexpected(malformed_reply(*reply, url_, "not an object", secrets));
  // OpenRouter and some proxies answer 200 with an error object in place of choices.
  if (auto e = j.find("error"); e != j.end() && !j.contains("choices")) {
    call_failure f = malformed_reply(*reply, url_, "an error in a 200 reply", secrets);
    f.kind = call_error::server;
    return tl::unexpected(std::move(f));
  }
  auto choices = j.find("choices");
  if (choices == j.end() || !choices->is_array() || choices->empty() ||
      !(*choices)[0].is_object() || !(*choices)[0].contains("message") ||
      !(*choices)[0]["message"].is_object())
    return tl::unexpected(malformed_reply(*reply, url_, "no choices[0].message", secrets));
  const json& choice = (*choices)[0];
  const json& message = choice["message"];
  const json content = message.value("content", json());
  if (!content.is_string() && !content.is_null() && !content.is_array())
    return tl::unexpected(malformed_reply(*reply, url_, "message.content is not text", secrets));

  response out;
  out.text = text_of(content);
  out.finish = finish_of(choice.value("finish_reason", json()));
  // Structured outputs: a refusal arrives in message.refusal with null content.
  if (content.is_null() && message.contains("refusal") && message["refusal"].is_string()) {
    out.text = message["refusal"].get<std::string>();
    out.finish = finish_reason::content_filter;
  }
  const json usage = j.value("usage", json());
  out.tokens_in = usage_count(usage, "prompt_tokens");
  out.tokens_out = usage_count(usage, "completion_tokens");
  out.latency_seconds = reply->seconds;
  out.request_id = reply->request_id();
  if (out.request_id.empty() && j.contains("id") && j["id"].is_string())
    out.request_id = j["id"].get<std::string>();
  out.model = j.contains("model") && j["model"].is_string() ? j["model"].get<std::string>()
                                                            : options_.model;
  out.attempts = reply->attempts;
  return out;
}

}  // namespace lathe::llm
