// lathe optimize (issue 7) on recorded verdicts: the rule engine (and the mock model) proposes
// real edits of the shipped layernorm naive kernel, and a scripted verifier answers the gate from
// the kernel's source features with fixed gains, so every run is deterministic and takes no
// timing. What is checked: budgets (steps, evaluations) end the run and are never exceeded; a
// candidate replaces the best only after a fresh re-measure, and the reported ratio is the
// re-measure's; the final figure is a fresh paired series against the start; a run killed after
// any event and resumed ends exactly as an uninterrupted one without repeating an evaluation or
// a proposer call; the four strategies and the four ablation switches change what the proposer
// is given, on the same task and budget.
#include <gtest/gtest.h>

#include <cmath>

#include <map>
#include <set>
#include <stdexcept>

#include "agent/delegating.h"
#include "agent/llm_proposer.h"
#include "agent/situation_text.h"
#include "agent/prompt.h"
#include "features/detect.h"
#include "agent/rules/rules_proposer.h"
#include "core/test_util.h"
#include "spec/bundle.h"
#include "spec/task_file.h"
#include "llm/command.h"
#include "llm/metered.h"
#include "search/optimize.h"
#include "scripted_verifier.h"

namespace lathe::search_test {
namespace {

namespace fs = std::filesystem;
using search::optimize;
using search::optimize_options;
using search::strategy;

fs::path source_dir() { return LATHE_SOURCE_DIR; }

// Records what each operation was asked and counts the calls.
class recording : public test::delegating {
 public:
  using delegating::delegating;
  std::vector<agent::materialize_request> materialized;
  std::vector<agent::mutate_request> mutated;
  int calls = 0;
  agent::op_result<agent::proposal> materialize(const agent::materialize_request& r) override {
    ++calls;
    materialized.push_back(r);
    return inner_.materialize(r);
  }
  agent::op_result<agent::proposal> mutate(const agent::mutate_request& r) override {
    ++calls;
    mutated.push_back(r);
    return inner_.mutate(r);
  }
  agent::op_result<agent::proposal> repair(const agent::repair_request& r) override {
    ++calls;
    return inner_.repair(r);
  }
  agent::op_result<agent::ranking> rank_paths(const agent::rank_request& r) override {
    ++calls;
    return inner_.rank_paths(r);
  }
};

skill_card card(const std::string& id, const std::string& provides, double declared,
                card_status status = card_status::admitted) {
  skill_card c;
  c.id = id;
  c.name = id;
  c.intent = "Add " + provides;
  c.op = "softmax";
  c.provides_features = {provides};
  c.carriers["cpp/cpu"] = "(a text diff from the source lineage)";
  c.preconditions = {"the loop's iterations are independent"};
  c.risk = "a data race if they are not";
  c.declared_ratio = declared;
  c.target = "x86-64-v3";
  c.status = status;
  return c;
}

class optimize_env : public ::testing::Test {
 protected:
  void SetUp() override {
    auto t = load_task(source_dir() / "tasks/layernorm");
    ASSERT_TRUE(t) << t.error().message;
    t_ = std::move(*t);
    auto k = load_bundle(source_dir() / "tasks/layernorm/kernels/naive");
    if (!k) k = load_bundle(source_dir() / "tasks/layernorm/kernels/naive.cpp");
    ASSERT_TRUE(k) << k.error().message;
    naive_ = std::move(*k);
    tgt_.plat = platform::cpu;
    tgt_.arch = "x86-64-v3";
    tgt_.capabilities = {"avx", "avx2", "fma"};
  }

  store open_store(const std::string& name) {
    auto db = store::open(dir_ / name);
    EXPECT_TRUE(db) << db.error().message;
    return std::move(*db);
  }

  optimize_options options(strategy s) const {
    optimize_options o;
    o.strat = s;
    o.tgt = tgt_;
    o.target_text = "x86-64-v3 (scripted)";
    o.proposer_label = "rules";
    return o;
  }

  search::optimize_kernels start() const {
    search::optimize_kernels ks;
    ks.start = naive_;
    return ks;
  }

  result<search::optimize_result> run(store& db, agent::proposer& p, lineages::verifier& v, const budget& b,
                                      const optimize_options& o, double spent_seconds = 0) {
    llm::amounts spent;
    spent.seconds = spent_seconds;
    llm::ledger ledger(llm::limits{b, std::nullopt}, spent);
    return optimize(t_, start(), v, p, db, ledger, o);
  }

