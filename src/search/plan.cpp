#include "search/plan.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/text.h"
#include "agent/situation_text.h"
#include "skills/retrieve.h"
#include "skills/tuned.h"
#include "spec/tune.h"

namespace lathe::search {
namespace {

// none, forward-memory and expert-source: one mutation of the best per step. They differ in the
// direction and the inspirations only. A refusal (nothing the proposer would still change) on the
// best kernel ends the run: the next step would ask the same of the same kernel.
class mutation_plan final : public plan {
 public:
  mutation_plan(const task& t, agent::proposer& p, strategy s, std::vector<kernel_bundle> experts)
      : t_(t), p_(p), s_(s), experts_(std::move(experts)) {}

  result<request> next(const kernel_bundle& best, const std::vector<feature>&, const std::string& target,
                       const agent::progress_facts& progress, const std::vector<agent::attempt_note>& notes,
                       const std::vector<memory_entry>& memory) override {
    request r;
    if (refused_on_ == best.hash) {
      r.exhausted = true;
      r.why = "the proposer has nothing left to change on the best kernel: " + refusal_;
      return r;
    }
    agent::mutate_request m;
    m.t = &t_;
    m.parent = best;
    m.rejected = notes;
    m.target = target;
    m.progress = progress;
    r.op = "mutate";
    switch (s_) {
      case strategy::forward_memory:
        m.direction = memory_direction(memory);
        r.source = "memory";
        break;
      case strategy::expert_source: {
        m.inspirations = experts_;
        std::vector<std::string> names;
        for (const auto& e : experts_) names.push_back(e.name);
        m.direction = expert_direction(names);
        r.source = "expert-source";
        break;
      }
      default:
        m.direction = plain_direction();
        r.source = "none";
    }
    agent::proposer* p = &p_;
    r.call = [p, m] { return p->mutate(m); };
    return r;
  }

  void proposed(const request&, const kernel_bundle&) override {}
  void failed(const request&, const kernel_bundle& on, const agent::failure& f) override {
    if (f.kind == agent::failure_kind::refused || f.kind == agent::failure_kind::unsupported) {
      refused_on_ = on.hash;
      refusal_ = f.message;
    }
  }

 private:
  const task& t_;
  agent::proposer& p_;
  strategy s_;
  std::vector<kernel_bundle> experts_;
  std::string refused_on_, refusal_;
};

// The ids whose cards may join a planned combination: a tuned card is applied alone (tuned_request).
std::vector<std::string> untuned(const std::vector<std::string>& ids, const std::map<std::string, const skill_card*>& by_id) {
  std::vector<std::string> out;
  for (const auto& id : ids)
    if (!by_id.at(id)->tuned) out.push_back(id);
  return out;
}

// skills: the retrieved path's cards, one option per card plus the whole remaining path as one
// planned combination; the proposer ranks the options once per best kernel; each option is
// tried once per best kernel. With nothing left to try, free mutations (free_after_cards).
class skills_plan final : public plan {
 public:
  skills_plan(const task& t, agent::proposer& p, const optimize_options& o, std::vector<skill_card> cards,
              ranker rank)
      : t_(t), p_(p), o_(o), cards_(std::move(cards)), rank_(std::move(rank)) {}

  std::vector<std::string> entry_features() const override {
    const auto rv = retrieve_for({});
    if (rv.path.empty()) return {};
    for (const auto& c : rv.ranked)
      if (c.card.id == rv.path.front()) return c.card.requires_features;
    return {};
  }

