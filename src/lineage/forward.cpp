// Forward re-derivation of one accepted backward step (decompose.h): an independent proposer
// call on the predecessor, told only the feature to restore and the step's action as a hint —
// never the backward diff or the successor's source.
#include <algorithm>
#include <cstdio>

#include "core/text.h"
#include "features/feature_audit.h"
#include "lineage/forward_speed.h"
#include "lineage/walk.h"

namespace lathe::lineages::detail {

namespace {

std::string fixed(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", x);
  return buf;
}

// A rule proposal's carrier: proposal_of (rules_proposer.h) ends its rationale with it.
std::string carrier_of(const agent::proposal& p) {
  if (p.prov.kind != "rules") return "";
  const std::string tag = "Carrier: ";
  const auto at = p.rationale.rfind(tag);
  return at == std::string::npos ? "" : first_line(p.rationale.substr(at + tag.size()), 4096);
}

// Why the forward result `ks` does not hold every claimed feature of step `s`, or nothing.
std::optional<std::string> not_restored(const accepted_step& s, const kernel_state& ks) {
  for (const auto& want : s.claimed) {
    // Compared as the backward audit compared it (feature_audit.h): an artifact detection by
    // name, a source one at its locus.
    const std::string key = audit_key(want);
    if (std::any_of(ks.written.begin(), ks.written.end(), [&](const feature& f) { return audit_key(f) == key; }))
      continue;
    std::vector<std::string> where;
    for (const auto& f : ks.all)
      if (f.name == want.name) where.push_back(f.locus);
    std::vector<std::string> held;
    for (const auto& f : ks.all) held.push_back(feature_text(f));
    return cat(feature_text(want), " is not restored",
               where.empty() ? std::string(" (absent") : " (present at " + join(where, ", ") + " only",
               "; the result holds: ", held.empty() ? std::string("nothing") : join(held, ", "),
               ks.notes.empty() ? "" : "; " + join(ks.notes, "; "), ")");
  }
  return std::nullopt;
}

// The forward result's speed against the successor, decided into `r` (timing on).
void judge_speed(walk_context& c, const kernel_bundle& k, const kernel_bundle& succ, const std::string& claimed_text,
                 forward_result& r) {
  // succ time / forward time: the forward result is the candidate, the successor its baseline.
  // A noise margin past 25% cannot tell a step that lost a quarter of its speed from one that
  // lost none (0.934 was accepted against 1 - 0.754): timed once more, and undecided if it stays
  // (forward_speed.h).
  evaluation timed;
  const std::optional<forward_speed> speed = decide_forward_speed([&]() -> std::optional<forward_timing> {
    timed = c.v.compare(c.t, k, succ, r.prov);
    if (timed.id) r.evaluations.push_back(timed.id);
    r.ratio = ratio(timed);
    if (!r.ratio || !correct(timed.result)) return std::nullopt;
    return forward_timing{*r.ratio, margin(timed, c.t.plat)};
  });
  if (!speed) {
    r.status = forward_status::rejected;
    r.reason = cat("timing failed: ", std::string(to_string(timed.result)), ": ", first_line(timed.message));
    return;
  }
  const double m = speed->last.margin;
  r.status = speed->status;
  if (speed->status == forward_status::undecided) {
    r.reason = cat("gate passed, ", claimed_text, " restored; ratio vs the successor ", fixed(*r.ratio),
                   ", but the A/A noise (margin ", fixed(m), ", timed twice) is too high to tell "
                   "whether it is slower");
    return;
  }
  const bool ok = speed->status == forward_status::accepted;
  r.reason = cat("gate passed, ", claimed_text, " restored; ratio vs the successor ", fixed(*r.ratio),
                 ok ? " >= " : " < ", fixed(1 - m), " (1 - noise margin ", fixed(m), ")",
                 ok ? "" : ": slower than the successor beyond the noise");
}

}  // namespace

bool same_kernel(const kernel_bundle& a, const kernel_bundle& b) {
  if (a.sources != b.sources) return false;
  const kernel_manifest &x = a.manifest, &y = b.manifest;
  auto fx = x.flags, fy = y.flags;
  std::sort(fx.begin(), fx.end());
  std::sort(fy.begin(), fy.end());
  return fx == fy && x.lang == y.lang && x.entry == y.entry && x.defines == y.defines &&
         x.libraries == y.libraries && x.isa == y.isa;
}

forward_pending propose_forward(walk_context& c, const accepted_step& s, const kernel_bundle& pred,
                                const kernel_bundle& succ) {
  forward_pending p;
  forward_outcome& out = p.out;
  forward_result& r = out.result;
  std::vector<std::string> parts;
  for (const auto& f : s.claimed) parts.push_back(feature_text(f));
  p.claimed_text = join(parts, " + ");
  const std::string& claimed_text = p.claimed_text;
  agent::forward_request req;
  req.t = &c.t;
  req.predecessor = pred;
  req.restore = s.claimed.front();  // a mechanism with several names: its first, the rest checked
  req.action = s.tr.action;
  req.target = c.target;
  auto got = c.p.rederive_forward(req);
  if (!got) {
    r.status = forward_status::rejected;
    r.prov = c.p.origin();
    r.reason = cat("the proposer could not re-derive ", claimed_text, " (",
                   agent::to_string(got.error().kind), "): ", first_line(got.error().message));
    return p;
  }
  r.prov = got->prov;
  out.invocation = carrier_of(*got);
  kernel_bundle fwd = got->kernel;
  // A rule edits one site: a backward step that took several edits (one `__restrict__` of three,
  // one vectorized pointer of three: decompose_options::max_edits_per_step) is re-derived by as
  // many forward edits, each on the last one's result, until the successor is reached or the
  // rule has no site left. A model is asked once: its edit is the whole optimization.
  if (got->prov.kind == "rules")
    for (int32_t n = 1; n < c.o.max_edits_per_step && !same_kernel(fwd, succ); ++n) {
      req.predecessor = fwd;
      auto more = c.p.rederive_forward(req);
      if (!more || same_kernel(more->kernel, fwd)) break;
      fwd = more->kernel;
      if (const std::string inv = carrier_of(*more); !inv.empty()) out.invocation += "\n" + inv;
    }
  r.kernel = fwd.hash;

  if (same_kernel(fwd, succ)) {
    // Byte for byte the successor: the gate's verdict and the timing are the successor's own.
    r.status = forward_status::identity_roundtrip;
    r.kernel = succ.hash;
    r.prov.mechanical = true;
    r.evaluations = s.tr.evaluations;
    r.reason = "identical to the successor (same sources and flags): proves the plumbing, not that the "
               "step can be re-derived";
    return p;
  }

  p.k = fwd;
  p.k->name = cat(succ.name, "^fwd");
  (void)c.db.put_kernel(*p.k);
  return p;
}

void finish_forward(walk_context& c, const accepted_step& s, const kernel_bundle& succ, const evaluation& e,
                    forward_pending& p) {
  forward_result& r = p.out.result;
  const kernel_bundle& k = *p.k;
  const std::string& claimed_text = p.claimed_text;
  if (e.id) r.evaluations.push_back(e.id);
  if (!passed(e)) {
    r.status = forward_status::rejected;
    r.reason = cat("gate ", std::string(to_string(e.result)), ": ", first_line(e.message));
    return;
  }
  std::vector<feature> audited = s.features;  // a claimed feature may be an audited one
  audited.insert(audited.end(), s.claimed.begin(), s.claimed.end());
  const kernel_state ks = c.observe(k, audited);
  if (auto why = not_restored(s, ks)) {
    r.status = forward_status::rejected;
    r.reason = *why;
    return;
  }
  if (!c.o.time) {
    r.status = forward_status::accepted;
    r.reason = "gate passed and " + claimed_text + " restored; speed not measured (timing off)";
    return;
  }
  judge_speed(c, k, succ, claimed_text, r);
}

forward_outcome rederive(walk_context& c, const accepted_step& s, const kernel_bundle& pred,
                         const kernel_bundle& succ) {
  forward_pending p = propose_forward(c, s, pred, succ);
  if (p.k) finish_forward(c, s, succ, c.v.check(c.t, *p.k, succ, p.out.result.prov), p);
  return std::move(p.out);
}

}  // namespace lathe::lineages::detail