  test::temp_dir dir_;
  task t_;
  kernel_bundle naive_;
  target tgt_;
  agent::rules::rules_proposer rules_;
};

budget steps(int64_t n) {
  budget b;
  b.steps = n;
  return b;
}

TEST_F(optimize_env, a_steps_budget_ends_the_run_and_is_never_exceeded) {
  store db = open_store("a.db");
  scripted_verifier v;
  recording p(rules_);
  auto r = run(db, p, v, steps(3), options(strategy::none));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->stop, search::stop_reason::steps) << r->stop_detail;
  EXPECT_EQ(r->used.steps, 3);
  EXPECT_EQ(p.calls, 3);  // one mutation per step; the rule engine cannot repair, and is not asked twice
  EXPECT_NE(r->stop_detail.find("steps"), std::string::npos) << r->stop_detail;
  auto stored = db.get_run(r->r.id);
  ASSERT_TRUE(stored && *stored);
  EXPECT_EQ((*stored)->state, run_state::finished);
  EXPECT_NE((*stored)->summary.find("\"stop\":\"steps\""), std::string::npos) << (*stored)->summary;
}

TEST_F(optimize_env, an_evaluations_budget_holds_the_final_measurement_back_and_is_never_exceeded) {
  for (int64_t evals : {3, 4, 5, 6}) {
    store db = open_store("e" + std::to_string(evals) + ".db");
    scripted_verifier v;
    budget b;
    b.evals = evals;
    auto r = run(db, rules_, v, b, options(strategy::none));
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_LE(static_cast<int64_t>(v.calls.size()), evals) << evals;
    EXPECT_EQ(r->used.evals, static_cast<int64_t>(v.calls.size()));
    EXPECT_EQ(r->stop, search::stop_reason::evals) << evals << ": " << r->stop_detail;
    // Whatever was accepted was measured once more against the start, inside the budget.
    if (!r->steps.empty()) {
      ASSERT_TRUE(r->best_vs_start) << evals;
      EXPECT_EQ(v.calls.back().candidate, r->best.hash);
      EXPECT_EQ(v.calls.back().baseline, r->start.hash);
    }
  }
  // Too small for the start check and the final measurement together: refused before anything runs.
  store db = open_store("tiny.db");
  scripted_verifier v;
  budget b;
  b.evals = 0;
  auto r = run(db, rules_, v, b, options(strategy::none));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("final measurements"), std::string::npos) << r.error().message;
  EXPECT_TRUE(v.calls.empty());
}

TEST_F(optimize_env, a_candidate_replaces_the_best_only_after_a_fresh_re_measure_and_reports_it) {
  store db = open_store("m.db");
  scripted_verifier v;
  // The second comparison of a pair reads 10% lower than the first.
  v.drift = [](const std::string&, int nth) { return nth == 1 ? 1.0 : 0.9; };
  auto r = run(db, rules_, v, steps(6), options(strategy::none));
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_FALSE(r->steps.empty());
  double product = 1;
  for (const auto& s : r->steps) {
    std::vector<double> ratios;
    for (const auto& c : v.calls)
      if (c.timed && c.candidate == s.tr.to_kernel && c.baseline == s.tr.from_kernel && c.ratio)
        ratios.push_back(*c.ratio);
    ASSERT_EQ(ratios.size(), 2u) << s.tr.action;  // the first series and the re-measure
    EXPECT_DOUBLE_EQ(s.first_ratio, ratios[0]);
    ASSERT_TRUE(s.tr.speedup);
    EXPECT_DOUBLE_EQ(*s.tr.speedup, ratios[1]);  // the re-measure is what is reported
    EXPECT_EQ(s.tr.prov.kind, "rules");
    EXPECT_EQ(s.tr.evaluations.size(), 2u);
    product *= *s.tr.speedup;
  }
  // Each proposal event records what the proposer was told of the best kernel: its verified
  // features, and once a step was accepted, the re-measure's time.
  auto events = db.run_events(r->r.id);
  ASSERT_TRUE(events);
  int told = 0;
  bool measured = false;
  for (const auto& e : *events) {
    if (e.kind != "proposal") continue;
    EXPECT_NE(e.json.find("verified features"), std::string::npos) << e.json.substr(0, 300);
    measured |= e.json.find("last measured: median") != std::string::npos;
    ++told;
  }
  EXPECT_GE(told, 2);
  EXPECT_TRUE(measured);
  // The final figure is its own fresh series of best against start (not the product of steps).
  ASSERT_TRUE(r->best_vs_start);
  EXPECT_EQ(v.calls.back().candidate, r->best.hash);
  EXPECT_EQ(v.calls.back().baseline, r->start.hash);
  EXPECT_DOUBLE_EQ(*r->best_vs_start, *v.calls.back().ratio);
  EXPECT_NE(*r->best_vs_start, product);

  // A candidate that clears the margin at first but not on the re-measure is rejected.
  store db2 = open_store("m2.db");
  scripted_verifier w;
  w.drift = [](const std::string&, int nth) { return nth == 1 ? 1.0 : 0.5; };
  auto r2 = run(db2, rules_, w, steps(4), options(strategy::none));
  ASSERT_TRUE(r2) << r2.error().message;
  EXPECT_TRUE(r2->steps.empty());
  EXPECT_EQ(r2->best.hash, naive_.hash);
  EXPECT_FALSE(r2->best_vs_start);
  auto events2 = db2.run_events(r2->r.id);
  ASSERT_TRUE(events2);
  bool remeasure_rejection = false;
  for (const auto& e : *events2)
    remeasure_rejection |= e.kind == "rejected" && e.json.find("\"stage\":\"remeasure\"") != std::string::npos;
  EXPECT_TRUE(remeasure_rejection);
}