  result<request> next(const kernel_bundle& best, const std::vector<feature>& features, const std::string& target,
                       const agent::progress_facts& given, const std::vector<agent::attempt_note>& notes,
                       const std::vector<memory_entry>&) override {
    std::vector<std::string> names;
    for (const auto& f : features)
      if (std::find(names.begin(), names.end(), f.name) == names.end()) names.push_back(f.name);
    if (auto it = carried_.find(best.hash); it != carried_.end())
      for (const auto& f : it->second)
        if (std::find(names.begin(), names.end(), f) == names.end()) names.push_back(f);
    const auto rv = retrieve_for(names, &best);
    std::map<std::string, const skill_card*> by_id;
    for (const auto& c : rv.ranked) by_id[c.card.id] = &c.card;
    std::vector<std::string> order;
    if (o_.abl.no_lineage_order)
      for (const auto& c : rv.ranked) order.push_back(c.card.id);
    else
      order = rv.path;
    std::vector<std::string> untried;
    for (const auto& id : order)
      if (!tried_.count(best.hash + "|" + id)) untried.push_back(id);
    request r;
    agent::progress_facts progress = given;
    progress.library = library_state(rv, order.size(), order.size() - untried.size(), untried.empty());
    if (untried.empty()) {
      if (o_.free_after_cards && free_refused_on_ != best.hash) {
        agent::mutate_request m;
        m.t = &t_;
        m.parent = best;
        m.rejected = notes;
        m.target = target;
        m.progress = progress;
        m.direction = plain_direction();
        agent::proposer* p = &p_;
        r.op = "mutate";
        r.source = "free";
        r.free = true;
        r.call = [p, m] { return p->mutate(m); };
        return r;
      }
      std::vector<std::string> why;
      for (const auto& rej : rv.rejected) why.push_back(rej.card_name + " (" + to_string(rej.stage) + ")");
      r.exhausted = true;
      r.why = cat("no retrieved card is left to try on the best kernel (", std::to_string(cards_.size()),
                  " card(s) in the library", why.empty() ? "" : "; turned away: " + join(why, ", "), ")",
                  o_.free_after_cards ? ", and the free mutation was refused: " + free_refusal_ : "");
      return r;
    }
    // Options: each card alone, then the remaining path as one planned combination.
    std::vector<agent::path_option> options;
    for (const auto& id : untried) {
      const skill_card& c = *by_id.at(id);
      options.push_back({id, cat(c.name, ": ", c.intent, " (provides ", join(c.provides_features, ", "), ")"),
                         agent::card_evidence_text(c)});
    }
    const std::vector<std::string> combinable = untuned(untried, by_id);
    const std::string plan_id = "plan:" + join(combinable, "+");
    if (combinable.size() > 1 && !tried_.count(best.hash + "|" + plan_id)) {
      std::vector<std::string> names_in;
      for (const auto& id : combinable) names_in.push_back(by_id.at(id)->name);
      options.push_back({plan_id, "all of " + join(names_in, ", ") + ", in this order",
                         "the effects of each card are given with its own option"});
    }
    std::vector<std::string> ranked;
    if (options.size() > 1) {
      agent::rank_request rq;
      rq.t = &t_;
      rq.kernel = best;
      rq.features = features;
      rq.paths = options;
      rq.target = target;
      rq.progress = progress;
      auto got = rank_(rq);
      if (!got) return tl::unexpected(got.error());
      ranked = *got;
    }
    for (const auto& opt : options)
      if (std::find(ranked.begin(), ranked.end(), opt.id) == ranked.end()) ranked.push_back(opt.id);
    const std::string choice = ranked.front();
    if (choice.rfind("plan:", 0) != 0 && by_id.at(choice)->tuned) return tuned_request(*by_id.at(choice), best);
    std::vector<std::string> ids = choice.rfind("plan:", 0) == 0 ? combinable : std::vector<std::string>{choice};
    agent::materialize_request m;
    m.t = &t_;
    m.kernel = best;
    m.features = features;
    m.target = target;
    m.rejected = notes;
    m.progress = progress;
    std::vector<std::string> card_names;
    for (const auto& id : ids) {
      m.cards.push_back(ablated(*by_id.at(id), o_.abl));
      card_names.push_back(by_id.at(id)->name);
    }
    agent::proposer* p = &p_;
    r.op = "materialize";
    r.source = (ids.size() > 1 ? "plan:" : "card:") + join(card_names, "+");
    r.card_ids = ids;
    r.option = choice;
    r.call = [p, m] { return p->materialize(m); };
    return r;
  }

  void proposed(const request& r, const kernel_bundle& on) override { mark(r, on, nullptr); }
  void failed(const request& r, const kernel_bundle& on, const agent::failure& f) override { mark(r, on, &f); }

  // lathe detects no features in a ModelNew (the detectors read C++ files, not the C++ in its
  // load_inline strings), so a card applied on the way to the best was never `present` there and
  // was offered again on every best after it, spending a step each time (issue 44, item 3). Such
  // a best carries what the cards of the accepted steps that made it provide, as retrieval reads it.
  void accepted(const request& r, const kernel_bundle& from, const kernel_bundle& to) override {
    if (language_of(to) == candidate_language::c_abi) return;
    std::vector<std::string> mine = carried_[from.hash];
    for (const auto& id : r.card_ids)
      for (const auto& c : cards_)
        if (c.id == id)
          for (const auto& f : c.provides_features)
            if (std::find(mine.begin(), mine.end(), f) == mine.end()) mine.push_back(f);
    carried_[to.hash] = std::move(mine);
  }

 private:
  // A tuned card applied mechanically, whatever the proposer (skills/tuned.h): the best kernel
  // configured with the card's values, or a refusal that says which value or constraint of the
  // kernel's space refused them (the run's proposal and rejected events carry it).
  request tuned_request(const skill_card& c, const kernel_bundle& best) const {
    request r;
    r.op = "configure";
    r.source = "card:" + c.name;
    r.card_ids = {c.id};
    r.option = c.id;
    const task* t = &t_;
    const target tgt = o_.tgt;
    r.call = [c, best, t, tgt]() -> agent::op_result<agent::proposal> {
      auto k = skills::apply_tuned(c, best, *t, tgt);
      if (!k) return tl::unexpected(agent::failure{agent::failure_kind::refused,
                                                   cat("rules:tune: card ", c.name, " not applied: ", k.error().message)});
      agent::proposal p;
      p.kernel = std::move(*k);
      p.action = skills::tune_action;
      p.locus = "kernel";
      p.edits = cat("[defines] ", config_label(c.tuned->values), " (kernel.toml; was ", config_label(best.manifest.tune.defaults), ")");
      p.rationale = cat("rules:tune (mechanical): the tunables set to the values card ", c.name, " records: ", c.effect);
      p.prov = {"rules", skills::tune_action, true};
      return p;
    };
    return r;
  }

