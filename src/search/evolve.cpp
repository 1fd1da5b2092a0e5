#include "search/evolve.h"

#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "core/json.h"
#include "core/text.h"
#include "features/feature_audit.h"
#include "search/evolve_prompt.h"
#include "search/journal.h"
#include "search/progress.h"
#include "search/records.h"
#include "search/run_loop.h"

namespace lathe::search {

using nlohmann::json;
using detail::event_key;
using detail::measured;
using detail::measured_from;
using detail::measured_json;

namespace {

std::string line1(const std::string& s) { return s.substr(0, s.find('\n')); }

class runner {
 public:
  runner(const task& t, const kernel_bundle& baseline, lineages::verifier& v, agent::proposer& p, store& db,
         llm::ledger& ledger, const evolve_options& o, detail::journal& j, evolve_result& out)
      : t_(t), baseline_(baseline), v_(v), screen_(o.screen ? *o.screen : v), p_(p), db_(db),
        ledger_(ledger), o_(o), j_(j), out_(out),
        loop_(ledger, j, out.evaluations, [this](const std::string&, const std::string& message) { tell(message); }),
        arch_(o.descriptors, o.islands), rng_(o.seed) {}

  result<void> run(const kernel_bundle& start) {
    if (start.sources.empty()) {
      // No start kernel: the initial population is the proposer's translations of the reference.
      for (int32_t i = 0; i < o_.islands && !loop_.stopped(); ++i)
        for (int32_t k = 0; k < o_.population && !loop_.stopped(); ++k)
          if (auto c = translation(event_key::translation(i, k), i, k); !c) return c;
      if (loop_.waiting()) return {};
      if (arch_.size() == 0)
        return fail(errc::invalid_argument, "no translation of the reference passed the gate: nothing to evolve");
    } else {
      if (auto s = seed(start); !s) return s;
      // The initial population: mutations of the start kernel on every island.
      for (int32_t i = 0; i < o_.islands && !loop_.stopped(); ++i)
        for (int32_t k = 1; k < o_.population && !loop_.stopped(); ++k)
          if (auto c = child(event_key::child(0, i, k), 0, i, k, child_kind::initial, start_elite_); !c)
            return c;
    }
    if (loop_.waiting()) return {};
    const int32_t batch = std::max(1, o_.in_flight);
    for (int32_t g = 1; g <= o_.generations && !loop_.stopped(); ++g) {
      for (int32_t i = 0; i < o_.islands && !loop_.stopped(); ++i)
        for (int32_t c0 = 0; c0 < o_.children && !loop_.stopped(); c0 += batch) {
          // The batch's parents are sampled before any of its children is placed; then its
          // children are proposed (in order), gated together (builds and checks overlap, timing is
          // serialized by the device lock) and placed in order.
          std::vector<std::pair<int32_t, elite>> parents;
          for (int32_t c = c0; c < std::min(o_.children, c0 + batch); ++c)
            if (const elite* parent = arch_.parent(i, o_.samp, rng_)) parents.push_back({c, *parent});
          if (auto r = children(g, i, parents); !r) return r;
          if (loop_.waiting()) break;  // batch mode: this island's later batches need these children placed
        }
      // Batch mode: every island's prompts of this generation are written; the run waits for them.
      if (loop_.waiting()) return {};
      if (!loop_.stopped() && o_.migrate_every > 0 && g % o_.migrate_every == 0)
        if (auto m = migrate(g); !m) return m;
      const elite* b = arch_.best();
      out_.best_per_generation.push_back(b ? b->score : 0);
      if (auto e = emit(event_kind::generation, event_key::generation(g),
                        {{"generation", g}, {"best_score", b ? b->score : 0}, {"best", b ? b->hash : ""},
                         {"archive", arch_.size()}},
                        cat("generation ", std::to_string(g), ": best score ", std::to_string(b ? b->score : 0),
                            ", ", std::to_string(arch_.size()), " elites"));
          !e)
        return e;
    }
    return {};
  }

  const archive& arch() const { return arch_; }
  const std::string& stop_detail() const { return loop_.detail(); }
  bool waiting() const { return loop_.waiting(); }