// One decision rule (issue 43, step 10): a candidate is faster when the gate decides so, the
// ratio's interval clearing 1 + margin, not when its point ratio does. omp_parallel reads 2.0x;
// an interval of +-60% around it reaches below 1.05, so no step is accepted, and the proposer
// reads why.
TEST_F(optimize_env, a_point_ratio_past_the_margin_is_not_faster_while_its_interval_reaches_below_it) {
  store db = open_store("w.db");
  scripted_verifier v;
  v.spread = 0.6;
  auto r = run(db, rules_, v, steps(3), options(strategy::none));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->steps.empty());
  bool timed_above_margin = false;
  for (const auto& c : v.calls) timed_above_margin |= c.timed && c.ratio && *c.ratio >= 1.5;
  EXPECT_TRUE(timed_above_margin);  // the point rule would have accepted it
  auto events = db.run_events(r->r.id);
  ASSERT_TRUE(events);
  bool said = false;
  for (const auto& e : *events)
    said |= e.kind == "rejected" && e.json.find("\"stage\":\"not_faster\"") != std::string::npos &&
            e.json.find("the interval reaches below 1 + 0.050") != std::string::npos;
  EXPECT_TRUE(said);
  // The evaluation events keep the decision and the interval.
  bool kept = false;
  for (const auto& e : *events)
    kept |= e.kind == "evaluation" && e.json.find("\"decision\":\"same\"") != std::string::npos &&
            e.json.find("\"interval\":[") != std::string::npos;
  EXPECT_TRUE(kept);
}

TEST_F(optimize_env, a_final_series_that_does_not_decide_leaves_the_figure_empty_and_says_why) {
  store db = open_store("u.db");
  ASSERT_TRUE(db.put_card(card("omp-card", "omp_parallel", 1.6)));
  scripted_verifier v;
  // The step's two comparisons decide; the final one of best against naive (the same pair's
  // third and fourth) does not.
  v.unstable = [&](const std::string& k, const std::string& b, int nth) {
    return b == naive_.hash && k != naive_.hash && nth >= 3;
  };
  auto r = run(db, rules_, v, steps(1), options(strategy::skills));
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->steps.size(), 1u);
  EXPECT_FALSE(r->best_vs_start);
  EXPECT_EQ(r->final_best_outcome, outcome::unstable);
  EXPECT_EQ(r->final_evaluations.size(), 1u);  // the last of the two tries
  EXPECT_EQ(v.timed_calls(), 4);                // first series, re-measure, final asked twice
  auto stored = db.get_run(r->r.id);
  ASSERT_TRUE(stored && *stored);
  EXPECT_NE((*stored)->summary.find("\"final_best_outcome\":\"unstable\""), std::string::npos);
}

// The run as its summary and steps show it, for comparing two runs.
std::string trace(const search::optimize_result& r) {
  std::string s = "best " + r.best.hash + " stop " + to_string(r.stop) + "\n";
  for (const auto& st : r.steps)
    s += std::to_string(st.step) + " " + st.source + " " + st.tr.to_kernel + " " + std::to_string(*st.tr.speedup) + "\n";
  s += "proposals " + std::to_string(r.proposals) + " rejected " + std::to_string(r.rejected) + " evaluations " +
       std::to_string(r.evaluations) + " used steps " + std::to_string(r.used.steps) + " evals " +
       std::to_string(r.used.evals);
  return s;
}

struct killed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

TEST_F(optimize_env, a_run_killed_after_any_event_and_resumed_ends_as_an_uninterrupted_one) {
  store cards_db = open_store("cards.db");
  const std::vector<skill_card> library = {card("omp-card", "omp_parallel", 1.6), card("simd-card", "simd", 1.3)};
  auto prepare = [&](store& db) {
    for (const auto& c : library) ASSERT_TRUE(db.put_card(c));
  };
  // The whole run once: its events, its verifier and proposer calls.
  store whole_db = open_store("whole.db");
  prepare(whole_db);
  scripted_verifier whole_v;
  recording whole_p(rules_);
  const optimize_options o = options(strategy::skills);
  auto whole = run(whole_db, whole_p, whole_v, steps(6), o);
  ASSERT_TRUE(whole) << whole.error().message;
  ASSERT_GE(whole->steps.size(), 2u) << trace(*whole);
  auto events = whole_db.run_events(whole->r.id);
  ASSERT_TRUE(events);
  const int n_events = static_cast<int>(events->size());

  for (int kill_after = 1; kill_after < n_events; ++kill_after) {
    SCOPED_TRACE("killed after event " + std::to_string(kill_after));
    store db = open_store("k" + std::to_string(kill_after) + ".db");
    prepare(db);
    scripted_verifier v1;
    recording p1(rules_);
    optimize_options first = o;
    first.run_id = "optimize-test-" + std::to_string(kill_after);
    int seen = 0;
    first.progress = [&](const search::optimize_progress&) {
      if (++seen == kill_after) throw killed("kill");
    };
    EXPECT_THROW((void)run(db, p1, v1, steps(6), first), killed);
    auto stopped = db.get_run(first.run_id);
    ASSERT_TRUE(stopped && *stopped);
    EXPECT_EQ((*stopped)->state, run_state::running);  // as a killed process leaves it

    scripted_verifier v2;
    recording p2(rules_);
    optimize_options again = o;
    again.resume_run = first.run_id;
    auto secs = search::resume_seconds(db, first.run_id);
    ASSERT_TRUE(secs);
    auto resumed = run(db, p2, v2, steps(6), again, *secs);
    ASSERT_TRUE(resumed) << resumed.error().message;
    EXPECT_TRUE(resumed->resumed);
    EXPECT_EQ(trace(*resumed), trace(*whole));
    // Nothing asked twice: the two sessions together asked what the whole run asked.
    EXPECT_EQ(v1.calls.size() + v2.calls.size(), whole_v.calls.size());
    EXPECT_EQ(p1.calls + p2.calls, whole_p.calls);
  }
}

