// The store's side of model calls (table llm_calls, migration 4): one row per call, its prompt
// and reply as content-addressed blobs, so that the same prompt asked twice is stored once.
#include <sqlite3.h>

#include <cmath>

#include "store/migrations.h"
#include "store/sql.h"
#include "store/store.h"

namespace lathe {

namespace {

constexpr const char* now_sql = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

result<void> check_call(const llm_call& c) {
  auto bad = [](const std::string& what) {
    return fail(errc::invalid_argument, "add_llm_call: " + what);
  };
  if (c.provider.empty()) return bad("the call names no provider");
  if (c.template_id.empty())
    return bad("the call names no prompt template (agent/ sets template_id on every request)");
  if (c.prompt.empty()) return bad("the call has no prompt");
  if (c.tokens_in < 0 || c.tokens_out < 0) return bad("negative token counts");
  if (c.attempts < 0) return bad("a negative number of attempts");
  if (c.cost_usd && !(std::isfinite(*c.cost_usd) && *c.cost_usd >= 0))
    return bad("the cost must be a finite number of dollars >= 0");
  if (!std::isfinite(c.latency_seconds)) return bad("the latency is not a finite number");
  return {};
}

}  // namespace

result<int64_t> store::add_llm_call(const llm_call& c) {
  if (auto r = check_call(c); !r) return tl::unexpected(r.error());
  auto tx = sql::transaction::begin(db_.get());
  if (!tx) return tl::unexpected(tx.error());
  auto prompt = put_blob(c.prompt);
  if (!prompt) return tl::unexpected(prompt.error());
  std::optional<std::string> reply;
  if (c.reply) {
    auto h = put_blob(*c.reply);
    if (!h) return tl::unexpected(h.error());
    reply = std::move(*h);
  }
  auto s = sql::statement::prepare(
      db_.get(),
      std::string("INSERT INTO llm_calls (created_at, run_id, provider, model, template_id, "
                  "template_version, fields_hash, prompt_blob, reply_blob, tokens_in, "
                  "tokens_out, cost_usd, latency_seconds, finish_reason, error_kind, "
                  "error_message, attempts, request_id) VALUES (") +
          now_sql +
          ", ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)");
  if (!s) return tl::unexpected(s.error());
  if (c.run_id)
    s->bind(1, *c.run_id);
  else
    s->bind_null(1);
  s->bind(2, c.provider).bind(3, c.model).bind(4, c.template_id);
  s->bind(5, static_cast<int64_t>(c.template_version)).bind(6, c.fields_hash).bind(7, *prompt);
  if (reply)
    s->bind(8, *reply);
  else
    s->bind_null(8);
  s->bind(9, c.tokens_in).bind(10, c.tokens_out);
  if (c.cost_usd)
    s->bind(11, *c.cost_usd);
  else
    s->bind_null(11);
  s->bind(12, c.latency_seconds).bind(13, c.finish_reason).bind(14, c.error_kind);
  s->bind(15, c.error_message).bind(16, static_cast<int64_t>(c.attempts)).bind(17, c.request_id);
  if (auto r = s->run(); !r) return tl::unexpected(r.error());
  const int64_t id = sqlite3_last_insert_rowid(db_.get());
  if (auto r = tx->commit(); !r) return tl::unexpected(r.error());
  return id;
}

result<std::vector<llm_call>> store::llm_calls(const std::optional<std::string>& run_id) const {
  // Two spellings rather than "?1 IS NULL OR run_id = ?1", which keeps SQLite off the index.
  std::string q =
      "SELECT id, created_at, run_id, provider, model, template_id, template_version, "
      "fields_hash, prompt_blob, reply_blob, tokens_in, tokens_out, cost_usd, latency_seconds, "
      "finish_reason, error_kind, error_message, attempts, request_id FROM llm_calls ";
  if (run_id) q += "WHERE run_id = ?1 ";
  q += "ORDER BY id";
  auto s = sql::statement::prepare(db_.get(), q);
  if (!s) return tl::unexpected(s.error());
  if (run_id) s->bind(1, *run_id);
  std::vector<llm_call> out;
  for (;;) {
    auto row = s->step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) return out;
    llm_call c;
    c.id = s->int64(0);
    c.created_at = s->text(1);
    if (!s->is_null(2)) c.run_id = s->text(2);
    c.provider = s->text(3);
    c.model = s->text(4);
    c.template_id = s->text(5);
    c.template_version = static_cast<int32_t>(s->int64(6));
    c.fields_hash = s->text(7);
    auto prompt = get_blob(s->text(8));
    if (!prompt) return tl::unexpected(prompt.error());
    c.prompt = std::move(*prompt);
    if (!s->is_null(9)) {
      auto reply = get_blob(s->text(9));
      if (!reply) return tl::unexpected(reply.error());
      c.reply = std::move(*reply);
    }
    c.tokens_in = s->int64(10);
    c.tokens_out = s->int64(11);
    c.cost_usd = s->real(12);
    c.latency_seconds = s->real(13).value_or(0.0);
    c.finish_reason = s->text(14);
    c.error_kind = s->text(15);
    c.error_message = s->text(16);
    c.attempts = static_cast<int32_t>(s->int64(17));
    c.request_id = s->text(18);
    out.push_back(std::move(c));
  }
}

}  // namespace lathe