 private:
  result<void> emit(const std::string& kind, const event_key& key, json body, const std::string& message) {
    return loop_.emit(kind, key, std::move(body), message);
  }
  void tell(const std::string& message) {
    if (!o_.progress) return;
    evolve_progress pr;
    pr.run_id = out_.r.id;
    pr.message = message;
    const elite* b = arch_.best();
    pr.best_score = b ? b->score : 0;
    pr.evaluations = out_.evaluations;
    pr.seconds = loop_.elapsed();
    o_.progress(pr);
  }

  // One evaluation against `against` (the baseline, or an incumbent in a contest) by `by`, within
  // the budget; nullopt when the budget refused it (the run stops).
  std::optional<measured> gate(const kernel_bundle& k, const kernel_bundle& against, const provenance& prov,
                               lineages::verifier& by) {
    const auto e = loop_.gate([&] { return by.compare(t_, k, against, prov); });
    if (!e) return std::nullopt;
    return detail::summarize(*e, t_.plat);
  }

  std::vector<double> values_of(const kernel_bundle& k, double score) {
    std::vector<double> out;
    std::vector<std::string> names;
    if (auto it = features_.find(k.hash); it != features_.end()) names = it->second;
    else {
      for (const auto& f : lineages::features_of(v_.features(t_, k))) names.push_back(f.name);
      features_[k.hash] = names;
    }
    for (const auto& d : o_.descriptors) {
      switch (d.kind) {
        case descriptor_kind::complexity: out.push_back(static_cast<double>(detail::source_lines(k))); break;
        case descriptor_kind::score: out.push_back(score); break;
        case descriptor_kind::features: out.push_back(static_cast<double>(names.size())); break;
        case descriptor_kind::feature:
          out.push_back(std::find(names.begin(), names.end(), d.feature) != names.end() ? 1.0 : 0.0);
          break;
      }
    }
    return out;
  }

  result<void> seed(const kernel_bundle& start) {
    if (auto put = db_.put_kernel(start); !put) return tl::unexpected(put.error());
    kernels_[start.hash] = start;
    measured m;
    if (const json* rec = j_.recorded(event_key::start())) {
      m = measured_from(rec->at("verdict"));
      loop_.replayed_evaluation();
    } else {
      auto got = gate(start, baseline_, {"human", "evolve start", false}, v_);
      if (!got) return fail(errc::invalid_argument, "the budget cannot hold the start kernel's evaluation: " + loop_.detail());
      m = *got;
      if (!m.v.correct)
        return fail(errc::invalid_argument, cat("the start kernel fails the gate (", outcome_text(m.outcome), "): ", m.message));
    }
    if (!m.v.correct) return fail(errc::invalid_argument, cat("the start kernel fails the gate (", outcome_text(m.outcome), ")"));
    start_elite_.hash = start.hash;
    start_elite_.verdict = m.v;
    start_elite_.score = composite_score(m.v);
    start_elite_.values = values_of(start, start_elite_.score);
    start_elite_.evaluation = m.id;
    feedback_[start.hash] = detail::feedback_text(m);
    gated_[start.hash] = m;
    for (int32_t i = 0; i < o_.islands; ++i) arch_.put(i, start_elite_);
    return emit(event_kind::start, event_key::start(), {{"kernel", start.hash}, {"verdict", measured_json(m)}},
                cat("start ", start.hash.substr(0, 12), ": ", outcome_text(m.outcome), ", score ",
                    std::to_string(start_elite_.score)));
  }