TEST_F(optimize_env, the_four_strategies_run_on_one_task_and_budget_and_differ_in_what_the_proposer_sees) {
  const budget b = steps(5);
  std::map<strategy, search::optimize_result> results;
  std::map<strategy, std::unique_ptr<recording>> seen;
  store experts_db = open_store("x.db");
  for (strategy s : {strategy::skills, strategy::none, strategy::forward_memory, strategy::expert_source}) {
    store db = open_store(std::string("s") + to_string(s) + ".db");
    ASSERT_TRUE(db.put_card(card("omp-card", "omp_parallel", 1.6)));
    if (s == strategy::expert_source) {
      // The library's source lineage: the softmax expert (OpenMP, AVX2 intrinsics).
      auto expert = load_bundle(source_dir() / "tasks/softmax/kernels/expert");
      if (!expert) expert = load_bundle(source_dir() / "tasks/softmax/kernels/expert.cpp");
      ASSERT_TRUE(expert) << expert.error().message;
      ASSERT_TRUE(db.put_kernel(*expert));
      lineage l;
      l.id = "softmax/x/test";
      l.task = "softmax";
      l.op = "softmax";
      l.expert = "expert";
      l.target = "x86-64-v3";
      l.kernels = {expert->hash};
      l.features = {{}};
      ASSERT_TRUE(db.put_lineage(l));
    }
    scripted_verifier v;
    seen[s] = std::make_unique<recording>(rules_);
    auto r = run(db, *seen[s], v, b, options(s));
    ASSERT_TRUE(r) << to_string(s) << ": " << r.error().message;
    EXPECT_LE(r->used.steps, 5);
    EXPECT_EQ(r->start.hash, naive_.hash);
    EXPECT_EQ(r->how, search::start_how::given);
    results[s] = std::move(*r);
  }
  // skills: the card first, then free mutations once it is used.
  ASSERT_FALSE(seen[strategy::skills]->materialized.empty());
  EXPECT_EQ(seen[strategy::skills]->materialized.front().cards.front().id, "omp-card");
  ASSERT_FALSE(results[strategy::skills].steps.empty());
  EXPECT_EQ(results[strategy::skills].steps.front().source, "card:omp-card");
  // What the v2 prompts say of the library: its size and, once every card was tried on the best
  // kernel, that the free mutation is one because the library is exhausted.
  EXPECT_NE(seen[strategy::skills]->materialized.front().progress.library.find("1 card(s) in the library; 1 retrieved"),
            std::string::npos) << seen[strategy::skills]->materialized.front().progress.library;
  ASSERT_FALSE(seen[strategy::skills]->mutated.empty());
  for (const auto& m : seen[strategy::skills]->mutated)
    EXPECT_NE(m.progress.library.find("library is exhausted for this kernel"), std::string::npos) << m.progress.library;
  for (const auto& m : seen[strategy::none]->mutated) EXPECT_TRUE(m.progress.library.empty());
  // none: mutations with no memory, no inspirations, no cards.
  EXPECT_TRUE(seen[strategy::none]->materialized.empty());
  for (const auto& m : seen[strategy::none]->mutated) {
    EXPECT_TRUE(m.inspirations.empty());
    EXPECT_EQ(m.direction, search::plain_direction());
  }
  // forward-memory: after its first accepted step, the direction carries that step.
  const auto& mem = results[strategy::forward_memory];
  ASSERT_FALSE(mem.steps.empty());
  bool remembered = false;
  for (const auto& m : seen[strategy::forward_memory]->mutated)
    remembered |= m.direction.find("step " + std::to_string(mem.steps.front().step) + ": " +
                                   mem.steps.front().tr.action) != std::string::npos;
  EXPECT_TRUE(remembered);
  EXPECT_TRUE(seen[strategy::forward_memory]->materialized.empty());
  // expert-source: the expert's source instead of cards, on every request.
  ASSERT_FALSE(seen[strategy::expert_source]->mutated.empty());
  for (const auto& m : seen[strategy::expert_source]->mutated) {
    ASSERT_EQ(m.inspirations.size(), 1u);
    EXPECT_EQ(m.inspirations.front().name, "softmax/expert");
  }
  EXPECT_TRUE(seen[strategy::expert_source]->materialized.empty());
  // With the rule engine, the expert's mechanisms go first: its first step adds what the expert
  // has and the naive kernel lacks (OpenMP), as the skills run's card did.
  ASSERT_FALSE(results[strategy::expert_source].steps.empty());
  EXPECT_EQ(results[strategy::expert_source].steps.front().source, "expert-source");

  // expert-source with no lineage in the store says what to run first.
  store empty = open_store("empty.db");
  scripted_verifier v;
  auto none = run(empty, rules_, v, b, options(strategy::expert_source));
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("lathe decompose"), std::string::npos) << none.error().message;
}

