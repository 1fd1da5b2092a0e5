// JSON of budgets and runs.
#include "core/json_run.h"
#include "core/json_detail.h"

namespace lathe {

using namespace json_detail;

// A missing limit is written as null: "no limit", not zero.
void to_json(json& j, const budget& b) {
  j = json::object();
  put_opt(j, "steps", b.steps);
  put_opt(j, "evals", b.evals);
  put_opt(j, "tokens", b.tokens);
  put_opt(j, "usd", b.usd);
  put_opt(j, "seconds", b.seconds);
}

void from_json(const json& j, budget& b) {
  b = budget{};
  get_opt(j, "steps", b.steps);
  get_opt(j, "evals", b.evals);
  get_opt(j, "tokens", b.tokens);
  get_opt(j, "usd", b.usd);
  get_opt(j, "seconds", b.seconds);
}

void to_json(json& j, const run& r) {
  j = json{{"id", r.id},
           {"kind", to_string(r.kind)},
           {"task", r.task},
           {"state", to_string(r.state)},
           {"budget", r.limits},
           {"created_at", r.created_at},
           {"updated_at", r.updated_at},
           {"args", r.args},
           {"summary", r.summary},
           {"message", r.message}};
}

void from_json(const json& j, run& r) {
  r = run{};
  get(j, "id", r.id);
  get_enum(j, "kind", r.kind, run_kind::tune);
  get(j, "task", r.task);
  get_enum(j, "state", r.state, run_state::interrupted);
  get(j, "budget", r.limits);
  get(j, "created_at", r.created_at);
  get(j, "updated_at", r.updated_at);
  get(j, "args", r.args);
  get(j, "summary", r.summary);
  get(j, "message", r.message);
}

}  // namespace lathe