  // Places a gated kernel on `island`: an empty cell takes it; a lower-scoring incumbent is
  // contested by a paired re-measure (child vs incumbent) that the child must win by the margin.
  result<void> place(child_record& c, int32_t island, const kernel_bundle& k, const measured& m,
                     const std::vector<double>& values) {
    c.placement = arch_.place(island, c.score, values);
    if (const elite* in = arch_.incumbent(island, arch_.cell_of(values)); in && in->hash == k.hash)
      c.placement = placement::kept;  // the elite itself: nothing to contest
    elite e;
    e.hash = k.hash;
    e.score = c.score;
    e.verdict = m.v;
    e.values = values;
    e.generation = c.generation;
    e.parent = c.parent;
    e.evaluation = m.id;
    if (c.placement == placement::new_cell) {
      c.placed = true;
    } else if (c.placement == placement::contest) {
      const elite* in = arch_.incumbent(island, arch_.cell_of(values));
      auto inc = kernels_.find(in->hash);
      if (inc == kernels_.end()) return fail(errc::internal, "an elite's kernel is unknown: " + in->hash);
      const std::string pair = k.hash + "|" + in->hash;
      if (auto lost = contests_lost_.find(pair); lost != contests_lost_.end()) {
        c.contest_ratio = lost->second;  // this child lost to this incumbent before: not asked again
        c.duplicate = true;
      } else {
        auto again = gate(k, inc->second, {"human", "evolve contest", false}, v_);
        if (!again) return {};
        c.evaluations.push_back(again->id);
        c.contest_ratio = again->ratio;
        c.placed = again->outcome == outcome::ok && again->decision == decision::faster;  // the gate's rule
        if (!c.placed) contests_lost_[pair] = again->ratio;
      }
    }
    if (c.placed) arch_.put(island, e);
    return {};
  }

  // A child from its mutate request to its gate verdict.
  struct pending {
    explicit pending(event_key k) : key(std::move(k)) {}
    event_key key;
    std::string what;
    child_record c;
    agent::mutate_request mr;
    std::optional<llm::reservation> step;  // the budget's step, held until the proposer answers
    agent::op_result<agent::proposal> pr = tl::unexpected(agent::failure{});
  };

  result<void> child(const event_key& key, int32_t g, int32_t island, int32_t index, child_kind kind,
                     const elite& parent) {
    if (const json* rec = j_.recorded(key)) return replay(*rec, island);
    auto p = prepare(key, g, island, index, kind, parent);
    if (!p) return {};
    std::vector<pending> one;
    one.push_back(std::move(*p));
    ask(one);
    if (one.empty()) return {};  // the budget refused the proposer's call: the run stops here
    return finish(one[0].key, one[0].c, island, one[0].pr, one[0].what);
  }

  // Children of one island in one generation, `parents` sampled before: recorded ones replayed,
  // the others proposed in order, gated together, placed in order.
  result<void> children(int32_t g, int32_t island, const std::vector<std::pair<int32_t, elite>>& parents) {
    std::vector<pending> live;
    for (const auto& [c, parent] : parents) {
      const event_key key = event_key::child(g, island, c);
      if (const json* rec = j_.recorded(key)) {
        if (auto r = replay(*rec, island); !r) return r;
        continue;
      }
      auto p = prepare(key, g, island, c, child_kind::child, parent);
      if (!p) break;  // the budget
      live.push_back(std::move(*p));
    }
    ask(live);
    // Every new kernel of the batch gated against the baseline at once, each once.
    std::map<std::string, std::future<evaluation>> jobs;
    std::map<std::string, llm::reservation> holds;
    for (const auto& p : live) {
      if (!p.pr || gated_.count(p.pr->kernel.hash) || jobs.count(p.pr->kernel.hash)) continue;
      auto hold = loop_.reserve(llm::one_evaluation);
      if (!hold) break;
      holds.emplace(p.pr->kernel.hash, std::move(*hold));
      const kernel_bundle* k = &p.pr->kernel;
      const provenance prov = p.pr->prov;
      jobs.emplace(k->hash, std::async(std::launch::async,
                                       [this, k, prov] { return screen_.compare(t_, *k, baseline_, prov); }));
    }
    for (auto& [hash, job] : jobs) {
      const evaluation e = job.get();
      loop_.commit(std::move(holds.at(hash)), llm::one_evaluation);
      ++out_.evaluations;
      fresh_[hash] = detail::summarize(e, t_.plat);
    }
    for (auto& p : live) {
      if (p.pr && !gated_.count(p.pr->kernel.hash) && !fresh_.count(p.pr->kernel.hash)) break;  // not gated: the budget
      if (auto r = finish(p.key, p.c, island, p.pr, p.what); !r) return r;
    }
    return {};
  }