// Issue 23 item 3: what a search tells the proposer of where it stands comes from its own
// measurements: the start's and the best's medians from the paired evaluations, the product of
// the accepted steps, the floor, the step and what the budget still allows.
TEST_F(optimize_env, the_proposer_is_told_the_measured_times_the_floor_and_the_budget_left) {
  store db = open_store("p.db");
  scripted_verifier v;
  recording rec(rules_);
  budget b = steps(4);
  b.evals = 40;
  auto r = run(db, rec, v, b, options(strategy::none));
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_GE(rec.mutated.size(), 2u);
  ASSERT_FALSE(r->steps.empty());
  const agent::progress_facts& first = rec.mutated.front().progress;
  EXPECT_EQ(first.step, 1);
  ASSERT_TRUE(first.steps);
  EXPECT_EQ(*first.steps, 4);
  EXPECT_FALSE(first.start_seconds) << "nothing was timed before the first proposal";
  EXPECT_FALSE(first.floor_seconds);
  EXPECT_NE(first.budget_left.find("evaluation(s)"), std::string::npos) << first.budget_left;
  EXPECT_FALSE(first.roofline.empty()) << "layernorm has a cost model";
  // The proposal after the first accepted step: the naive kernel's 1 ms as the start, the new
  // best's re-measured median, the ratio, the floor.
  const int32_t accepted_at = r->steps.front().step;
  const agent::mutate_request* after = nullptr;
  for (const auto& m : rec.mutated)
    if (m.progress.step == accepted_at + 1) after = &m;
  ASSERT_NE(after, nullptr);
  const agent::progress_facts& p = after->progress;
  ASSERT_TRUE(p.start_seconds);
  EXPECT_DOUBLE_EQ(*p.start_seconds, 1e-3);
  ASSERT_TRUE(p.best_seconds);
  EXPECT_DOUBLE_EQ(*p.best_seconds, 1e-3 / v.score(r->steps.size() == 1 ? r->best : after->parent));
  EXPECT_DOUBLE_EQ(p.best_ratio, *r->steps.front().tr.speedup);
  EXPECT_EQ(p.accepted, 1);
  ASSERT_TRUE(p.floor_seconds);
  EXPECT_NEAR(*p.floor_seconds, 2e-4, 1e-12);
  const std::string text = agent::progress_text(p);
  EXPECT_NE(text.find("start kernel: 1.00 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("% of the floor's speed"), std::string::npos) << text;
  EXPECT_NE(text.find("step " + std::to_string(accepted_at + 1) + " of 4"), std::string::npos) << text;
  EXPECT_NE(text.find("GB/s"), std::string::npos) << text;
}

// A candidate faster at first whose re-measure the machine's noise leaves open (issue 44, item 2:
// a real model read "faster at first (13.858x) but not on the fresh re-measure (6.487x [4.311,
// 9.763])" and could not tell what margin applied): the rejected note says the re-measure's
// reading, the margin, the A/A interval it came from, that this was too wide to decide and that it
// is no verdict on the kernel; the next step's progress gives the last decision's margin and A/A.
TEST_F(optimize_env, a_re_measure_left_open_by_a_wide_a_a_control_is_said_with_its_margin) {
  store db = open_store("aa.db");
  scripted_verifier v;
  // The first series of a pair is quiet; from the re-measure on the A/A control reads [0.61, 1.64].
  v.aa = [](const std::string&, const std::string&, int nth) -> std::optional<std::pair<double, double>> {
    if (nth == 1) return std::nullopt;
    return std::pair{0.61, 1.64};
  };
  recording rec(rules_);
  auto r = run(db, rec, v, steps(3), options(strategy::none));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->steps.empty());
  ASSERT_GE(rec.mutated.size(), 2u);
  const agent::mutate_request& next = rec.mutated[1];
  ASSERT_FALSE(next.rejected.empty());
  const std::string note = next.rejected.front().summary;
  const double eps = std::expm1(3 * std::log(1.64));
  char margin[64], above[64];
  std::snprintf(margin, sizeof margin, "noise margin 1 + %.3f", eps);
  std::snprintf(above, sizeof above, "low end was above %.3f", 1 + eps);
  for (const std::string part : {std::string("correct, and faster at first ("), std::string("but not on the fresh re-measure: "),
                                 std::string(margin), std::string("from the A/A interval [0.610, 1.640]"),
                                 std::string("past 20% from 1: too wide to decide"), std::string(above),
                                 std::string("Undecided is not a verdict on the kernel")})
    EXPECT_NE(note.find(part), std::string::npos) << part << "\n" << note;
  const agent::progress_facts& p = next.progress;
  ASSERT_TRUE(p.margin);
  EXPECT_NEAR(*p.margin, eps, 1e-9);
  ASSERT_TRUE(p.aa_low && p.aa_high);
  EXPECT_DOUBLE_EQ(*p.aa_low, 0.61);
  EXPECT_DOUBLE_EQ(*p.aa_high, 1.64);
  ASSERT_TRUE(p.margin_floor);
  EXPECT_DOUBLE_EQ(*p.margin_floor, 0.05);
  const std::string text = agent::progress_text(p);
  EXPECT_NE(text.find(std::string("last timed decision: ") + margin), std::string::npos) << text;
  EXPECT_NE(text.find("never below 0.050"), std::string::npos) << text;
  // The verdict's A/A interval is recorded with it (a resume tells the same).
  auto events = db.run_events(r->r.id);
  ASSERT_TRUE(events);
  bool kept = false;
  for (const auto& e : *events) kept |= e.kind == "evaluation" && e.json.find("\"aa_interval\":[0.61,1.64]") != std::string::npos;
  EXPECT_TRUE(kept);
}

// A ModelNew best (issue 44, item 2): "verified features none" beside AVX-512 intrinsics read as
// a verdict on the model's claims; the target says lathe detects no features in a Python kernel.
TEST_F(optimize_env, a_python_best_is_said_to_have_no_features_detected) {
  store db = open_store("py.db");
  scripted_verifier v;
  recording rec(rules_);
  kernel_bundle py;
  py.name = "eager";
  py.manifest.lang = language::python;
  py.manifest.entry = "eager.py";
  py.manifest.files = {"eager.py"};
  py.sources["eager.py"] = "import torch\n\nclass ModelNew(torch.nn.Module):\n    pass\n";
  py.hash = "py-eager";
  search::optimize_kernels ks;
  ks.start = py;
  llm::ledger ledger(llm::limits{steps(1), std::nullopt}, llm::amounts{});
  auto r = optimize(t_, ks, v, rec, db, ledger, options(strategy::none));
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_FALSE(rec.mutated.empty());
  EXPECT_NE(rec.mutated.front().target.find("verified features none (lathe detects no features in a Python kernel"),
            std::string::npos)
      << rec.mutated.front().target;
}

TEST_F(optimize_env, each_ablation_switch_changes_what_the_proposer_is_given) {
  skill_card omp = card("b-omp", "omp_parallel", 1.6);
  skill_card simd = card("a-simd", "simd", 3.0);  // scores higher, but needs OpenMP first
  simd.requires_features = {"omp_parallel"};
  skill_card gated = card("c-restrict", "restrict", 1.2);
  gated.constraints = {{"capability", "avx512f"}};  // the scripted target lacks it
  skill_card fresh = card("d-unroll", "loop_unroll", 1.2, card_status::candidate);
  auto first_cards = [&](const search::ablation& a) {
    store db = open_store("ab" + search::to_string(a) + ".db");
    for (const auto& c : {omp, simd, gated, fresh}) EXPECT_TRUE(db.put_card(c));
    scripted_verifier v;
    recording p(rules_);
    optimize_options o = options(strategy::skills);
    o.abl = a;
    o.free_after_cards = false;
    auto r = run(db, p, v, steps(6), o);
    EXPECT_TRUE(r) << r.error().message;
    std::vector<std::string> ids;
    for (const auto& m : p.materialized)
      for (const auto& c : m.cards) ids.push_back(c.id);
    return std::make_pair(ids, p.materialized);
  };
  const auto [plain, plain_req] = first_cards({});
  ASSERT_FALSE(plain.empty());
  EXPECT_EQ(plain.front(), "b-omp");  // the lineage's order: OpenMP before what requires it
  EXPECT_EQ(std::count(plain.begin(), plain.end(), "c-restrict"), 0);  // its constraint fails here
  EXPECT_EQ(std::count(plain.begin(), plain.end(), "d-unroll"), 0);    // not admitted
  EXPECT_FALSE(plain_req.front().cards.front().carriers.empty());
  EXPECT_FALSE(plain_req.front().cards.front().preconditions.empty());

  search::ablation order;
  order.no_lineage_order = true;
  EXPECT_EQ(first_cards(order).first.front(), "a-simd");  // by score

  search::ablation pre;
  pre.no_preconditions = true;
  const auto [pre_ids, pre_req] = first_cards(pre);
  EXPECT_EQ(std::count(pre_ids.begin(), pre_ids.end(), "c-restrict"), 1);
  for (const auto& m : pre_req)
    for (const auto& c : m.cards) {
      EXPECT_TRUE(c.preconditions.empty());
      EXPECT_TRUE(c.constraints.empty());
      EXPECT_TRUE(c.risk.empty());
    }

  search::ablation adm;
  adm.no_admission = true;
  const auto adm_ids = first_cards(adm).first;
  EXPECT_EQ(std::count(adm_ids.begin(), adm_ids.end(), "d-unroll"), 1);

  search::ablation intent;
  intent.intent_only = true;
  const auto [intent_ids, intent_req] = first_cards(intent);
  ASSERT_FALSE(intent_req.empty());
  for (const auto& m : intent_req)
    for (const auto& c : m.cards) {
      EXPECT_TRUE(c.carriers.empty());
      EXPECT_TRUE(c.preconditions.empty());
      EXPECT_FALSE(c.intent.empty());
      EXPECT_FALSE(c.provides_features.empty());
    }

  auto parsed = search::parse_ablation("intent-only, no-lineage-order");
  ASSERT_TRUE(parsed);
  EXPECT_TRUE(parsed->intent_only && parsed->no_lineage_order && !parsed->no_admission);
  EXPECT_EQ(search::to_string(*parsed), "intent-only,no-lineage-order");
  EXPECT_FALSE(search::parse_ablation("no-intent"));
}

TEST(optimize_budget, the_budget_text_parses_each_limit_and_refuses_nonsense) {
  auto b = llm::parse_budget("steps=20, evals=40,tokens=200k,usd=0.5,time=10m");
  ASSERT_TRUE(b) << b.error();
  EXPECT_EQ(*b->steps, 20);
  EXPECT_EQ(*b->evals, 40);
  EXPECT_EQ(*b->tokens, 200000);
  EXPECT_DOUBLE_EQ(*b->usd, 0.5);
  EXPECT_DOUBLE_EQ(*b->seconds, 600);
  EXPECT_EQ(llm::budget_text(*b), "steps=20,evals=40,tokens=200000,usd=0.5,time=600s");
  EXPECT_DOUBLE_EQ(*llm::parse_budget("time=90")->seconds, 90);
  EXPECT_DOUBLE_EQ(*llm::parse_budget("time=1h")->seconds, 3600);
  EXPECT_EQ(llm::budget_text(*llm::parse_budget("")), "none");
  for (const char* bad : {"steps=2.5", "steps=-1", "evals", "time=10x", "usd=cheap", "gpus=2", "tokens=1G"})
    EXPECT_FALSE(llm::parse_budget(bad)) << bad;
  EXPECT_NE(llm::parse_budget("gpus=2").error().find("steps, evals, tokens, usd, time"), std::string::npos);
}

// The mock model through the LLM proposer: its edits are real text edits of the kernel; every
// model call is metered and stored; a resumed run asks the model nothing it asked before.
TEST_F(optimize_env, the_mock_model_optimizes_through_the_llm_proposer_and_a_resume_repeats_no_call) {
  auto prompts = agent::prompt_library::load(source_dir() / "prompts");
  ASSERT_TRUE(prompts) << prompts.error().message;
  auto model_for = [&] {
    llm::command_config cc;
    cc.name = "mock";
    cc.argv = {LATHE_MOCK_MODEL, "--seed", "5"};
    cc.timeout_seconds = 60;
    return std::make_unique<llm::command_provider>(cc);
  };
  const optimize_options o = options(strategy::forward_memory);
  // Whole.
  store whole_db = open_store("mock-whole.db");
  auto whole_model = model_for();
  agent::llm_proposer whole_p(*whole_model, *prompts);
  scripted_verifier whole_v;
  recording whole_rec(whole_p);
  auto whole = run(whole_db, whole_rec, whole_v, steps(4), o);
  ASSERT_TRUE(whole) << whole.error().message;
  EXPECT_EQ(whole->used.steps, 4);
  ASSERT_FALSE(whole->steps.empty()) << trace(*whole);
  for (const auto& s : whole->steps) {
    EXPECT_EQ(s.tr.prov.kind, "llm");
    EXPECT_NE(to_string(s.tr.prov).find("mock"), std::string::npos);
  }
  // Killed after its third event, resumed.
  store db = open_store("mock-kill.db");
  auto m1 = model_for();
  agent::llm_proposer p1(*m1, *prompts);
  recording r1(p1);
  scripted_verifier v1;
  optimize_options first = o;
  first.run_id = "optimize-mock-kill";
  int seen = 0;
  first.progress = [&](const search::optimize_progress& e) {
    if (e.kind == "evaluation" && ++seen == 3) throw killed("kill");
  };
  EXPECT_THROW((void)run(db, r1, v1, steps(4), first), killed);
  auto m2 = model_for();
  agent::llm_proposer p2(*m2, *prompts);
  recording r2(p2);
  scripted_verifier v2;
  optimize_options again = o;
  again.resume_run = first.run_id;
  auto resumed = run(db, r2, v2, steps(4), again);
  ASSERT_TRUE(resumed) << resumed.error().message;
  EXPECT_EQ(trace(*resumed), trace(*whole));
  EXPECT_EQ(r1.calls + r2.calls, whole_rec.calls);
  EXPECT_EQ(v1.calls.size() + v2.calls.size(), whole_v.calls.size());
}

}  // namespace
}  // namespace lathe::search_test

