#include "llm/anthropic.h"

#include <nlohmann/json.hpp>

namespace lathe::llm {
namespace {

using json = nlohmann::json;

finish_reason finish_of(const json& v) {
  if (!v.is_string()) return finish_reason::other;
  const auto& s = v.get_ref<const std::string&>();
  if (s == "end_turn") return finish_reason::stop;
  if (s == "max_tokens") return finish_reason::length;
  if (s == "stop_sequence") return finish_reason::stop_sequence;
  if (s == "refusal") return finish_reason::content_filter;
  return finish_reason::other;  // tool_use, pause_turn
}

}  // namespace

anthropic_provider::anthropic_provider(anthropic_options options)
    : options_(std::move(options)),
      url_(resolve_base_url(options_.base_url, "ANTHROPIC_BASE_URL", "https://api.anthropic.com") +
           "/v1/messages"),
      client_(options_.http) {
  options_.base_url = url_.substr(0, url_.size() - std::string("/v1/messages").size());
}

std::string anthropic_provider::name() const { return "anthropic/" + options_.model; }

call_result anthropic_provider::call(const request& r, const cancel_token* cancel) {
  auto key = resolve_key(options_.key_env, options_.key, options_.base_url);
  if (!key) return tl::unexpected(key.error());
  const std::vector<std::string> secrets{*key};

  json body = json::object();
  body["model"] = options_.model;
  body["max_tokens"] = r.max_tokens;  // required by the API
  if (!r.system.empty()) body["system"] = r.system;
  json messages = json::array();
  for (const auto& m : r.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
  body["messages"] = std::move(messages);
  body["temperature"] = r.temperature;
  if (r.top_p) body["top_p"] = *r.top_p;
  if (!r.stop.empty()) body["stop_sequences"] = r.stop;

  http_post post{url_, {}, body.dump()};
  if (!key->empty()) post.headers.push_back({"x-api-key", *key, true});
  post.headers.push_back({"anthropic-version", options_.version, false});
  auto reply = client_.post_json(post, cancel);
  if (!reply) return tl::unexpected(reply.error());

  const json j = json::parse(reply->body, nullptr, false);
  if (j.is_discarded()) return tl::unexpected(malformed_reply(*reply, url_, "not JSON", secrets));
  if (!j.is_object() || !j.contains("content") || !j["content"].is_array())
    return tl::unexpected(malformed_reply(*reply, url_, "no content[]", secrets));

  response out;
  // Text blocks in order; thinking and tool_use blocks are not the reply.
  for (const auto& block : j["content"]) {
    if (!block.is_object())
      return tl::unexpected(malformed_reply(*reply, url_, "a content block is not an object", secrets));
    if (block.value("type", "") != "text") continue;
    if (!block.contains("text") || !block["text"].is_string())
      return tl::unexpected(malformed_reply(*reply, url_, "a text block without text", secrets));
    out.text += block["text"].get<std::string>();
  }
  out.finish = finish_of(j.value("stop_reason", json()));
  const json usage = j.value("usage", json());
  // Cache reads and writes are input too (lathe sends no cache_control, so they are 0 unless a
  // gateway caches on its own).
  out.tokens_in = usage_count(usage, "input_tokens") + usage_count(usage, "cache_creation_input_tokens") +
                  usage_count(usage, "cache_read_input_tokens");
  out.tokens_out = usage_count(usage, "output_tokens");
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
