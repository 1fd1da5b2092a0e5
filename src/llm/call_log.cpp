#include "llm/call_log.h"

#include <nlohmann/json.hpp>

#include "llm/http.h"

namespace lathe::llm {

std::string request_record(const request& r, const std::vector<std::string>& secrets) {
  auto clean = [&secrets](const std::string& s) { return redact(s, secrets); };
  nlohmann::json messages = nlohmann::json::array();
  for (const auto& m : r.messages)
    messages.push_back({{"role", clean(m.role)}, {"content", clean(m.content)}});
  nlohmann::json stop = nlohmann::json::array();
  for (const auto& s : r.stop) stop.push_back(clean(s));
  nlohmann::json j{{"system", clean(r.system)},
                   {"messages", std::move(messages)},
                   {"temperature", r.temperature},
                   {"top_p", r.top_p ? nlohmann::json(*r.top_p) : nlohmann::json(nullptr)},
                   {"max_tokens", r.max_tokens},
                   {"stop", std::move(stop)},
                   {"json_schema", clean(r.json_schema)},
                   {"template_id", clean(r.template_id)},
                   {"template_version", r.template_version},
                   {"fields_hash", clean(r.fields_hash)}};
  // Prompts quote kernel sources, which need not be UTF-8; a replaced byte beats a lost record.
  // Redacted again after serialization, for a secret that JSON escaping would have split.
  return redact(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), secrets);
}

call_identity identity_of(const config& c, std::optional<std::string> run_id) {
  return call_identity{std::move(run_id), to_string(c.provider), c.model, c.model_price()};
}

lathe::llm_call make_record(const call_identity& id, const request& r, const call_result& res,
                            const std::vector<std::string>& secrets,
                            double failed_latency_seconds) {
  lathe::llm_call c;
  c.run_id = id.run_id;
  c.provider = id.provider;
  c.model = id.model;
  c.template_id = redact(r.template_id, secrets);
  c.template_version = r.template_version;
  c.fields_hash = redact(r.fields_hash, secrets);
  c.prompt = request_record(r, secrets);
  if (res) {
    if (!res->model.empty()) c.model = redact(res->model, secrets);
    c.reply = redact(res->text, secrets);
    c.tokens_in = std::max<int64_t>(res->tokens_in, 0);
    c.tokens_out = std::max<int64_t>(res->tokens_out, 0);
    if (id.cost) c.cost_usd = cost_usd(*id.cost, c.tokens_in, c.tokens_out);
    c.latency_seconds = res->latency_seconds;
    c.finish_reason = to_string(res->finish);
    c.error_kind = to_string(call_error::none);
    c.attempts = res->attempts;
    c.request_id = redact(res->request_id, secrets);
  } else {
    const call_failure& f = res.error();
    if (id.cost) c.cost_usd = 0.0;  // no tokens reported, none charged
    c.latency_seconds = failed_latency_seconds;
    c.finish_reason = to_string(finish_reason::error);
    c.error_kind = to_string(f.kind);
    c.error_message = redact(f.message, secrets);
    if (f.http_status != 0)
      c.error_message = "HTTP " + std::to_string(f.http_status) +
                        (c.error_message.empty() ? "" : ": " + c.error_message);
    c.attempts = f.attempts;
  }
  return c;
}

result<int64_t> call_log::record(const request& r, const call_result& res,
                                 double failed_latency_seconds) {
  lathe::llm_call c = make_record(id_, r, res, secrets_, failed_latency_seconds);
  std::lock_guard<std::mutex> lock(mu_);
  return db_.add_llm_call(c);
}

}  // namespace lathe::llm
