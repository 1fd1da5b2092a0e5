// One backward attempt (decompose.h): propose, check the claim, audit the features (continuing a
// partial removal on the intermediate kernel), gate, time.
#include <algorithm>
#include <cstdio>

#include "core/feature_registry.h"
#include "core/text.h"
#include "features/feature_audit.h"
#include "lineage/walk.h"

namespace lathe::lineages::detail {

std::string first_line(const std::string& s, size_t max) {
  std::string l = s.substr(0, s.find('\n'));
  if (l.size() > max) l = l.substr(0, max) + "…";
  return l;
}

kernel_state walk_context::observe(const kernel_bundle& k, const std::vector<feature>& audited_before) const {
  kernel_state s;
  s.k = k;
  const agent::rules::detections d = v.features(t, k);
  s.all = features_of(d);
  s.notes = d.notes;
  s.built = std::none_of(d.notes.begin(), d.notes.end(), [](const std::string& n) {
    return n.rfind("no artifact examined", 0) == 0;
  });
  std::vector<std::string> names;
  for (const auto& f : audited_before)
    if (f.method == detection_method::proposer_audit &&
        std::find(names.begin(), names.end(), f.name) == names.end())
      names.push_back(f.name);
  if (!names.empty()) {
    agent::audit_request req;
    req.t = &t;
    req.kernel = k;
    req.features = names;
    req.target = target;
    if (auto a = p.audit_features(req)) {
      for (const auto& verdict : a->verdicts)
        if (verdict.status == agent::presence::present)
          s.all.push_back({verdict.locus, verdict.name, {}, detection_method::proposer_audit});
    } else {
      s.notes.push_back("audit of " + join(names, ", ") + " failed: " + a.error().message);
    }
  }
  s.written = written_features(s.all, written_names(k));
  return s;
}

namespace {

std::string ratio_text(double r) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3fx", r);
  return buf;
}

// The note the next proposal reads: what was tried (the proposal's own first line names a rule
// and its anchor, which is how the rule engine recognizes a site it must skip) and why it failed.
std::string summary_of(const agent::proposal& p, const std::string& claimed, const std::string& why) {
  return cat(p.action.empty() ? std::string("(no action)") : p.action, " removing ",
             claimed.empty() ? std::string("(no claim)") : claimed, ": ", why, " [",
             first_line(p.rationale), "]");
}

// The claim a proposal makes: written registry names of the kernel, each once (one mechanism,
// which may carry more than one name: feature_audit.h).
std::string claim_problem(const agent::proposal& p, const kernel_state& cur) {
  if (p.features_removed.empty()) return "it claims no feature removed";
  std::vector<std::string> seen;
  for (const auto& n : p.features_removed) {
    if (!find_feature(n)) return "'" + n + "' is not a registry name";
    if (std::find(seen.begin(), seen.end(), n) != seen.end()) return "it claims " + n + " twice";
    seen.push_back(n);
    if (std::none_of(cur.written.begin(), cur.written.end(), [&](const feature& f) { return f.name == n; }))
      return "the kernel holds no written " + n + " to remove";
  }
  if (!p.features_added.empty()) return "a backward step adds nothing, and it claims " + join(p.features_added, ", ");
  if (p.kernel.hash == cur.k.hash) return "the proposed kernel is the current kernel: nothing changed";
  return "";
}

// The predecessor as the audit leaves it: the proposal's kernel, or its continuation.
struct audited {
  kernel_bundle pred;
  std::string edits;
  int32_t edits_used = 1;
  kernel_state ps;
  step_audit audit;
};

// The audit, continuing a partial removal on the intermediate kernel (decompose_options::
// max_edits_per_step): one mechanism per step, never half of one. Returns why the attempt is
// rejected at the audit when a partial removal cannot be finished, or nothing.
std::optional<std::string> audit_removal(walk_context& c, const kernel_state& cur, int32_t step,
                                         const agent::backward_request& req,
                                         const std::vector<std::string>& claimed_names, audited& a) {
  for (;;) {
    a.ps = c.observe(a.pred, cur.all);
    if (!a.ps.built) break;  // the gate says why
    a.audit = audit_step(claimed_names, cur.written, a.ps.written, cur.all, a.ps.all);
    if (a.audit.kind != audit_kind::partial) break;
    if (a.edits_used >= c.o.max_edits_per_step)
      return cat(a.audit.reason, " after ", std::to_string(a.edits_used), " edits (the limit per step)");
    agent::backward_request more = req;
    more.kernel = a.pred;
    more.features.clear();
    auto is_claimed = [&](const std::string& n) {
      return std::find(claimed_names.begin(), claimed_names.end(), n) != claimed_names.end();
    };
    for (const auto& f : a.ps.written)
      if (is_claimed(f.name)) more.features.push_back(f);
    more.action_prior = claimed_names;
    more.rejected.clear();
    auto next = c.p.propose_backward(more);
    std::string why;
    if (!next)
      why = "the proposer could not go on (" + first_line(next.error().message) + ")";
    else if (next->features_removed.empty() ||
             !std::all_of(next->features_removed.begin(), next->features_removed.end(), is_claimed))
      why = "the continuation claims " + join(next->features_removed, ", ");
    else if (next->kernel.hash == a.pred.hash)
      why = "the continuation changed nothing";
    if (!why.empty()) return cat(a.audit.reason, " after ", std::to_string(a.edits_used), " edit(s); ", why);
    a.edits += next->edits;
    a.pred = next->kernel;
    a.pred.name = cat(c.expert_name, "~", std::to_string(step));
    ++a.edits_used;
  }
  return std::nullopt;
}

// The accepted step: the transition pred -> cur with the audit's features, timed where asked.
accepted_step accept(walk_context& c, const kernel_state& cur, int32_t step, const agent::proposal& first,
                     const std::vector<std::string>& claimed_names, const audited& a,
                     const std::vector<int64_t>& evaluations, const std::vector<agent::attempt_note>& notes) {
  accepted_step s;
  s.step = step;
  for (const auto& n : claimed_names)
    for (const auto& f : a.audit.removed)
      if (f.name == n) {
        s.claimed.push_back(f);
        break;
      }
  s.predecessor_name = a.pred.name;
  s.features = a.ps.all;
  s.notes = a.audit.notes;
  if (a.edits_used > 1) s.notes.push_back(cat("removed in ", std::to_string(a.edits_used), " edits"));
  transition& tr = s.tr;
  tr.from_kernel = a.pred.hash;
  tr.to_kernel = cur.k.hash;
  tr.action = first.action;
  std::vector<std::string> loci;
  for (const auto& f : a.audit.removed)
    if (std::find(loci.begin(), loci.end(), f.locus) == loci.end()) loci.push_back(f.locus);
  tr.locus = join(loci, ", ");
  tr.edit = a.edits;
  const feature_diff d = diff_features(a.ps.all, cur.all);
  tr.added = d.added;
  tr.removed = d.removed;
  tr.evaluations = evaluations;
  for (const auto& n : notes) tr.rejected.push_back(n.summary);
  tr.prov = first.prov;
  if (c.o.time) {
    // time(pred) / time(succ): the successor is the candidate, the predecessor its baseline.
    const evaluation timed = c.v.compare(c.t, cur.k, a.pred, first.prov);
    if (timed.id) tr.evaluations.push_back(timed.id);
    tr.speedup = ratio(timed);
    if (timed.result != outcome::ok)
      s.notes.push_back(cat("timing: ", std::string(to_string(timed.result)), ": ", first_line(timed.message)));
    else if (tr.speedup)
      s.notes.push_back("step speedup " + ratio_text(*tr.speedup));
  }
  return s;
}

}  // namespace

