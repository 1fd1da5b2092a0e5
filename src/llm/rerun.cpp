#include "llm/rerun.h"

namespace lathe::llm {

std::string key_text(const std::string& id, int32_t version, const std::string& fields) {
  return id + "/v" + std::to_string(version) + "/" + fields;
}

bool answers_from_log(const llm_call& c) {
  return c.error_kind == "none" && c.reply && !c.template_id.empty();
}

rerun_provider::rerun_provider(std::unique_ptr<provider> inner, const std::vector<llm_call>& recorded,
                               ledger* budget)
    : inner_(std::move(inner)), budget_(budget) {
  for (const auto& c : recorded)
    if (answers_from_log(c))
      by_key_[key_text(c.template_id, c.template_version, c.fields_hash)].push_back(c);
}

std::string rerun_provider::name() const { return inner_->name(); }

std::optional<response> rerun_provider::recorded_for(const request& r) {
  if (r.template_id.empty()) return std::nullopt;
  const std::string key = key_text(r.template_id, r.template_version, r.fields_hash);
  const int32_t index = counter_.next(key);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_key_.find(key);
  if (it == by_key_.end() || index >= static_cast<int32_t>(it->second.size())) return std::nullopt;
  const llm_call& c = it->second[static_cast<size_t>(index)];
  response out;
  out.text = *c.reply;
  out.tokens_in = c.tokens_in;
  out.tokens_out = c.tokens_out;
  out.model = c.model;
  out.request_id = c.request_id;
  ++answered_;
  if (budget_) {
    amounts used;
    used.calls = 1;
    used.tokens = c.tokens_in + c.tokens_out;
    used.usd = c.cost_usd.value_or(0.0);
    if (auto hold = budget_->reserve(used)) budget_->commit(std::move(*hold), used);
  }
  return out;
}

call_result rerun_provider::call(const request& r, const cancel_token* cancel) {
  if (auto got = recorded_for(r)) return *got;
  return inner_->call(r, cancel);
}

call_result rerun_provider::call_in(const request& r, const kernel_bundle& bundle, const cancel_token* cancel) {
  if (auto got = recorded_for(r)) return *got;
  if (auto* w = dynamic_cast<workspace_provider*>(inner_.get())) return w->call_in(r, bundle, cancel);
  return inner_->call(r, cancel);
}

}  // namespace lathe::llm
