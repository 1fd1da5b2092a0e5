#include "search/run_loop.h"

namespace lathe::search {

const char* to_string(stop_reason s) {
  switch (s) {
    case stop_reason::steps: return "steps";
    case stop_reason::evals: return "evals";
    case stop_reason::calls: return "calls";
    case stop_reason::tokens: return "tokens";
    case stop_reason::usd: return "usd";
    case stop_reason::seconds: return "seconds";
    case stop_reason::exhausted: return "exhausted";
    case stop_reason::stalled: return "stalled";
    case stop_reason::waiting: return "waiting";
  }
  return "?";
}

namespace detail {
namespace {

// The limit a ledger has reached (after a model call was refused its reservation).
std::optional<llm::resource> reached_limit(const llm::ledger& l) {
  const llm::amounts s = l.spent();
  const budget& b = l.bounds().run;
  if (b.tokens && s.tokens >= *b.tokens) return llm::resource::tokens;
  if (b.usd && s.usd >= *b.usd) return llm::resource::usd;
  if (l.bounds().calls && s.calls >= *l.bounds().calls) return llm::resource::calls;
  if (b.seconds && s.seconds >= *b.seconds) return llm::resource::seconds;
  if (b.steps && s.steps >= *b.steps) return llm::resource::steps;
  if (b.evals && s.evals >= *b.evals) return llm::resource::evals;
  return std::nullopt;
}

}  // namespace

stop_reason stop_of(llm::resource r) {
  switch (r) {
    case llm::resource::steps: return stop_reason::steps;
    case llm::resource::evals: return stop_reason::evals;
    case llm::resource::calls: return stop_reason::calls;
    case llm::resource::tokens: return stop_reason::tokens;
    case llm::resource::usd: return stop_reason::usd;
    case llm::resource::seconds: return stop_reason::seconds;
  }
  return stop_reason::exhausted;
}

result<void> run_loop::emit(const std::string& kind, const event_key& key, nlohmann::json body,
                            const std::string& message) {
  auto wrote = j_.emit(kind, key, std::move(body), elapsed());
  if (!wrote) return tl::unexpected(wrote.error());
  if (*wrote && tell_) tell_(kind, message);
  return {};
}

void run_loop::charge(const llm::amounts& used) {
  llm::amounts a = used;
  a.seconds = 0;
  if (auto r = ledger_.reserve(a)) ledger_.commit(std::move(*r), a);
}

void run_loop::replayed_evaluation() {
  charge(llm::one_evaluation);
  ++evaluations_;
}

std::optional<llm::reservation> run_loop::reserve(const llm::amounts& worst_case) {
  auto r = ledger_.reserve(worst_case);
  if (!r) {
    refused(r.error());
    return std::nullopt;
  }
  return std::move(*r);
}

std::optional<evaluation> run_loop::gate(const std::function<evaluation()>& run, bool reserved) {
  std::optional<llm::reservation> hold;
  if (!reserved) {
    hold = reserve(llm::one_evaluation);
    if (!hold) return std::nullopt;
  }
  evaluation e = run();
  if (hold) ledger_.commit(std::move(*hold), llm::one_evaluation);
  ++evaluations_;
  return e;
}

void run_loop::stop(stop_reason why, std::string detail) {
  if (reason_) return;
  reason_ = why;
  if (!waiting_) detail_ = std::move(detail);
}

void run_loop::refused(const llm::refusal& r) { stop(stop_of(r.limit), r.message); }

void run_loop::wait(std::string detail) {
  if (!waiting_ && !reason_) detail_ = std::move(detail);
  waiting_ = true;
}

bool run_loop::ends_run(const agent::failure& f) {
  if (f.kind == agent::failure_kind::waiting) {
    wait(f.message);
    return true;
  }
  if (f.kind == agent::failure_kind::budget) {
    const auto lim = reached_limit(ledger_);
    stop(lim ? stop_of(*lim) : stop_reason::tokens, f.message);
    return true;
  }
  return false;
}

result<void> end_run(store& db, run& r, const result<void>& body, bool waiting, const std::string& detail,
                     const std::string& summary) {
  if (!body) {
    r.state = run_state::failed;
    r.message = body.error().message;
    (void)db.put_run(r);
    return body;
  }
  r.state = waiting ? run_state::interrupted : run_state::finished;
  r.message = waiting ? detail : std::string();
  r.summary = summary;
  return db.put_run(r);
}

}  // namespace detail
}  // namespace lathe::search
