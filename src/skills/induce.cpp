// Induction: grouping steps into cards, abstracting a representative per language/platform, and
// filling what the evidence decides (docs/skills.md, "Induction").
#include "skills/induce.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <deque>
#include <map>
#include <set>
#include <sstream>

#include "agent/kernel_text.h"
#include "core/hash.h"
#include "core/op_family.h"
#include "core/text.h"
#include "skills/constraints.h"
#include "spec/problem_inputs.h"

namespace lathe::skills {

namespace {

struct member {
  const lineage* l = nullptr;
  size_t i = 0;
  const transition& step() const { return l->steps[i]; }
  std::string source() const { return l->id + "#" + std::to_string(i); }
};

using name_set = std::set<std::string>;

name_set names_of(const std::vector<feature>& fs) {
  name_set out;
  for (const auto& f : fs) out.insert(f.name);
  return out;
}

// The verified features of kernel `k` of a lineage; nullopt when the lineage did not record them.
std::optional<name_set> state(const lineage& l, size_t k) {
  if (k >= l.features.size() || l.features.size() != l.kernels.size()) return std::nullopt;
  return names_of(l.features[k]);
}

// Re-derived first, then replayed byte for byte, then untried, then refused: the representative
// of a group is the step whose knowledge is best attested.
int forward_rank(forward_status s) {
  switch (s) {
    case forward_status::accepted: return 0;
    case forward_status::identity_roundtrip: return 1;
    case forward_status::not_tried:
    case forward_status::undecided: return 2;
    case forward_status::rejected: return 3;
  }
  return 4;
}

const task* find_task(const induce_options& o, const std::string& name) {
  for (const auto& t : o.tasks)
    if (t.name == name) return &t;
  return nullptr;
}

platform platform_of(const lineage& l, const task* t) {
  if (t) return t->plat;
  return l.target.rfind("sm_", 0) == 0 ? platform::cuda : platform::cpu;
}

std::string carrier_key_of(const lineage& l, const task* t) {
  const platform p = platform_of(l, t);
  return agent::carrier_key(p == platform::cuda ? language::cuda : language::cpp, p);
}

std::string fixed(double v, int digits = 3) {
  std::ostringstream s;
  s.precision(digits);
  s << std::fixed << v;
  return s.str();
}

std::optional<double> geomean(const std::vector<double>& xs) {
  double sum = 0;
  size_t n = 0;
  for (double x : xs)
    if (x > 0) sum += std::log(x), ++n;
  if (n == 0) return std::nullopt;
  return std::exp(sum / double(n));
}

void add_line(std::vector<std::string>& out, const std::string& s) {
  if (!s.empty() && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
}

std::string prose_of(const constraint& c) {
  const std::string tag = " [constraint " + constraint_text(c) + "]";
  const auto kind = constraint_kind_of(c.what);
  if (!kind) return c.what + " " + c.value + tag;
  switch (*kind) {
    case constraint_kind::capability: return "the target has the " + c.value + " capability" + tag;
    case constraint_kind::smem_bytes: return "the target offers at least " + c.value + " bytes of shared memory per block" + tag;
    case constraint_kind::dtype: return "every floating tensor of the task is " + c.value + tag;
    case constraint_kind::alignment: return "every tensor is aligned to " + c.value + " bytes" + tag;
    case constraint_kind::divisibility: {
      const size_t pct = c.value.find('%');
      return "every shape set's " + c.value.substr(0, pct) + " is a multiple of " + c.value.substr(pct + 1) + tag;
    }
    case constraint_kind::isa: return "the target reaches " + c.value + tag;
  }
  return c.value + tag;
}

// The largest static shared memory ptxas reported for `kernel_hash` in the given evaluations.
int64_t static_smem(const store& s, const std::vector<int64_t>& evals, const std::string& kernel_hash) {
  int64_t most = 0;
  for (int64_t id : evals) {
    auto e = s.get_evaluation(id);
    if (!e || e->kernel_hash != kernel_hash) continue;
    for (const auto& r : e->resources) most = std::max(most, r.shared_bytes);
  }
  return most;
}

struct abstracted {
  member rep;
  skill_card card;  // the proposer's answer
  kernel_bundle before, after;
  const task* t = nullptr;
};

// The contract from the evidence (docs/skills.md, "Induction", contract):
//   provides  = the features every step of the group adds (the group key's `added`);
//   requires  = the features present before every step, restricted to those the step needs: the
//               proposer's claim or mechanism_needs of what it provides. A claim that is not
//               present before every step is dropped (and logged): the evidence contradicts it;
//   conflicts = a feature some step of the group removes while adding the provided ones, and
//               never present together with any of them in any kernel of the group's lineages.
//               A claimed conflict without that evidence is dropped (and logged).
void fill_contract(skill_card& c, const group_key& key, const std::vector<member>& members,
                   const skill_card& claim) {
  c.provides_features = key.added;
  for (const auto& n : claim.provides_features)
    if (std::find(key.added.begin(), key.added.end(), n) == key.added.end())
      add_line(c.verification_log, "contract: the proposer's provides '" + n + "' dropped: no step of the group adds it");

  std::optional<name_set> common;  // present before every step
  bool unknown = false;
  for (const auto& m : members) {
    auto before = state(*m.l, m.i);
    if (!before) {
      unknown = true;
      continue;
    }
    if (!common) {
      common = *before;
      continue;
    }
    name_set both;
    std::set_intersection(common->begin(), common->end(), before->begin(), before->end(),
                          std::inserter(both, both.end()));
    common = std::move(both);
  }
  // A step without recorded states cannot attest a requirement: nothing is required on its word.
  if (unknown || !common) common = name_set{};
  name_set needed;
  for (const auto& p : key.added)
    for (const auto& n : mechanism_needs(p)) needed.insert(n);
  for (const auto& n : claim.requires_features) needed.insert(n);
  c.requires_features.clear();
  for (const auto& n : needed) {
    if (common->count(n) && std::find(key.added.begin(), key.added.end(), n) == key.added.end())
      c.requires_features.push_back(n);
    else if (std::find(claim.requires_features.begin(), claim.requires_features.end(), n) !=
             claim.requires_features.end())
      add_line(c.verification_log, "contract: the proposer's requires '" + n +
                                       "' dropped: it is not present before every step of the group");
  }
  if (!common->empty())
    add_line(c.verification_log, "contract: present before every step (observed, not required unless needed): " +
                                     join(std::vector<std::string>(common->begin(), common->end()), ", "));
  if (unknown) add_line(c.verification_log, "contract: a step without recorded feature states: requires left to what is attested (none)");

  // Candidates: what the steps replaced, and the proposer's claims.
  name_set candidates, removed_by_step;
  for (const auto& m : members)
    for (const auto& f : m.step().removed) removed_by_step.insert(f.name), candidates.insert(f.name);
  for (const auto& n : claim.conflicts_features) candidates.insert(n);
  c.conflicts_features.clear();
  for (const auto& f : candidates) {
    bool co_present = false;
    for (const auto& m : members)
      for (size_t k = 0; k < m.l->kernels.size() && !co_present; ++k)
        if (auto st = state(*m.l, k); st && st->count(f))
          for (const auto& p : key.added) co_present |= st->count(p) > 0;
    const bool evidenced = removed_by_step.count(f) && !co_present && !unknown;
    if (evidenced) c.conflicts_features.push_back(f);
    else if (std::find(claim.conflicts_features.begin(), claim.conflicts_features.end(), f) !=
             claim.conflicts_features.end())
      add_line(c.verification_log, "contract: the proposer's conflicts '" + f + "' dropped: " +
                                       (co_present ? "present together with what the card provides"
                                                   : "no step of the group replaced it"));
  }
}

// The forward re-derivations of the group in words (docs/skills.md: cards whose steps were only
// replayed byte for byte say so; a rejected re-derivation is logged with its reason).
void log_forward(skill_card& c, const std::vector<member>& members) {
  int accepted = 0, identity = 0, rejected = 0, untried = 0;
  for (const auto& m : members) {
    const auto& f = m.step().forward;
    switch (f.status) {
      case forward_status::accepted: ++accepted; break;
      case forward_status::identity_roundtrip: ++identity; break;
      case forward_status::rejected:
        ++rejected;
        add_line(c.verification_log, "forward re-derivation rejected at " + m.source() + ": " +
                                         (f.reason.empty() ? "no reason recorded" : f.reason));
        break;
      case forward_status::not_tried:
      case forward_status::undecided: ++untried; break;
    }
  }
  add_line(c.verification_log, "forward re-derivation: " + std::to_string(accepted) + " accepted, " +
                                   std::to_string(identity) + " identity_roundtrip (mechanical), " +
                                   std::to_string(rejected) + " rejected, " + std::to_string(untried) +
                                   " not tried or undecided");
  if (accepted == 0 && identity > 0)
    add_line(c.verification_log, "forward: identity_roundtrip only: every re-derivation reproduced its successor byte "
                                 "for byte (mechanical); the step was replayed, never independently re-derived");
  else if (accepted == 0)
    add_line(c.verification_log, "forward: not re-derived: no independent forward step of this group passed");
}

// Rejected attempts at the group's steps are evidence too (issue 6: "kept as evidence for risks
// and preconditions"): an edit of this mechanism that the gate or the audit refused says what
// goes wrong around it. Each is logged; the risk names how many and the first.
void log_rejected(skill_card& c, const std::vector<member>& members) {
  size_t n = 0;
  std::string first;
  for (const auto& m : members)
    for (const auto& r : m.step().rejected) {
      add_line(c.verification_log, "rejected attempt at " + m.source() + ": " + r);
      if (first.empty()) first = r.size() > 200 ? r.substr(0, 197) + "..." : r;
      ++n;
    }
  if (n == 0) return;
  c.risk += (c.risk.empty() ? "" : "; ") + std::to_string(n) + " rejected attempt(s) while walking this " +
            "step (verification log), first: " + first;
}

std::map<std::string, int64_t> timed_shape(const task& t) {
  if (t.shapes.empty()) return {};
  for (const auto& s : t.shapes)
    if (s.time) return s.symbols;
  return t.shapes.back().symbols;
}

// A name for `base` not used by another card (the store refuses duplicates): base, base-2, …
result<std::string> unique_name(const store& s, const std::string& base, const std::string& id,
                                const std::set<std::string>& taken) {
  for (int n = 1; n < 1000; ++n) {
    const std::string suffix = n == 1 ? std::string() : cat("-", std::to_string(n));
    std::string name = base.substr(0, 64 - suffix.size());
    while (!name.empty() && name.back() == '-') name.pop_back();
    name += suffix;
    if (taken.count(name)) continue;
    auto other = s.get_card(name);
    if (!other) return tl::unexpected(other.error());
    if (!*other || (*other)->id == id) return name;
  }
  return fail(errc::internal, "no free card name for '" + base + "'");
}

// One group -> one card (not yet named or stored), or why none.
struct group_result {
  std::optional<skill_card> card;
  std::string skipped;  // reason when no card
};

// Each carrier key's representative (the first member of that key with a task given) abstracted
// by the proposer; `why` collects the keys that have none. Fails only where the proposer's
// call or budget does.
result<std::vector<abstracted>> abstract_each(const std::vector<member>& members, const store& s,
                                              agent::proposer& p, const induce_options& o, induction& out,
                                              std::vector<std::string>& why) {
  // One representative per carrier key, in the order of the best member of each.
  std::vector<std::string> keys;
  std::map<std::string, std::vector<member>> by_key;
  for (const auto& m : members) {
    const std::string k = carrier_key_of(*m.l, find_task(o, m.l->task));
    if (!by_key.count(k)) keys.push_back(k);
    by_key[k].push_back(m);
  }
  std::vector<abstracted> done;
  for (const auto& k : keys) {
    const member* rep = nullptr;
    for (const auto& m : by_key[k])
      if (find_task(o, m.l->task)) {
        rep = &m;
        break;
      }
    if (!rep) {
      why.push_back(k + ": no task given for " + by_key[k].front().l->task);
      continue;
    }
    abstracted a;
    a.rep = *rep;
    a.t = find_task(o, rep->l->task);
    auto before = s.get_kernel(rep->step().from_kernel);
    auto after = s.get_kernel(rep->step().to_kernel);
    if (!before || !after) {
      why.push_back(k + ": kernels of " + rep->source() + " not in the store (" +
                    (!before ? before.error().message : after.error().message) + ")");
      continue;
    }
    a.before = *before;
    a.after = *after;
    agent::card_request req;
    req.t = a.t;
    req.step = rep->step();
    req.before = a.before;
    req.after = a.after;
    req.target = o.target_text.empty() ? rep->l->target : o.target_text;
    ++out.proposer_calls;
    auto card = p.abstract_card(req);
    if (!card) {
      out.model_calls += card.error().calls;
      if (card.error().kind == agent::failure_kind::call || card.error().kind == agent::failure_kind::budget)
        return fail(errc::unsupported, "abstracting " + rep->source() + ": " + agent::to_string(card.error().kind) +
                                           ": " + card.error().message);
      why.push_back(k + " (" + rep->source() + "): " + agent::to_string(card.error().kind) + ": " + card.error().message);
      continue;
    }
    a.card = std::move(*card);
    done.push_back(std::move(a));
  }
  return done;
}

// The group's card from its abstractions: carriers, preconditions, risks and constraints of each,
// the primary (first) one's first.
void merge_abstractions(skill_card& c, const std::vector<abstracted>& done, const store& s, agent::proposer& p) {
  const abstracted& primary = done.front();
  for (const auto& a : done) {
    for (const auto& [k, v] : a.card.carriers) {
      if (!c.carriers.count(k)) c.carriers[k] = v;
      else if (c.carriers[k] != v)
        add_line(c.verification_log, "carrier '" + k + "' of " + a.rep.source() + " not kept: " +
                                         primary.rep.source() + "'s is");
    }
    for (const auto& pre : a.card.preconditions) add_line(c.preconditions, pre);
    for (const auto& line : a.card.verification_log) add_line(c.verification_log, line);
    add_line(c.verification_log, "abstracted by " + to_string(a.card.prov.kind.empty() ? p.origin() : a.card.prov) +
                                     " from " + a.rep.source() + " (" + carrier_key_of(*a.rep.l, a.t) + ")");
    if (&a != &primary && !a.card.risk.empty() && c.risk.find(a.card.risk) == std::string::npos)
      c.risk += "; on " + carrier_key_of(*a.rep.l, a.t) + ": " + a.card.risk;
    // Constraints: what the step's kernels show, then the proposer's, each readable.
    for (const auto& k : derive_constraints(a.before, a.after, *a.t, a.rep.step().added,
                                            static_smem(s, a.rep.step().evaluations, a.after.hash)))
      add_unique(c.constraints, k);
    for (const auto& k : a.card.constraints) {
      if (auto bad = grammar_problem(k))
        add_line(c.verification_log, "constraint " + constraint_text(k) + " from the proposer dropped: " + *bad);
      else
        add_unique(c.constraints, k);
    }
  }
}

// Evidence, effect and where it comes from.
void add_evidence(skill_card& c, const std::vector<member>& members, const abstracted& primary) {
  std::vector<double> ratios;
  std::set<int64_t> evidence;
  std::map<std::string, int> ops;
  std::vector<std::string> targets, lines;
  for (const auto& m : members) {
    const transition& st = m.step();
    if (st.speedup) ratios.push_back(*st.speedup);
    evidence.insert(st.evaluations.begin(), st.evaluations.end());
    c.sources.push_back(m.source());
    if (std::find(c.source_tasks.begin(), c.source_tasks.end(), m.l->task) == c.source_tasks.end())
      c.source_tasks.push_back(m.l->task);
    ++ops[m.l->op];
    if (!m.l->target.empty() && std::find(targets.begin(), targets.end(), m.l->target) == targets.end())
      targets.push_back(m.l->target);
    lines.push_back(m.source() + " (" + m.l->task + ", " + (st.speedup ? "x" + fixed(*st.speedup) : "not measured") +
                    ", forward " + to_string(st.forward.status) + ")");
  }
  c.evidence.assign(evidence.begin(), evidence.end());
  c.declared_ratio = geomean(ratios);
  c.effect = c.declared_ratio
                 ? "speedup x" + fixed(*c.declared_ratio) + ": geometric mean of the paired ratios of " +
                       std::to_string(ratios.size()) + " measured step(s) (time before / time after)"
                 : "no measured effect: no step of the group was timed";
  if (!primary.card.effect.empty()) c.effect += "; the proposer: " + primary.card.effect;
  add_line(c.verification_log, "induced from " + std::to_string(members.size()) + " step(s): " + join(lines, "; "));
  // The operator most of the evidence comes from (ties: the best-attested member's).
  c.op = primary.rep.l->op;
  for (const auto& [op, n] : ops)
    if (n > ops[c.op]) c.op = op;
  // A problem's operator is its file's stem, related to nothing: its Model's family instead.
  if (const auto f = families_of_ops(problem_ops(*primary.t)); !f.empty() && c.op == primary.t->op)
    c.op = std::string(to_string(f.front()));
  c.target = join(targets, ",");
  c.evidence_lang = language_of(primary.after);  // the kernels its steps were measured on
  c.shape = timed_shape(*primary.t);
  c.status = card_status::candidate;
}

result<group_result> card_of_group(const group_key& key, std::vector<member> members, const store& s,
                                   agent::proposer& p, const induce_options& o, induction& out) {
  std::stable_sort(members.begin(), members.end(), [](const member& a, const member& b) {
    const int ra = forward_rank(a.step().forward.status), rb = forward_rank(b.step().forward.status);
    if (ra != rb) return ra < rb;
    return a.step().speedup.value_or(0) > b.step().speedup.value_or(0);
  });
  std::vector<std::string> why;
  auto abstractions = abstract_each(members, s, p, o, out, why);
  if (!abstractions) return tl::unexpected(abstractions.error());
  const std::vector<abstracted>& done = *abstractions;
  if (done.empty()) return group_result{std::nullopt, "no abstraction: " + join(why, "; ")};

  const abstracted& primary = done.front();
  skill_card c;
  c.id = card_id_of(key);
  c.action = key.action;
  c.intent = primary.card.intent;
  c.anchor = primary.card.anchor;
  c.risk = primary.card.risk;
  c.scope = primary.card.scope;
  c.prov = primary.card.prov.kind.empty() ? p.origin() : primary.card.prov;
  merge_abstractions(c, done, s, p);
  for (const auto& why_not : why) add_line(c.verification_log, "no abstraction for " + why_not);
  for (const auto& k : c.constraints) add_line(c.preconditions, prose_of(k));

  fill_contract(c, key, members, primary.card);
  log_forward(c, members);
  log_rejected(c, members);

  add_evidence(c, members, primary);
  return group_result{std::move(c), ""};
}

}  // namespace

std::string action_category(const std::string& action) {
  std::string a;
  for (char ch : action) a += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  // ".remove"/".add" are the rule engine's suffixes: cut them before '.' becomes a separator.
  for (const char* suffix : {".remove", ".add"})
    if (a.size() > std::string(suffix).size() && a.ends_with(suffix)) a.resize(a.size() - std::string(suffix).size());
  std::replace_if(a.begin(), a.end(), [](char ch) { return ch == '-' || ch == ' ' || ch == '.'; }, '_');
  for (const char* prefix : {"remove_", "add_", "restore_", "introduce_"})
    if (a.size() > std::string(prefix).size() && a.starts_with(prefix)) a = a.substr(std::string(prefix).size());
  return a;
}

std::string locus_signature(const std::string& locus) {
  if (locus.empty() || locus.front() == '<') return "kernel";
  return locus.find('/') == std::string::npos ? "function" : "loop";
}

std::string group_key::text() const {
  return action + "|" + locus + "|+" + join(added, ",") + "|-" + join(removed, ",");
}

group_key key_of(const transition& step) {
  group_key k;
  k.action = action_category(step.action);
  // The step's locus; a step that names none is placed by the feature it adds.
  std::string locus = step.locus;
  if (locus.empty() && !step.added.empty()) locus = step.added.front().locus;
  k.locus = locus_signature(locus);
  const name_set added = names_of(step.added), removed = names_of(step.removed);
  k.added.assign(added.begin(), added.end());
  k.removed.assign(removed.begin(), removed.end());
  return k;
}

std::string card_id_of(const group_key& k) { return content_hash("lathe.card_key/1\n" + k.text()).substr(0, 16); }

std::string kebab(const std::string& text) {
  std::string out;
  for (char ch : text) {
    const auto u = static_cast<unsigned char>(ch);
    if (std::isalnum(u)) out += static_cast<char>(std::tolower(u));
    else if (!out.empty() && out.back() != '-') out += '-';
  }
  if (out.size() > 64) out.resize(64);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

std::vector<std::string> mechanism_needs(const std::string& feature) {
  static const std::map<std::string, std::vector<std::string>> table = {
      {"cp_async_pipeline", {"smem_tiling"}}, {"tma", {"smem_tiling"}}, {"wgmma", {"smem_tiling"}},
      {"ldmatrix", {"smem_tiling"}},          {"warp_specialization", {"smem_tiling"}},
  };
  auto it = table.find(feature);
  return it == table.end() ? std::vector<std::string>{} : it->second;
}

result<induction> induce_report(const std::vector<lineage>& lineages, store& s, agent::proposer& p,
                                const induce_options& o) {
  induction out;
  std::deque<lineage> loaded;  // stored lineages named by stored cards (stable addresses)
  std::map<std::string, std::pair<group_key, std::vector<member>>> groups;
  std::set<std::string> seen;
  auto add = [&](const lineage& l, size_t i) {
    const member m{&l, i};
    if (!seen.insert(m.source()).second) return;
    const group_key k = key_of(l.steps[i]);
    auto& g = groups[k.text()];
    g.first = k;
    g.second.push_back(m);
  };
  for (const auto& l : lineages)
    for (size_t i = 0; i < l.steps.size(); ++i) add(l, i);

  if (o.merge_stored) {
    std::vector<group_key> keys;
    for (const auto& [text, g] : groups) keys.push_back(g.first);
    for (const auto& k : keys) {
      auto stored = s.get_card(card_id_of(k));
      if (!stored) return tl::unexpected(stored.error());
      if (!*stored) continue;
      for (const auto& src : (*stored)->sources) {
        const size_t hash = src.rfind('#');
        if (hash == std::string::npos) continue;
        const std::string lid = src.substr(0, hash);
        size_t step = 0;
        try {
          step = std::stoul(src.substr(hash + 1));
        } catch (...) {
          continue;
        }
        const lineage* l = nullptr;
        for (const auto& x : lineages)
          if (x.id == lid) l = &x;
        for (const auto& x : loaded)
          if (!l && x.id == lid) l = &x;
        if (!l) {
          auto got = s.get_lineage(lid);
          if (!got) return tl::unexpected(got.error());
          if (!*got) continue;  // a lineage that is gone gives no evidence
          loaded.push_back(std::move(**got));
          l = &loaded.back();
        }
        if (step < l->steps.size() && key_of(l->steps[step]).text() == k.text()) add(*l, step);
      }
    }
  }

  std::set<std::string> taken;
  for (auto& [text, g] : groups) {
    auto r = card_of_group(g.first, g.second, s, p, o, out);
    if (!r) return tl::unexpected(r.error());
    if (!r->card) {
      induce_skip skip{text, {}, r->skipped};
      for (const auto& m : g.second) skip.sources.push_back(m.source());
      out.skipped.push_back(std::move(skip));
      continue;
    }
    skill_card c = std::move(*r->card);
    auto stored = s.get_card(c.id);
    if (!stored) return tl::unexpected(stored.error());
    std::string base = kebab(c.action + "-" + g.first.locus);
    if (base.empty()) base = "card-" + c.id;
    if (*stored) {
      // A card keeps its name; its admission stands only while its evidence is what was admitted.
      base = (*stored)->name;
      std::vector<int64_t> was = (*stored)->evidence;
      std::sort(was.begin(), was.end());
      if (was == c.evidence && (*stored)->sources.size() == c.sources.size()) {
        c.status = (*stored)->status;
        c.status_reason = (*stored)->status_reason;
      } else if ((*stored)->status != card_status::candidate) {
        add_line(c.verification_log, "evidence changed since it was " + std::string(to_string((*stored)->status)) +
                                         ": status reset to candidate (its earlier trials stay in the log)");
      }
    }
    auto name = unique_name(s, base, c.id, taken);
    if (!name) return tl::unexpected(name.error());
    c.name = *name;
    taken.insert(c.name);
    if (auto put = s.put_card(c); !put) return tl::unexpected(put.error());
    out.cards.push_back(std::move(c));
  }
  return out;
}

result<std::vector<skill_card>> induce(const std::vector<lineage>& lineages, store& s, agent::proposer& p,
                                       const induce_options& o) {
  auto r = induce_report(lineages, s, p, o);
  if (!r) return tl::unexpected(r.error());
  return std::move(r->cards);
}

}  // namespace lathe::skills
