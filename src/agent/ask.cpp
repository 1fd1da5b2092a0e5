#include "agent/ask.h"

#include "agent/schema.h"
#include "llm/command.h"
#include "core/lines.h"

namespace lathe::agent {
namespace {

using nlohmann::json;

struct fence {
  std::string info;  // "json", "cpp", ""
  std::string body;
};

// Every complete ``` fence of the text, in order. Fence lines start a line: a "```" inside a
// JSON string (an `edits` value holding a fenced WHOLE body) is on the JSON's line, not at the
// start of one, since JSON strings hold no raw newlines.
std::vector<fence> fences_of(const std::string& text) {
  std::vector<fence> out;
  std::optional<fence> open;
  for (const std::string_view raw : split_lines(text)) {
    std::string_view line = raw;
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
    if (line.starts_with("```")) {
      if (!open) {
        open = fence{std::string(line.substr(3)), {}};
      } else {
        out.push_back(std::move(*open));
        open.reset();
      }
    } else if (open) {
      open->body.append(raw).push_back('\n');
    }
  }
  return out;
}

std::optional<json> parse_quiet(const std::string& s) {
  auto parsed = json::parse(s, nullptr, false);
  if (parsed.is_discarded()) return std::nullopt;
  return parsed;
}

}  // namespace

const char* to_string(feedback_kind k) {
  switch (k) {
    case feedback_kind::invalid_reply:
      return "invalid_reply";
    case feedback_kind::edit_not_applied:
      return "edit_not_applied";
  }
  return "?";
}

tl::expected<nlohmann::json, std::string> extract_json(const std::string& text) {
  const std::vector<fence> fences = fences_of(text);
  std::string first_error_body = text;  // what the parser's message is about
  // A ```json fence is the reply's own statement of where its JSON is: it wins over other
  // fences, which may hold code shown before the JSON (```cpp).
  for (const auto& f : fences)
    if (f.info == "json") {
      if (auto v = parse_quiet(f.body)) return *v;
      first_error_body = f.body;
      break;
    }
  if (auto v = parse_quiet(text)) return *v;
  for (const auto& f : fences)
    if (f.info != "json")
      if (auto v = parse_quiet(f.body); v && v->is_object()) return *v;
  // Prose around a bare object: from a '{' to the last '}'. The first '{' may belong to code
  // written before the JSON, so each '{' that opens a line is tried too.
  const size_t last = text.rfind('}');
  if (last != std::string::npos) {
    for (size_t first = text.find('{'); first != std::string::npos && first < last;
         first = text.find("\n{", first + 1)) {
      if (text[first] == '\n') ++first;
      if (auto v = parse_quiet(text.substr(first, last - first + 1))) return *v;
    }
  }
  // The parser's own message, for the model.
  try {
    [[maybe_unused]] const json unused = json::parse(first_error_body);
  } catch (const json::parse_error& e) {
    return tl::unexpected(std::string("the reply is not JSON (") + e.what() + ")");
  }
  return tl::unexpected(std::string("the reply is not JSON"));
}

tl::expected<structured_reply, ask_failure> ask_json(llm::provider& p, llm::request r,
                                                     const nlohmann::json& schema,
                                                     const ask_options& options) {
  structured_reply out;
  ask_failure failure;
  const std::string template_id = r.template_id, fields_hash = r.fields_hash;
  if (r.json_schema.empty()) r.json_schema = schema.dump();
  auto* workspace = options.bundle ? dynamic_cast<llm::workspace_provider*>(&p) : nullptr;
  for (int attempt = 0;; ++attempt) {
    llm::call_result c = workspace ? workspace->call_in(r, *options.bundle, options.cancel)
                                   : p.call(r, options.cancel);
    if (!c) {
      failure.what = ask_failure::kind::call;
      failure.call = c.error();
      failure.calls = std::move(out.calls);
      failure.attempts = attempt + 1;
      return tl::unexpected(std::move(failure));
    }
    out.calls.push_back(*c);
    std::optional<reply_problem> problem;
    auto value = extract_json(c->text);
    if (!value) {
      problem = reply_problem{feedback_kind::invalid_reply, value.error()};
    } else if (auto errors = validate(schema, *value); !errors.empty()) {
      problem = reply_problem{feedback_kind::invalid_reply,
                              "the reply does not follow the schema: " + describe(errors)};
    } else if (options.check) {
      problem = options.check(*value, c->text);
    }
    if (!problem) {
      out.value = std::move(*value);
      out.repairs = attempt;
      return out;
    }
    if (attempt >= options.max_repairs) {
      failure.what = problem->what == feedback_kind::edit_not_applied
                         ? ask_failure::kind::edit_not_applied
                         : ask_failure::kind::invalid;
      failure.last_error = problem->message;
      failure.calls = std::move(out.calls);
      failure.attempts = attempt + 1;
      return tl::unexpected(std::move(failure));
    }
    const std::string ask_again =
        problem->what == feedback_kind::edit_not_applied
            ? "Nothing was changed. Reply again with the whole JSON object, its edits corrected "
              "against the file as it is now."
            : "Reply again with only the corrected JSON object.";
    r.messages.push_back({"assistant", c->text});
    r.messages.push_back({"user", std::string("lathe-feedback: ") + to_string(problem->what) +
                                      "\n" + problem->message + "\n\n" + ask_again});
    r.template_id = template_id + "/repair";
    r.fields_hash = fields_hash + ":" + std::to_string(attempt + 1);
  }
}

tl::expected<structured_reply, ask_failure> ask_json(llm::provider& p, llm::request r,
                                                     const nlohmann::json& schema, int max_repairs,
                                                     const llm::cancel_token* cancel) {
  ask_options o;
  o.max_repairs = max_repairs;
  o.cancel = cancel;
  return ask_json(p, std::move(r), schema, o);
}

}  // namespace lathe::agent