  // The proposer's answers to the batch's requests: asked at the same time when the batch holds
  // several and the proposer takes concurrent calls (a model's latency then overlaps; each answer
  // depends on its own request only, so the order of arrival changes nothing), else one by one.
  void ask(std::vector<pending>& batch) {
    if (batch.size() > 1 && p_.concurrent()) {
      std::vector<std::future<agent::op_result<agent::proposal>>> answers;
      for (auto& b : batch) answers.push_back(std::async(std::launch::async, [this, &b] { return p_.mutate(b.mr); }));
      for (size_t i = 0; i < batch.size(); ++i) batch[i].pr = answers[i].get();
    } else {
      for (auto& b : batch) b.pr = p_.mutate(b.mr);
    }
    for (auto& b : batch) loop_.commit(std::move(*b.step), llm::one_step);
    // Batch mode (llm/batch_dir.h): a prompt of the batch waits for its answer, so none of the
    // batch is gated or recorded; a resumed run asks them all again, the answered ones from its
    // log of calls. The run goes on to the other islands (their parents do not depend on this
    // batch) and stops at the end of the generation.
    for (const auto& b : batch)
      if (!b.pr && b.pr.error().kind == agent::failure_kind::waiting) {
        loop_.ends_run(b.pr.error());
        batch.clear();
        return;
      }
    // A call the budget refused (its time, tokens or money would run out) ends the run there: that
    // child and the ones after it are not recorded (a resume with a larger budget asks them
    // again), rather than each counted as a failed child while the run goes on.
    for (size_t i = 0; i < batch.size(); ++i)
      if (!batch[i].pr && batch[i].pr.error().kind == agent::failure_kind::budget) {
        loop_.ends_run(batch[i].pr.error());
        batch.erase(batch.begin() + static_cast<std::ptrdiff_t>(i), batch.end());
        break;
      }
  }

  // The mutate request for one child, its step reserved (nullopt: the budget ended the run).
  std::optional<pending> prepare(const event_key& key, int32_t g, int32_t island, int32_t index,
                                 child_kind kind, const elite& parent) {
    auto step = loop_.reserve(llm::one_step);
    if (!step) return std::nullopt;
    child_record c;
    c.generation = g, c.island = island, c.index = index, c.kind = kind, c.parent = parent.hash;
    c.parent_speedup = parent.verdict.speedup;
    const auto insp = arch_.inspirations(island, parent, o_.samp);
    std::vector<skill_card> cards;
    if (o_.cards) {
      std::vector<feature> fs;
      for (const auto& n : features_[parent.hash]) {
        feature f;
        f.name = n;
        fs.push_back(std::move(f));
      }
      cards = o_.cards(t_, fs);
    }
    pending out(key);
    agent::mutate_request& mr = out.mr;
    mr.t = &t_;
    mr.parent = kernels_.at(parent.hash);
    for (const elite* e : insp) {
      mr.inspirations.push_back(kernels_.at(e->hash));
      c.inspirations.push_back(e->hash);
    }
    for (const auto& cd : cards) c.cards.push_back(cd.id);
    mr.direction = detail::child_direction(parent, feedback_[parent.hash], insp, cards, g, island, index,
                                           o_.reference_source);
    mr.target = o_.target_text;
    // What the child's prompt says of the search: the parent's paired speedup over the baseline
    // (the times and the roofline stay in its inspection, in the direction), and the budget left.
    mr.progress.best_ratio = parent.verdict.speedup.value_or(1.0);
    mr.progress.step = g + 1;
    mr.progress.accepted = static_cast<int32_t>(arch_.size());
    mr.progress.step_name = "generation";
    mr.progress.accepted_name = "elite(s) in the archive";
    mr.progress.start_name = "baseline";
    mr.progress.best_name = "parent kernel";
    mr.progress.budget_left = budget_left_text(ledger_.bounds(), ledger_.spent());
    mr.progress.roofline = "the parent's last measurement (time, roofline position) is in the direction";
    c.prompt_context = mr.direction;
    out.step.emplace(std::move(*step));
    out.c = std::move(c);
    out.what = cat("g", std::to_string(g), " island ", std::to_string(island), " ", to_string(kind), ": ");
    return out;
  }