namespace lathe::search_test {
namespace {

// Without a start kernel the proposer seeds one from the task's reference; the mock model writes
// one (a generic CPU kernel over the reference), which the gate checks before the run uses it.
TEST_F(optimize_env, without_a_start_kernel_the_mock_model_seeds_one_and_the_gate_checks_it) {
  auto prompts = agent::prompt_library::load(source_dir() / "prompts");
  ASSERT_TRUE(prompts) << prompts.error().message;
  llm::command_config cc;
  cc.name = "mock";
  cc.argv = {LATHE_MOCK_MODEL, "--seed", "5"};
  cc.timeout_seconds = 60;
  llm::command_provider model(cc);
  agent::llm_proposer p(model, *prompts);
  store db = open_store("seed.db");
  scripted_verifier v;
  llm::ledger ledger(llm::limits{steps(1), std::nullopt});
  search::optimize_kernels ks;
  ks.naive = naive_;  // only if the seed failed
  auto r = optimize(t_, ks, v, p, db, ledger, options(strategy::none));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->how, search::start_how::seeded);
  EXPECT_NE(r->start.hash, naive_.hash);
  ASSERT_FALSE(v.calls.empty());
  EXPECT_EQ(v.calls.front().candidate, r->start.hash);  // checked before anything else
  EXPECT_FALSE(v.calls.front().timed);
  auto stored = db.get_kernel(r->start.hash);
  EXPECT_TRUE(stored) << "the seeded kernel is stored, so that a resumed run can start from it";
}

// The model side of the budget: a limit on model calls ends the run at the call the ledger
// refuses (the metered provider reserves each call before it is made), with that limit named.
TEST_F(optimize_env, a_model_call_limit_ends_the_run_at_the_refused_call) {
  auto prompts = agent::prompt_library::load(source_dir() / "prompts");
  ASSERT_TRUE(prompts) << prompts.error().message;
  llm::command_config cc;
  cc.name = "mock";
  cc.argv = {LATHE_MOCK_MODEL, "--seed", "5"};
  cc.timeout_seconds = 60;
  llm::ledger ledger(llm::limits{steps(10), int64_t{2}});
  llm::meter m;
  m.budget = &ledger;
  m.max_seconds = 60;
  m.command = true;
  llm::metered_provider model(std::make_unique<llm::command_provider>(cc), m);
  agent::llm_proposer p(model, *prompts);
  store db = open_store("calls.db");
  scripted_verifier v;
  auto r = optimize(t_, start(), v, p, db, ledger, options(strategy::none));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->stop, search::stop_reason::calls) << r->stop_detail;
  EXPECT_EQ(ledger.spent().calls, 2);
  EXPECT_LE(r->used.steps, 3);
}

}  // namespace
}  // namespace lathe::search_test

