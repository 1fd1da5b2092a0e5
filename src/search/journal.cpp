#include "search/journal.h"

#include <cstdio>

#include "core/evaluation.h"
#include "core/text.h"

#include <algorithm>

namespace lathe::search::detail {

using nlohmann::json;

json amounts_json(const llm::amounts& a) {
  return {{"steps", a.steps}, {"evals", a.evals},   {"calls", a.calls},
          {"tokens", a.tokens}, {"usd", a.usd}, {"seconds", a.seconds}};
}

llm::amounts amounts_from(const json& j) {
  llm::amounts a;
  if (!j.is_object()) return a;
  a.steps = j.value("steps", int64_t{0});
  a.evals = j.value("evals", int64_t{0});
  a.calls = j.value("calls", int64_t{0});
  a.tokens = j.value("tokens", int64_t{0});
  a.usd = j.value("usd", 0.0);
  a.seconds = j.value("seconds", 0.0);
  return a;
}

// What the proposer is told of a kernel's last evaluation: its median, roofline position and
// ptxas resources (empty parts left out).
std::string inspection_of(const evaluation& e) {
  std::vector<std::string> parts;
  if (e.median_seconds) {
    char b[64];
    std::snprintf(b, sizeof b, "median %.3g s", *e.median_seconds);
    parts.push_back(b);
  }
  if (e.roofline_fraction) {
    char b[96];
    std::snprintf(b, sizeof b, "%.1f%% of the roofline bound", 100 * *e.roofline_fraction);
    parts.push_back(b);
  }
  for (const auto& r : e.resources)
    parts.push_back(cat(r.function, ": ", std::to_string(r.registers), " registers, ",
                        std::to_string(r.shared_bytes), " B static shared memory",
                        r.spill_stores || r.spill_loads
                            ? cat(", spills ", std::to_string(r.spill_stores), "/", std::to_string(r.spill_loads))
                            : std::string()));
  return join(parts, "; ");
}

result<run> resumable_run(store& db, const std::string& id, run_kind kind, const std::string& task) {
  auto r = db.run_to_resume(id, kind);
  if (!r) return r;
  if (r->task != task)
    return fail(errc::invalid_argument, "run '" + r->id + "' works on task " + r->task + ", not " + task);
  return r;
}

result<run> begin_run(store& db, const std::optional<std::string>& resume, run_kind kind, const std::string& task,
                      const std::string& run_id, const budget& limits, const std::string& args, bool& resumed) {
  run r;
  resumed = resume.has_value();
  if (resume) {
    auto got = resumable_run(db, *resume, kind, task);
    if (!got) return tl::unexpected(got.error());
    r = *got;
  } else {
    r.id = run_id.empty() ? new_run_id(kind) : run_id;
    r.kind = kind;
    r.task = task;
    r.limits = limits;
    r.args = args.empty() ? "{}" : args;
  }
  r.state = run_state::running;
  r.message.clear();
  if (auto put = db.put_run(r); !put) return tl::unexpected(put.error());
  return r;
}

result<void> journal::load() {
  auto events = db_.run_events(run_id_);
  if (!events) return tl::unexpected(events.error());
  for (const auto& e : *events) {
    last_seq_ = std::max(last_seq_, e.seq);
    json body = json::parse(e.json, nullptr, false);
    if (body.is_discarded() || !body.is_object())
      return fail(errc::parse_error, "run " + run_id_ + ": event " + std::to_string(e.seq) + " (" + e.kind +
                                         ") is not a JSON object");
    elapsed_ = std::max(elapsed_, body.value("elapsed", 0.0));
    const std::string key = body.value("key", std::string());
    if (!key.empty()) by_key_[key] = std::move(body);
  }
  return {};
}

const json* journal::recorded(const event_key& key) const {
  auto it = by_key_.find(key.text());
  return it == by_key_.end() ? nullptr : &it->second;
}

result<bool> journal::emit(const std::string& kind, const event_key& key, json body, double elapsed) {
  if (by_key_.count(key.text())) return false;
  body["key"] = key.text();
  body["elapsed"] = elapsed;
  auto seq = db_.add_run_event(run_id_, kind, body.dump());
  if (!seq) return tl::unexpected(seq.error());
  last_seq_ = *seq;
  by_key_[key.text()] = std::move(body);
  return true;
}

}  // namespace lathe::search::detail