  // The proposer's answer for child `c`: the kernel gated against the baseline (a kernel gated
  // before keeps its verdict), placed when correct, recorded as a `child` event.
  result<void> finish(const event_key& key, child_record& c, int32_t island,
                      const agent::op_result<agent::proposal>& pr, const std::string& what) {
    if (!pr) {
      c.failure = cat(agent::to_string(pr.error().kind), ": ", line1(pr.error().message));
      c.placement = placement::failed;
    } else {
      c.kernel = pr->kernel.hash;
      if (c.action.empty()) c.action = pr->action;
      c.edits = pr->edits;
      c.rationale = pr->rationale;
      c.prov = pr->prov;
      if (auto put = db_.put_kernel(pr->kernel); !put) return tl::unexpected(put.error());
      kernels_[pr->kernel.hash] = pr->kernel;
      std::optional<measured> m;
      if (auto seen = gated_.find(pr->kernel.hash); seen != gated_.end()) {
        m = seen->second;  // a kernel the run gated before: its verdict, no new evaluation
        c.duplicate = true;
      } else if (auto batch = fresh_.find(pr->kernel.hash); batch != fresh_.end()) {
        m = batch->second;  // gated with its batch
        c.evaluations.push_back(m->id);
        gated_[pr->kernel.hash] = *m;
        fresh_.erase(batch);
      } else {
        m = gate(pr->kernel, baseline_, pr->prov, screen_);
        if (!m) return {};  // the budget ended the run before the child was measured
        c.evaluations.push_back(m->id);
        gated_[pr->kernel.hash] = *m;
      }
      c.outcome = m->outcome;
      c.speedup = m->v.speedup;
      c.score = composite_score(m->v);
      feedback_[pr->kernel.hash] = detail::feedback_text(*m);
      if (m->v.correct) {
        if (auto pl = place(c, island, pr->kernel, *m, values_of(pr->kernel, c.score)); !pl) return pl;
      } else {
        c.placement = placement::failed;
      }
    }
    out_.children.push_back(c);
    json body = child_json(c);
    body["feedback"] = c.kernel.empty() ? "" : feedback_[c.kernel];
    return emit(event_kind::child, key, std::move(body),
                what + (c.kernel.empty() ? "proposer failed (" + c.failure + ")"
                                         : cat(c.action, " -> ", outcome_text(c.outcome), c.duplicate ? " (gated before)" : "",
                                               ", score ", std::to_string(c.score), ", ", detail::placement_text(c))));
  }

  // One translation of the reference by the proposer (seed_baseline), gated and placed.
  result<void> translation(const event_key& key, int32_t island, int32_t index) {
    if (const json* rec = j_.recorded(key)) return replay(*rec, island);
    auto step = loop_.reserve(llm::one_step);
    if (!step) return {};
    child_record c;
    c.generation = 0, c.island = island, c.index = index, c.kind = child_kind::translation;
    agent::seed_request sr;
    sr.t = &t_;
    sr.reference_source = o_.reference_source;
    sr.target = o_.target_text;
    c.prompt_context = "Translate the task's reference into a kernel on lathe's ABI.\n\n" + o_.reference_source;
    auto pr = p_.seed_baseline(sr);
    loop_.commit(std::move(*step), llm::one_step);
    if (!pr && pr.error().kind == agent::failure_kind::waiting) {
      loop_.wait(pr.error().message);  // batch mode: not recorded, asked again on resume
      return {};
    }
    if (pr && pr->action.empty()) c.action = "translate";
    return finish(key, c, island, pr,
                  cat("translation ", std::to_string(index), " on island ", std::to_string(island), ": "));
  }