attempt_result attempt_backward(walk_context& c, const kernel_state& cur, int32_t step,
                                int32_t attempt, const std::vector<agent::attempt_note>& notes) {
  attempt_result out;
  agent::backward_request req;
  req.t = &c.t;
  req.kernel = cur.k;
  req.features = cur.written;
  req.action_prior = c.o.action_prior;
  req.rejected = notes;
  req.target = c.target;

  rejected_attempt rej;
  rej.step = step;
  rej.attempt = attempt;
  auto reject = [&](std::string stage, std::string summary) {
    rej.stage = std::move(stage);
    rej.summary = std::move(summary);
    out.rejected = rej;
    return out;
  };

  auto proposed = c.p.propose_backward(req);
  if (!proposed) {
    const agent::failure& f = proposed.error();
    if (f.kind == agent::failure_kind::refused || f.kind == agent::failure_kind::unsupported ||
        f.kind == agent::failure_kind::budget) {
      backward_end e;
      e.term = termination::unknown;
      e.reason = cat("the proposer ", f.kind == agent::failure_kind::budget ? "ran out of budget" : "refused",
                     " with written features left: ", f.message);
      out.end = std::move(e);
      return out;
    }
    rej.prov = c.p.origin();
    return reject("proposer", cat("the proposer failed (", agent::to_string(f.kind), "): ", first_line(f.message)));
  }
  const agent::proposal& first = *proposed;
  rej.prov = first.prov;
  const std::vector<std::string> claimed_names = first.features_removed;
  const std::string claimed = join(claimed_names, " + ");
  if (const std::string why = claim_problem(first, cur); !why.empty()) {
    rej.kernel = first.kernel.hash;
    return reject("claim", summary_of(first, claimed, why));
  }

  audited a;
  a.pred = first.kernel;
  a.pred.name = cat(c.expert_name, "~", std::to_string(step));
  a.edits = first.edits;
  if (auto why = audit_removal(c, cur, step, req, claimed_names, a)) {
    rej.kernel = a.pred.hash;
    return reject("audit", summary_of(first, claimed, *why));
  }
  rej.kernel = a.pred.hash;
  if (a.ps.built && a.audit.kind == audit_kind::mismatch)
    return reject("audit", summary_of(first, claimed, "feature audit: " + a.audit.reason));

  // The gate: compiles and correct (it may be slower). The successor is the baseline the gate
  // would time against: already built, so the check builds only the predecessor.
  const evaluation e = c.v.check(c.t, a.pred, cur.k, first.prov);
  if (e.id) rej.evaluations.push_back(e.id);
  if (!passed(e)) {
    rej.outcome = std::string(to_string(e.result));
    return reject("gate", summary_of(first, claimed, cat("gate ", rej.outcome, ": ", first_line(e.message))));
  }
  if (!a.ps.built || a.audit.kind != audit_kind::removed)
    return reject("audit", summary_of(first, claimed, "feature audit: " +
                                                          (a.ps.built ? a.audit.reason : join(a.ps.notes, "; "))));

  out.accepted = accept(c, cur, step, first, claimed_names, a, rej.evaluations, notes);
  out.predecessor = std::move(a.pred);
  return out;
}

}  // namespace lathe::lineages::detail