  // For `kernel` (the best), or a seeded start kernel of the task's platform when null. A ModelNew
  // best takes cards whose C++/CUDA carriers go into its inline extension (issue 44, item 3).
  skills::retrieval retrieve_for(const std::vector<std::string>& features, const kernel_bundle* kernel = nullptr) const {
    skills::retrieve_query q;
    q.lang = kernel ? kernel->manifest.lang : t_.plat == platform::cuda ? language::cuda : language::cpp;
    if (kernel) q.cand = language_of(*kernel);
    q.tgt = o_.tgt;
    q.t = &t_;
    q.features = features;
    if (kernel && !kernel->manifest.tune.empty()) q.tunables = &kernel->manifest.tune;
    skills::retrieve_options ro;
    ro.admitted_only = !o_.abl.no_admission;
    ro.include_refused = o_.abl.no_admission;
    ro.check_constraints = !o_.abl.no_preconditions;
    return skills::retrieve(cards_, q, ro);
  }

  // The library's state for the best kernel, as the proposer is told it (v2 prompts).
  std::string library_state(const skills::retrieval& rv, size_t retrieved, size_t tried, bool exhausted) const {
    std::string s = cat(std::to_string(cards_.size()), " card(s) in the library; ", std::to_string(retrieved),
                        " retrieved for this kernel, ", std::to_string(tried), " of them already tried on it");
    if (!rv.rejected.empty()) s += cat(", ", std::to_string(rv.rejected.size()), " turned away by retrieval");
    if (exhausted)
      s += ". The library is exhausted for this kernel: every retrieved card has been tried, so this request is a "
           "free mutation (any change you expect to pay; no card to follow)";
    return s;
  }

  void mark(const request& r, const kernel_bundle& on, const agent::failure* f) {
    if (r.free) {
      if (f && (f->kind == agent::failure_kind::refused || f->kind == agent::failure_kind::unsupported)) {
        free_refused_on_ = on.hash;
        free_refusal_ = f->message;
      }
      return;
    }
    tried_.insert(on.hash + "|" + r.option);
  }

  const task& t_;
  agent::proposer& p_;
  const optimize_options& o_;
  std::vector<skill_card> cards_;
  ranker rank_;
  std::set<std::string> tried_;  // "<kernel hash>|<option id>"
  std::map<std::string, std::vector<std::string>> carried_;  // ModelNew hash -> its cards' features
  std::string free_refused_on_, free_refusal_;
};

platform platform_of(const lineage& l) {
  return l.target.rfind("sm_", 0) == 0 ? platform::cuda : platform::cpu;
}

}  // namespace

result<std::unique_ptr<plan>> make_plan(const task& t, agent::proposer& p, store& db, const optimize_options& o,
                                        ranker rank) {
  if (o.strat == strategy::skills) {
    auto cards = db.list_cards("");
    if (!cards) return tl::unexpected(cards.error());
    return std::unique_ptr<plan>(std::make_unique<skills_plan>(t, p, o, std::move(*cards), std::move(rank)));
  }
  std::vector<kernel_bundle> experts;
  if (o.strat == strategy::expert_source) {
    auto lineages = db.list_lineages("");
    if (!lineages) return tl::unexpected(lineages.error());
    std::vector<const lineage*> mine;
    for (const auto& l : *lineages)
      if (!l.kernels.empty() && platform_of(l) == t.plat && l.task != t.name) mine.push_back(&l);
    std::stable_sort(mine.begin(), mine.end(), [&](const lineage* a, const lineage* b) {
      return static_cast<int>(skills::relation_to(a->op, t)) < static_cast<int>(skills::relation_to(b->op, t));
    });
    std::set<std::string> seen;
    for (const lineage* l : mine) {
      if (experts.size() >= 2) break;
      if (!seen.insert(l->kernels.back()).second) continue;
      auto k = db.get_kernel(l->kernels.back());
      if (!k) return tl::unexpected(k.error());
      k->name = l->task + "/" + l->expert;  // which expert, as the proposer is told
      experts.push_back(std::move(*k));
    }
    if (experts.empty())
      return fail(errc::not_found, cat("expert-source needs the experts the library was mined from: no ",
                                       to_string(t.plat), " lineage in the store (run `lathe decompose` first)"));
  }
  return std::unique_ptr<plan>(std::make_unique<mutation_plan>(t, p, o.strat, std::move(experts)));
}

}  // namespace lathe::search