  // A recorded child: its budget charged again, its kernel known, its placement redone.
  result<void> replay(const json& rec, int32_t island) {
    child_record c = child_from(rec);
    if (c.kind != child_kind::migrant) loop_.charge(llm::one_step);
    for (size_t i = 0; i < c.evaluations.size(); ++i) loop_.replayed_evaluation();
    if (!c.kernel.empty()) {
      auto k = db_.get_kernel(c.kernel);
      if (!k) return tl::unexpected(k.error());
      kernels_[c.kernel] = *k;
      feedback_[c.kernel] = rec.value("feedback", std::string());
      if (c.kind != child_kind::migrant && !gated_.count(c.kernel)) {
        measured m;
        m.outcome = c.outcome;
        m.v.compiles = c.outcome && built(*c.outcome);
        m.v.correct = c.outcome && correct(*c.outcome);
        m.v.speedup = c.speedup;
        m.id = c.evaluations.empty() ? 0 : c.evaluations.front();
        gated_[c.kernel] = m;
      }
      if (c.placement == placement::contest && !c.placed && !c.duplicate) {
        if (const elite* in = arch_.incumbent(island, arch_.cell_of(values_of(*k, c.score))))
          contests_lost_[c.kernel + "|" + in->hash] = c.contest_ratio;
      }
      if (c.placed) {
        elite e;
        e.hash = c.kernel;
        e.score = c.score;
        e.verdict.compiles = true;
        e.verdict.correct = true;
        e.verdict.speedup = c.speedup;
        e.values = values_of(*k, c.score);
        e.generation = c.generation;
        e.parent = c.parent;
        e.evaluation = c.evaluations.empty() ? 0 : c.evaluations.front();
        arch_.put(island, e);
      }
    }
    out_.children.push_back(std::move(c));
    return {};
  }

  result<void> migrate(int32_t g) {
    for (const auto& [to, m] : arch_.migrants()) {
      const event_key key = event_key::migrant(g, to);
      if (const json* rec = j_.recorded(key)) {
        if (auto r = replay(*rec, to); !r) return r;
        continue;
      }
      child_record c;
      c.generation = g, c.island = to, c.kind = child_kind::migrant, c.parent = m.parent, c.kernel = m.hash;
      c.outcome = outcome::ok, c.speedup = m.verdict.speedup, c.score = m.score;
      measured mm;
      mm.v = m.verdict;
      mm.id = m.evaluation;
      if (auto pl = place(c, to, kernels_.at(m.hash), mm, m.values); !pl) return pl;
      if (loop_.stopped()) return {};
      out_.children.push_back(c);
      json body = child_json(c);
      body["feedback"] = feedback_[m.hash];
      if (auto e = emit(event_kind::child, key, std::move(body),
                        cat("g", std::to_string(g), " migrant ", m.hash.substr(0, 12), " -> island ",
                            std::to_string(to), ": ", detail::placement_text(c)));
          !e)
        return e;
    }
    return {};
  }

