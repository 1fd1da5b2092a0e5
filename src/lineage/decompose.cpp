// The decompose run (decompose.h): init when needed, the backward walk, the forward phase, each
// accepted step stored the moment it is accepted; resume from the run's events.
#include "lineage/decompose.h"

#include <algorithm>
#include <ctime>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "core/json.h"
#include "core/text.h"
#include "features/feature_audit.h"
#include "lineage/walk.h"

namespace lathe::lineages {

using detail::kernel_state;
using detail::walk_context;

std::string new_run_id() { return lathe::new_run_id(run_kind::decompose); }

std::string lineage_id(const std::string& task, const std::string& expert_hash, const std::string& run_id) {
  return cat(task, "/", expert_hash.substr(0, 12), "/", run_id);
}

std::vector<std::string> check_invariants(const lineage& l) {
  std::vector<std::string> v;
  if (l.kernels.size() != l.steps.size() + 1)
    v.push_back(cat("kernels.size() ", std::to_string(l.kernels.size()), " != steps.size() + 1 (",
                    std::to_string(l.steps.size() + 1), ")"));
  if (l.features.size() != l.kernels.size())
    v.push_back(cat("features.size() ", std::to_string(l.features.size()), " != kernels.size() ",
                    std::to_string(l.kernels.size())));
  for (size_t i = 0; i < l.steps.size(); ++i) {
    const transition& s = l.steps[i];
    const std::string at = "steps[" + std::to_string(i) + "]";
    if (i < l.kernels.size() && s.from_kernel != l.kernels[i])
      v.push_back(at + ".from_kernel " + s.from_kernel + " != kernels[" + std::to_string(i) + "] " + l.kernels[i]);
    if (i + 1 < l.kernels.size() && s.to_kernel != l.kernels[i + 1])
      v.push_back(at + ".to_kernel " + s.to_kernel + " != kernels[" + std::to_string(i + 1) + "] " +
                  l.kernels[i + 1]);
    if (s.from_kernel == s.to_kernel) v.push_back(at + " goes from a kernel to itself");
    if (i + 1 >= l.features.size()) continue;
    const feature_diff d = diff_features(l.features[i], l.features[i + 1]);
    auto keys = [](const std::vector<feature>& fs) {
      std::vector<std::string> out;
      for (const auto& f : fs) out.push_back(feature_key(f));
      std::sort(out.begin(), out.end());
      return out;
    };
    if (keys(d.added) != keys(s.added))
      v.push_back(at + ".added {" + join(keys(s.added), ", ") + "} != features[" + std::to_string(i + 1) +
                  "] - features[" + std::to_string(i) + "] {" + join(keys(d.added), ", ") + "}");
    if (keys(d.removed) != keys(s.removed))
      v.push_back(at + ".removed {" + join(keys(s.removed), ", ") + "} != features[" + std::to_string(i) +
                  "] - features[" + std::to_string(i + 1) + "] {" + join(keys(d.removed), ", ") + "}");
  }
  return v;
}

namespace {

std::string options_json(const decompose_options& o) {
  json j{{"max_steps", o.max_steps},
         {"max_rejections", o.max_rejections},
         {"max_edits_per_step", o.max_edits_per_step},
         {"forward", o.forward},
         {"time", o.time},
         {"action_prior", o.action_prior},
         {"cpu_slots", o.cpu_slots}};
  if (o.max_total_rejections) j["max_total_rejections"] = *o.max_total_rejections;
  return j.dump();
}

// The run's own options on resume: a resumed run goes on under the limits it started with.
decompose_options options_from(const json& j, const decompose_options& caller) {
  decompose_options o = caller;
  o.max_steps = j.value("max_steps", o.max_steps);
  o.max_rejections = j.value("max_rejections", o.max_rejections);
  o.max_edits_per_step = j.value("max_edits_per_step", o.max_edits_per_step);
  o.forward = j.value("forward", o.forward);
  o.time = j.value("time", o.time);
  o.cpu_slots = j.value("cpu_slots", 0);
  o.action_prior = j.value("action_prior", o.action_prior);
  o.max_total_rejections.reset();
  if (j.contains("max_total_rejections")) o.max_total_rejections = j.at("max_total_rejections").get<int32_t>();
  return o;
}

std::vector<std::string> remaining_names(const std::vector<feature>& written) {
  std::vector<std::string> out;
  for (const auto& f : written)
    if (std::find(out.begin(), out.end(), f.name) == out.end()) out.push_back(f.name);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> texts(const std::vector<feature>& fs) {
  std::vector<std::string> out;
  for (const auto& f : fs) out.push_back(feature_text(f));
  return out;
}

// The lineage as the state holds it, in the optimizing direction: K0 … Kn = expert.
lineage assemble(const lineage& meta, const walk_state& s, const std::string& expert_hash) {
  lineage l = meta;
  l.kernels.clear();
  l.features.clear();
  l.steps.clear();
  for (auto it = s.accepted.rbegin(); it != s.accepted.rend(); ++it) {
    l.kernels.push_back(it->tr.from_kernel);
    l.features.push_back(it->features);
    transition tr = it->tr;
    if (auto f = s.forwards.find(it->step); f != s.forwards.end()) tr.forward = f->second;
    if (auto inv = s.invocations.find(it->step); inv != s.invocations.end()) tr.invocation = inv->second;
    l.steps.push_back(std::move(tr));
  }
  l.kernels.push_back(expert_hash);
  l.features.push_back(s.expert_features);
  return l;
}

struct runner {
  walk_context& c;
  walk_state& s;
  lineage meta;  // id, task, op, expert, target, run id; term/reason/remaining
  std::string expert_hash;

  lineage current() const { return assemble(meta, s, expert_hash); }

  // Stores an event, then the lineage, then tells the caller: a callback that throws (or a
  // kill) after this point loses nothing that was accepted.
  result<void> record(const char* kind, const std::string& body, int32_t step, const std::string& message) {
    auto seq = c.db.add_run_event(c.run_id, kind, body);
    if (!seq) return tl::unexpected(seq.error());
    s.last_seq = *seq;
    if (auto put = c.db.put_lineage(current()); !put) return tl::unexpected(put.error());
    if (c.o.progress) c.o.progress({c.run_id, kind, step, message});
    return {};
  }
};

result<void> walk_backward(runner& w, const kernel_bundle& expert) {
  walk_context& c = w.c;
  walk_state& s = w.s;
  kernel_state cur;
  if (s.accepted.empty()) {
    cur.k = expert;
    cur.all = s.expert_features;
  } else {
    auto k = c.db.get_kernel(s.accepted.back().tr.from_kernel);
    if (!k) return tl::unexpected(k.error());
    cur.k = *k;
    cur.k.name = s.accepted.back().predecessor_name;
    cur.all = s.accepted.back().features;
  }
  cur.written = written_features(cur.all, written_names(cur.k));

  std::vector<agent::attempt_note> notes;
  for (const auto& r : s.pending()) notes.push_back({r.summary});
  int32_t consecutive = static_cast<int32_t>(notes.size());
  int32_t total = static_cast<int32_t>(s.rejected.size());
  backward_end end;
  for (;;) {
    const int32_t step = static_cast<int32_t>(s.accepted.size()) + 1;
    if (cur.written.empty()) {
      end.term = termination::complete;
      end.reason = "no written mechanism is left: every registered feature the kernel's source held was removed";
      std::vector<std::string> soft = texts(cur.all);
      if (!soft.empty()) end.reason += " (compiler-made, not counted: " + join(soft, ", ") + ")";
      break;
    }
    if (step > c.o.max_steps) {
      end.term = termination::step_limit;
      end.reason = cat("max_steps (", std::to_string(c.o.max_steps), ") reached with ",
                       join(texts(cur.written), ", "), " left");
      break;
    }
    const int32_t attempt = consecutive + 1;
    detail::attempt_result a = detail::attempt_backward(c, cur, step, attempt, notes);
    if (a.end) {
      end = *a.end;
      // The reason lists what is left; a model's refusal may not name it (the rule engine's does).
      std::vector<std::string> unnamed;
      for (const auto& f : cur.written)
        if (end.reason.find(f.name) == std::string::npos) unnamed.push_back(feature_text(f));
      if (!unnamed.empty()) end.reason += "; written features left: " + join(texts(cur.written), ", ");
      break;
    }
    if (a.rejected) {
      s.rejected.push_back(*a.rejected);
      notes.push_back({a.rejected->summary});
      ++consecutive, ++total;
      if (auto r = w.record(event_kind::backward_rejected, rejected_body(*a.rejected), step,
                            cat("step ", std::to_string(step), " attempt ", std::to_string(attempt),
                                " rejected (", a.rejected->stage, "): ", a.rejected->summary));
          !r)
        return r;
      if (consecutive >= c.o.max_rejections) {
        end.term = termination::rejection_limit;
        end.reason = cat(std::to_string(consecutive), " consecutive rejected attempts at step ",
                         std::to_string(step), " (max_rejections ", std::to_string(c.o.max_rejections),
                         "); last: ", a.rejected->summary);
        break;
      }
      if (c.o.max_total_rejections && total >= *c.o.max_total_rejections) {
        end.term = termination::rejection_limit;
        end.reason = cat(std::to_string(total), " rejected attempts in the walk (max_total_rejections ",
                         std::to_string(*c.o.max_total_rejections), "); last: ", a.rejected->summary);
        break;
      }
      continue;
    }
    // Accepted: the kernel first (the event names it), then the event, then the lineage.
    accepted_step& acc = *a.accepted;
    if (auto put = c.db.put_kernel(a.predecessor); !put) return put;
    s.accepted.push_back(acc);
    std::string msg = cat("step ", std::to_string(step), ": removed ", join(texts(acc.claimed), " + "), " (",
                          acc.tr.action, ")");
    if (acc.tr.speedup) msg += cat(", step speedup ", std::to_string(*acc.tr.speedup));
    if (auto r = w.record(event_kind::backward_accepted, accepted_body(acc), step, msg); !r) return r;
    cur.k = a.predecessor;
    cur.all = acc.features;
    cur.written = written_features(cur.all, written_names(cur.k));
    notes.clear();
    consecutive = 0;
  }
  if (end.term != termination::complete) end.remaining = remaining_names(cur.written);
  s.backward_done = end;
  w.meta.term = end.term;
  w.meta.reason = end.reason;
  w.meta.remaining_features = end.remaining;
  return w.record(event_kind::backward_finished, backward_end_body(end), 0,
                  cat("backward walk ended: ", to_string(end.term), ": ", end.reason));
}

// The two kernels of accepted step `a`: its predecessor and successor.
result<std::pair<kernel_bundle, kernel_bundle>> step_kernels(walk_context& c, const accepted_step& a,
                                                            const kernel_bundle& expert) {
  auto pred = c.db.get_kernel(a.tr.from_kernel);
  if (!pred) return tl::unexpected(pred.error());
  kernel_bundle succ = expert;
  if (a.tr.to_kernel != expert.hash) {
    auto k = c.db.get_kernel(a.tr.to_kernel);
    if (!k) return tl::unexpected(k.error());
    succ = *k;
  }
  return std::make_pair(std::move(*pred), std::move(succ));
}

// Each step's forward re-derivation, recorded the moment it is decided. With CPU slots
// (cpu_slots > 1) as many checks at a time: steps proposed here in order (the proposer and the
// store on this thread), their gate checks at once (each on a free slot), the rest (feature audit,
// timing) and the records in order, so that the outcome is the one-at-a-time walk's and a killed
// run loses at most the batch in flight.
result<void> walk_forward(runner& w, const kernel_bundle& expert) {
  walk_context& c = w.c;
  walk_state& s = w.s;
  std::vector<const accepted_step*> todo;
  for (const accepted_step& a : s.accepted)
    if (!s.forwards.count(a.step)) todo.push_back(&a);
  const size_t width = static_cast<size_t>(std::max(1, c.o.cpu_slots));
  struct one {
    const accepted_step* a;
    kernel_bundle succ;
    detail::forward_pending p;
    std::future<evaluation> checked;
  };
  for (size_t next = 0; next < todo.size();) {
    // Steps proposed in order until the batch holds `width` kernels to check (a step the proposer
    // could not re-derive, or an identity round trip, needs none); without slots, one step.
    std::vector<one> batch;
    for (size_t to_check = 0; next < todo.size() && to_check < width && (width > 1 || batch.empty()); ++next) {
      auto ks = step_kernels(c, *todo[next], expert);
      if (!ks) return tl::unexpected(ks.error());
      batch.push_back({todo[next], ks->second, detail::propose_forward(c, *todo[next], ks->first, ks->second), {}});
      if (batch.back().p.k) ++to_check;
    }
    for (auto& b : batch)
      if (b.p.k)
        b.checked = std::async(width > 1 ? std::launch::async : std::launch::deferred,
                               [&c, &b] { return c.v.check(c.t, *b.p.k, b.succ, b.p.out.result.prov); });
    // Every check joined before the rest goes on on this thread alone.
    std::vector<evaluation> checks(batch.size());
    for (size_t i = 0; i < batch.size(); ++i)
      if (batch[i].p.k) checks[i] = batch[i].checked.get();
    for (size_t i = 0; i < batch.size(); ++i)
      if (batch[i].p.k) detail::finish_forward(c, *batch[i].a, batch[i].succ, checks[i], batch[i].p);
    for (auto& b : batch) {
      const detail::forward_outcome& f = b.p.out;
      const int32_t step = b.a->step;
      s.forwards[step] = f.result;
      s.invocations[step] = f.invocation;
      if (auto r = w.record(event_kind::forward, forward_body(step, f.result, f.invocation), step,
                            cat("forward ", std::to_string(step), ": ", to_string(f.result.status), ": ",
                                f.result.reason));
          !r)
        return r;
    }
  }
  return {};
}

json summary_of(const runner& w) {
  std::map<std::string, int> fwd;
  for (const auto& [step, f] : w.s.forwards) ++fwd[to_string(f.status)];
  return json{{"lineage", w.meta.id},
              {"termination", to_string(w.meta.term)},
              {"reason", w.meta.reason},
              {"steps", w.s.accepted.size()},
              {"rejected", w.s.rejected.size()},
              {"remaining_features", w.meta.remaining_features},
              {"forward", fwd}};
}

// The accepted check to start from: the newest, or a fresh init (recorded in the run).
result<expert_check> accepted_check(walk_context& c, const kernel_bundle& expert, bool& ran_init,
                                    const std::function<result<void>(const expert_check&)>& note_init) {
  auto latest = c.db.latest_expert_check(c.t.name, expert.hash);
  if (!latest) return tl::unexpected(latest.error());
  if (*latest && (*latest)->accepted) return **latest;
  auto check = init_expert(c.t, expert, c.v, c.p, c.db, c.o.init);
  if (!check) return tl::unexpected(check.error());
  ran_init = true;
  if (auto r = note_init(*check); !r) return tl::unexpected(r.error());
  return *check;
}

// --resume: the run (of this task's expert), its own options and its state replayed from its
// events.
result<void> resume_decompose(store& db, const task& t, const kernel_bundle& expert,
                              const decompose_options& caller, run& r, decompose_options& o, walk_state& s) {
  auto got = db.get_run(*caller.resume_run);
  if (!got) return tl::unexpected(got.error());
  if (!*got) return fail(errc::not_found, "no run '" + *caller.resume_run + "' to resume");
  r = **got;
  if (r.kind != run_kind::decompose)
    return fail(errc::invalid_argument, "run '" + r.id + "' is a " + to_string(r.kind) + " run, not decompose");
  json args;
  try {
    args = json::parse(r.args);
  } catch (const std::exception& e) {
    return fail(errc::parse_error, "run '" + r.id + "': its args do not parse: " + e.what());
  }
  const std::string hash = args.value("expert", json::object()).value("hash", "");
  if (r.task != t.name || hash != expert.hash)
    return fail(errc::invalid_argument, cat("run '", r.id, "' decomposes ", r.task, " expert ", hash.substr(0, 12),
                                            ", not ", t.name, " expert ", expert.hash.substr(0, 12)));
  o = options_from(args.value("options", json::object()), caller);
  auto events = db.run_events(r.id);
  if (!events) return tl::unexpected(events.error());
  auto replayed = replay(*events);
  if (!replayed) return tl::unexpected(replayed.error());
  s = std::move(*replayed);
  return {};
}

// A new run under a free id, its arguments as a resume reads them back.
result<void> new_decompose(store& db, const task& t, const kernel_bundle& expert, const decompose_options& o,
                           run& r) {
  r.id = o.run_id.empty() ? new_run_id() : o.run_id;
  if (auto taken = db.get_run(r.id); !taken || *taken)
    return fail(errc::invalid_argument, "run id '" + r.id + "' is already used");
  r.kind = run_kind::decompose;
  r.task = t.name;
  r.limits.steps = o.max_steps;
  r.args = json{{"task", t.name},
                {"task_dir", t.dir.string()},
                {"expert", {{"name", expert.name}, {"hash", expert.hash}}},
                {"options", json::parse(options_json(o))},
                {"proposer", o.proposer_label},
                {"config", o.config_source}}
               .dump();
  return {};
}

void name_lineage(runner& w, const task& t, const kernel_bundle& expert, const expert_check& check,
                  const std::string& run_id) {
  w.meta.id = lineage_id(t.name, expert.hash, run_id);
  w.meta.task = t.name;
  w.meta.op = t.op;
  w.meta.expert = expert.name;
  w.meta.target = check.target;
  w.meta.run_id = run_id;
  w.meta.term = termination::unknown;
  w.meta.reason = "in progress (run " + run_id + ")";
}

// The run's `started` event the first time; on resume, the backward walk's end as recorded and
// a `resumed` event unless the run had finished.
result<void> record_start(runner& w, const task& t, const kernel_bundle& expert, const expert_check& check,
                          const std::string& run_id) {
  walk_state& s = w.s;
  if (!s.started) {
    s.started = true;
    s.check_id = check.id;
    s.expert_features = check.features;
    return w.record(event_kind::started, started_body(t.name, expert, check.id, w.meta.id, s.expert_features), 0,
                    "decompose " + t.name + " " + expert.name + ": run " + run_id);
  }
  if (s.backward_done) {
    w.meta.term = s.backward_done->term;
    w.meta.reason = s.backward_done->reason;
    w.meta.remaining_features = s.backward_done->remaining;
  }
  if (!s.finished)
    return w.record(event_kind::resumed, json{{"from_seq", s.last_seq}, {"steps", s.accepted.size()}}.dump(), 0,
                    cat("resumed run ", run_id, " after ", std::to_string(s.accepted.size()), " accepted step(s)"));
  return {};
}

}  // namespace

result<decompose_result> decompose(const task& t, const kernel_bundle& expert, verifier& v,
                                   agent::proposer& p, store& db, const decompose_options& caller) {
  if (t.role == task_role::heldout)
    return fail(errc::invalid_argument,
                "task " + t.name + " is held out: its kernels are admission and evaluation ground, never "
                "decomposed (docs/tasks.md \"Roles\")");
  decompose_result out;
  decompose_options o = caller;
  run r;
  walk_state s;
  if (caller.resume_run) {
    if (auto resumed = resume_decompose(db, t, expert, caller, r, o, s); !resumed) return tl::unexpected(resumed.error());
    out.resumed = true;
  } else {
    if (auto made = new_decompose(db, t, expert, o, r); !made) return tl::unexpected(made.error());
  }
  r.state = run_state::running;
  r.message.clear();
  if (auto put = db.put_run(r); !put) return tl::unexpected(put.error());
  if (auto put = db.put_kernel(expert); !put) return tl::unexpected(put.error());

  walk_context c{t, v, p, db, o, r.id, target_summary(t, ""), expert.name};
  runner w{c, s, {}, expert.hash};
  auto stop = [&](run_state state, const std::string& message) {
    r.state = state;
    r.message = message;
    (void)db.put_run(r);  // best effort: the error being returned says more than this could
  };
  auto failed = [&](const error& e) -> result<decompose_result> {
    stop(run_state::failed, e.message);
    return tl::unexpected(e);
  };

  try {
    // The expert check: from the run when resuming, else the newest accepted one, else init.
    if (s.started) {
      out.check.id = s.check_id;
      auto latest = db.latest_expert_check(t.name, expert.hash);
      if (latest && *latest) out.check = **latest;
    } else {
      auto check = accepted_check(c, expert, out.ran_init, [&](const expert_check& ch) -> result<void> {
        auto seq = db.add_run_event(r.id, event_kind::init,
                                    json{{"check", ch.id}, {"accepted", ch.accepted}, {"reason", ch.reason}}.dump());
        if (!seq) return tl::unexpected(seq.error());
        if (o.progress) o.progress({r.id, event_kind::init, 0, "init: " + ch.reason});
        return {};
      });
      if (!check) return failed(check.error());
      out.check = *check;
      if (!check->accepted) {
        const std::string why = "init refused the expert: " + check->reason;
        stop(run_state::failed, why);
        return fail(errc::invalid_argument, why);
      }
    }
    c.target = target_summary(t, out.check.target);
    name_lineage(w, t, expert, out.check, r.id);
    if (auto rec = record_start(w, t, expert, out.check, r.id); !rec) return failed(rec.error());

    if (!s.finished) {
      if (!s.backward_done)
        if (auto b = walk_backward(w, expert); !b) return failed(b.error());
      if (o.forward)
        if (auto f = walk_forward(w, expert); !f) return failed(f.error());
      s.finished = true;
      if (auto rec = w.record(event_kind::finished, summary_of(w).dump(), 0,
                              cat("finished: ", to_string(w.meta.term), ", ", std::to_string(s.accepted.size()),
                                  " step(s)"));
          !rec)
        return failed(rec.error());
    }
  } catch (const std::exception& e) {
    stop(run_state::interrupted, std::string("interrupted: ") + e.what());
    throw;
  } catch (...) {
    stop(run_state::interrupted, "interrupted");
    throw;
  }

  r.state = run_state::finished;
  r.summary = summary_of(w).dump();
  r.message.clear();
  if (auto put = db.put_run(r); !put) return tl::unexpected(put.error());
  out.r = r;
  out.l = w.current();
  return out;
}

}  // namespace lathe::lineages
