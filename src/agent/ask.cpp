#include "agent/ask.h"

#include "agent/schema.h"

namespace lathe::agent {

tl::expected<nlohmann::json, std::string> extract_json(const std::string& text) {
  std::string body = text;
  if (auto fence = text.find("```"); fence != std::string::npos) {
    auto start = text.find('\n', fence);
    auto end = start == std::string::npos ? std::string::npos : text.find("```", start);
    if (end != std::string::npos) body = text.substr(start + 1, end - start - 1);
  }
  auto parsed = nlohmann::json::parse(body, nullptr, false);
  if (!parsed.is_discarded()) return parsed;
  const auto first = text.find('{'), last = text.rfind('}');
  if (first != std::string::npos && last != std::string::npos && last > first) {
    parsed = nlohmann::json::parse(text.substr(first, last - first + 1), nullptr, false);
    if (!parsed.is_discarded()) return parsed;
  }
  // The parser's own message, for the model.
  try {
    (void)nlohmann::json::parse(body);
  } catch (const nlohmann::json::parse_error& e) {
    return tl::unexpected(std::string("the reply is not JSON (") + e.what() + ")");
  }
  return tl::unexpected(std::string("the reply is not JSON"));
}

tl::expected<structured_reply, ask_failure> ask_json(llm::provider& p, llm::request r,
                                                     const nlohmann::json& schema, int max_repairs,
                                                     const llm::cancel_token* cancel) {
  structured_reply out;
  ask_failure failure;
  const std::string template_id = r.template_id, fields_hash = r.fields_hash;
  if (r.json_schema.empty()) r.json_schema = schema.dump();
  for (int attempt = 0;; ++attempt) {
    llm::call_result c = p.call(r, cancel);
    if (!c) {
      failure.what = ask_failure::kind::call;
      failure.call = c.error();
      failure.calls = std::move(out.calls);
      return tl::unexpected(std::move(failure));
    }
    out.calls.push_back(*c);
    std::string problem;
    auto value = extract_json(c->text);
    if (!value) {
      problem = value.error();
    } else if (auto errors = validate(schema, *value); !errors.empty()) {
      problem = "the reply does not follow the schema: " + describe(errors);
    } else {
      out.value = std::move(*value);
      out.repairs = attempt;
      return out;
    }
    if (attempt >= max_repairs) {
      failure.what = ask_failure::kind::invalid;
      failure.last_error = problem;
      failure.calls = std::move(out.calls);
      return tl::unexpected(std::move(failure));
    }
    r.messages.push_back({"assistant", c->text});
    r.messages.push_back({"user", "Your reply cannot be used: " + problem +
                                      ". Reply again with only the corrected JSON."});
    r.template_id = template_id + "/repair";
    r.fields_hash = fields_hash + ":" + std::to_string(attempt + 1);
  }
}

}  // namespace lathe::agent