  const task& t_;
  const kernel_bundle& baseline_;
  lineages::verifier& v_;
  lineages::verifier& screen_;  // a child's first timing (evolve_options::screen)
  agent::proposer& p_;
  store& db_;
  llm::ledger& ledger_;
  const evolve_options& o_;
  detail::journal& j_;
  evolve_result& out_;
  detail::run_loop loop_;
  archive arch_;
  std::mt19937_64 rng_;
  elite start_elite_;
  std::map<std::string, kernel_bundle> kernels_;
  std::map<std::string, std::string> feedback_;
  std::map<std::string, std::vector<std::string>> features_;
  std::map<std::string, measured> gated_;  // every kernel gated against the baseline, by hash
  std::map<std::string, measured> fresh_;  // gated with the current batch, not yet placed
  std::map<std::string, std::optional<double>> contests_lost_;  // "child|incumbent" -> its ratio
};

json options_json(const evolve_options& o) {
  json d = json::array();
  for (const auto& x : o.descriptors) d.push_back({{"name", x.name}, {"edges", x.edges}});
  return {{"generations", o.generations}, {"islands", o.islands}, {"population", o.population},
          {"children", o.children}, {"migrate_every", o.migrate_every}, {"descriptors", d},
          {"sampling", {{"exploration", o.samp.exploration}, {"exploitation", o.samp.exploitation},
                        {"elite", o.samp.elite}, {"top", o.samp.top_k}, {"inspirations", o.samp.inspirations}}},
          {"seed", o.seed}, {"in_flight", o.in_flight}, {"library", static_cast<bool>(o.cards)},
          {"child_timing", to_string(o.screen ? o.screen_timing : child_timing::full)}};
}

}  // namespace

std::string new_evolve_id() { return new_run_id(run_kind::evolve); }

result<evolve_result> evolve(const task& t, const kernel_bundle& start, const kernel_bundle& baseline,
                             lineages::verifier& v, agent::proposer& p, store& db, llm::ledger& ledger,
                             const evolve_options& o) {
  evolve_result out;
  run& r = out.r;
  auto begun = detail::begin_run(db, o.resume_run, run_kind::evolve, t.name, o.run_id, ledger.bounds().run,
                                 o.args_json, out.resumed);
  if (!begun) return tl::unexpected(begun.error());
  r = *begun;
  detail::journal j(db, r.id);
  if (out.resumed)
    if (auto ok = j.load(); !ok) return tl::unexpected(ok.error());
  if (const json* st = j.recorded(event_key::started());
      st && (st->value("seed", o.seed) != o.seed || st->value("in_flight", o.in_flight) != o.in_flight))
    return fail(errc::invalid_argument,
                "run '" + r.id + "' was started with another seed or --in-flight: resume with its own arguments");
  runner loop(t, baseline, v, p, db, ledger, o, j, out);
  json st = options_json(o);
  st["task"] = t.name;
  st["start"] = start.hash;
  st["baseline"] = baseline.hash;
  st["proposer"] = o.proposer_label;
  if (auto w = j.emit(event_kind::started, event_key::started(), st, ledger.spent().seconds); !w) return tl::unexpected(w.error());
  auto body = loop.run(start);
  if (!body) {
    (void)detail::end_run(db, r, body, false, "", "");  // the run stored as failed, with the error's message
    return tl::unexpected(body.error());
  }
  out.waiting = loop.waiting();
  const elite* b = loop.arch().best();
  out.archive_size = loop.arch().size();
  if (b) {
    out.best = b->hash;
    out.best_speedup = b->verdict.speedup;
  }
  json children = json::array();
  int32_t placed = 0, failed = 0, duplicates = 0;
  json failures = json::object();  // why children failed: "proposer:KIND" or "gate:OUTCOME"
  for (const auto& c : out.children) {
    placed += c.placed;
    duplicates += c.duplicate;
    if (c.placement != placement::failed) continue;
    ++failed;
    const std::string why = c.kernel.empty() ? "proposer:" + c.failure.substr(0, c.failure.find(':'))
                                             : cat("gate:", outcome_text(c.outcome));
    failures[why] = failures.value(why, 0) + 1;
  }
  json elites = json::array();
  for (int32_t i = 0; i < loop.arch().islands(); ++i)
    for (const elite* e : loop.arch().elites(i))
      elites.push_back({{"island", i}, {"cell", loop.arch().cell_of(e->values)}, {"kernel", e->hash},
                        {"score", e->score}, {"values", e->values}, {"generation", e->generation},
                        {"speedup", e->verdict.speedup ? json(*e->verdict.speedup) : json(nullptr)}});
  const json summary{{"task", t.name},
                     {"proposer", o.proposer_label},
                     {"children", out.children.size()},
                     {"placed", placed},
                     {"failed", failed},
                     {"failures", failures},
                     {"duplicates", duplicates},
                     {"evaluations", out.evaluations},
                     {"best", out.best},
                     {"best_speedup", out.best_speedup ? json(*out.best_speedup) : json(nullptr)},
                     {"best_per_generation", out.best_per_generation},
                     {"archive", elites},
                     {"stopped", loop.stop_detail()},
                     {"options", options_json(o)}};
  // Batch mode: interrupted and resumable (`--gate-batch DIR` continues it).
  if (auto ended = detail::end_run(db, r, body, out.waiting, loop.stop_detail(), summary.dump()); !ended)
    return tl::unexpected(ended.error());
  if (out.waiting) return out;
  (void)j.emit(event_kind::finished, event_key::finished(), {{"best", out.best}, {"stopped", loop.stop_detail()}}, ledger.spent().seconds);
  return out;
}

}  // namespace lathe::search