// What a proposer reads of a rejected attempt's ratio (issue 23): the margin it had to clear and
// which side of the noise it fell on; a reading above 1 inside the margin is undecided, never
// "slower".
TEST(optimize_feedback, a_ratio_is_read_against_its_margin) {
  EXPECT_EQ(lathe::search::speed_reading(1.12, 0.05), "1.120x: faster (clears 1 + 0.050)");
  EXPECT_EQ(lathe::search::speed_reading(1.03, 0.05),
            "1.030x: read faster, but inside the noise margin (1 + 0.050): undecided, not slower");
  EXPECT_EQ(lathe::search::speed_reading(0.99, 0.05), "0.990x: the same within the noise margin (1 + 0.050)");
  EXPECT_EQ(lathe::search::speed_reading(0.96, 0.05), "0.960x: the same within the noise margin (1 + 0.050)");
  EXPECT_EQ(lathe::search::speed_reading(0.80, 0.05), "0.800x: slower (below 1 / (1 + 0.050))");
  EXPECT_EQ(lathe::search::speed_reading(1.0, 0.05), "1.000x: the same within the noise margin (1 + 0.050)");
  // By the gate's decision on the interval (issue 43, step 10).
  using lathe::decision;
  EXPECT_EQ(lathe::search::speed_reading(1.12, 0.05, decision::faster, 1.08, 1.16),
            "1.120x [1.080, 1.160]: faster (the interval clears 1 + 0.050)");
  EXPECT_EQ(lathe::search::speed_reading(1.08, 0.05, decision::same, 1.02, 1.14),
            "1.080x [1.020, 1.140]: read faster, but the interval reaches below 1 + 0.050: undecided, not slower");
  EXPECT_EQ(lathe::search::speed_reading(0.99, 0.05, decision::same, 0.95, 1.03),
            "0.990x [0.950, 1.030]: the same within the noise margin (1 + 0.050)");
  EXPECT_EQ(lathe::search::speed_reading(0.80, 0.05, decision::slower, 0.78, 0.82),
            "0.800x [0.780, 0.820]: slower (the interval lies below 1 / (1 + 0.050))");
  EXPECT_EQ(lathe::search::speed_reading(1.30, 0.05, decision::undecided, 0.9, 1.9),
            "1.300x [0.900, 1.900]: undecided: the machine's noise leaves it open");
}

// The start event's `how` (issue 43: the kind an enum, the reason apart): the words stored runs hold.
TEST(optimize_start, how_the_start_came_is_written_as_before) {
  using lathe::search::start_how;
  using lathe::search::start_text;
  EXPECT_EQ(start_text(start_how::given, ""), "given");
  EXPECT_EQ(start_text(start_how::seeded, ""), "seeded");
  EXPECT_EQ(start_text(start_how::naive, "the proposer cannot seed (unsupported): no model"),
            "naive (the proposer cannot seed (unsupported): no model)");
}
