// lathe evolve (issue 9) on recorded verdicts: the archive's invariants and sampling by hand; the
// loop with the rule engine proposing real mutations of the shipped layernorm naive kernel and the
// scripted verifier answering from source features (deterministic, nothing built or timed): one
// elite per cell, an elite never replaced by a child that loses the paired re-measure, migration,
// resume without repeating a child; and each training-export filter on constructed cases.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "agent/llm_proposer.h"
#include "agent/prompt.h"
#include "agent/delegating.h"
#include "agent/rules/rules_proposer.h"
#include "llm/command.h"
#include "core/test_util.h"
#include "spec/bundle.h"
#include "spec/task_file.h"
#include "scripted_verifier.h"
#include "search/archive.h"
#include "search/evolve.h"
#include "search/export.h"

namespace lathe::search_test {
namespace {

namespace fs = std::filesystem;
using namespace lathe::search;
using nlohmann::json;

elite make(const std::string& hash, double score, std::vector<double> values) {
  elite e;
  e.hash = hash;
  e.score = score;
  e.values = std::move(values);
  e.verdict.compiles = e.verdict.correct = true;
  return e;
}

TEST(archive, descriptors_and_sampling_parse_and_refuse) {
  auto d = parse_descriptors("complexity:40,80;feature:simd;score:1.5,2");
  ASSERT_TRUE(d) << d.error().message;
  ASSERT_EQ(d->size(), 3u);
  EXPECT_EQ((*d)[1].name, "feature:simd");
  EXPECT_EQ((*d)[0].kind, descriptor_kind::complexity);
  EXPECT_EQ((*d)[1].kind, descriptor_kind::feature);
  EXPECT_EQ((*d)[1].feature, "simd");
  EXPECT_EQ((*d)[2].kind, descriptor_kind::score);
  EXPECT_EQ((*d)[1].bins(), 2);
  EXPECT_EQ((*d)[0].bin_of(39), 0);
  EXPECT_EQ((*d)[0].bin_of(40), 1);
  EXPECT_EQ((*d)[0].bin_of(500), 2);
  EXPECT_FALSE(parse_descriptors("colour:1,2"));
  EXPECT_FALSE(parse_descriptors("complexity:80,40"));
  EXPECT_FALSE(parse_descriptors("complexity"));
  EXPECT_FALSE(parse_descriptors("complexity:1;complexity:2"));
  auto s = parse_sampling("exploration=1,exploitation=1,elite=2,top=2");
  ASSERT_TRUE(s);
  EXPECT_DOUBLE_EQ(s->elite, 0.5);  // normalized
  EXPECT_EQ(s->top_k, 2);
  EXPECT_FALSE(parse_sampling("exploration=-1"));
  EXPECT_FALSE(parse_sampling("exploration=0,exploitation=0,elite=0"));
  EXPECT_FALSE(parse_sampling("temperature=1"));
}

TEST(archive, the_composite_score_ranks_failures_below_every_correct_kernel) {
  EXPECT_EQ(composite_score({false, false, std::nullopt}), 0.0);
  EXPECT_EQ(composite_score({true, false, std::nullopt}), 0.25);
  EXPECT_EQ(composite_score({true, true, 0.5}), 1.5);  // correct but slower still beats wrong
  EXPECT_EQ(composite_score({true, true, std::nullopt}), 2.0);  // undecided: parity
  EXPECT_GT(composite_score({true, true, 1.2}), composite_score({true, true, 1.1}));
}

TEST(archive, one_elite_per_cell_and_placement) {
  archive a(*parse_descriptors("complexity:10,20"), 2);
  EXPECT_EQ(a.place(0, 2.0, {5}), placement::new_cell);
  a.put(0, make("a", 2.0, {5}));
  EXPECT_EQ(a.place(0, 1.5, {7}), placement::kept);     // same cell, lower score
  EXPECT_EQ(a.place(0, 2.0, {7}), placement::kept);     // a tie keeps the incumbent
  EXPECT_EQ(a.place(0, 2.5, {7}), placement::contest);  // higher: a re-measure decides
  EXPECT_EQ(a.place(1, 1.0, {7}), placement::new_cell); // islands are apart
  a.put(0, make("b", 2.5, {9}));                          // the same cell (bin 0): replaced
  EXPECT_EQ(a.elites(0).size(), 1u);
  EXPECT_EQ(a.elites(0)[0]->hash, "b");
  a.put(0, make("c", 1.2, {15}));
  a.put(0, make("d", 1.1, {25}));
  EXPECT_EQ(a.size(), 3u);
  std::set<int64_t> cells;
  for (const elite* e : a.elites(0)) EXPECT_TRUE(cells.insert(a.cell_of(e->values)).second);
  EXPECT_EQ(a.best()->hash, "b");
}

TEST(archive, sampling_follows_its_ratios_and_inspirations_come_from_other_cells) {
  archive a(*parse_descriptors("complexity:10,20,30"), 1);
  a.put(0, make("low", 1.0, {5}));
  a.put(0, make("mid", 2.0, {15}));
  a.put(0, make("top", 3.0, {25}));
  a.put(0, make("top2", 2.9, {35}));
  std::mt19937_64 rng(7);
  sampling elite_only = *parse_sampling("exploration=0,exploitation=0,elite=1,top=1");
  for (int i = 0; i < 20; ++i) EXPECT_EQ(a.parent(0, elite_only, rng)->hash, "top");
  sampling explore = *parse_sampling("exploration=1,exploitation=0,elite=0");
  std::map<std::string, int> seen;
  for (int i = 0; i < 400; ++i) ++seen[a.parent(0, explore, rng)->hash];
  EXPECT_EQ(seen.size(), 4u);
  for (const auto& [h, n] : seen) EXPECT_GT(n, 60) << h;  // uniform: ~100 each
  // Deterministic: the same seed, the same parents.
  std::mt19937_64 r1(3), r2(3);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(a.parent(0, sampling{}, r1)->hash, a.parent(0, sampling{}, r2)->hash);
  const elite* top = a.best(0);
  sampling two = *parse_sampling("inspirations=2");
  const auto insp = a.inspirations(0, *top, two);
  ASSERT_EQ(insp.size(), 2u);
  EXPECT_EQ(insp[0]->hash, "top2");  // best first, never the parent's own cell
  EXPECT_EQ(insp[1]->hash, "mid");
}

TEST(archive, ring_migration_offers_each_islands_best_to_the_next) {
  archive a(*parse_descriptors("complexity:10"), 3);
  a.put(0, make("a", 2.0, {5}));
  a.put(1, make("b", 3.0, {5}));
  a.put(2, make("c", 1.5, {15}));
  const auto m = a.migrants();
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].first, 1);
  EXPECT_EQ(m[0].second.hash, "a");
  EXPECT_EQ(m[2].first, 0);
  EXPECT_EQ(m[2].second.hash, "c");
  EXPECT_TRUE(archive(*parse_descriptors("complexity:10"), 1).migrants().empty());
}

class evolve_env : public ::testing::Test {
 protected:
  void SetUp() override {
    auto t = load_task(fs::path(LATHE_SOURCE_DIR) / "tasks/layernorm");
    ASSERT_TRUE(t) << t.error().message;
    t_ = std::move(*t);
    auto k = load_bundle(fs::path(LATHE_SOURCE_DIR) / "tasks/layernorm/kernels/naive");
    if (!k) k = load_bundle(fs::path(LATHE_SOURCE_DIR) / "tasks/layernorm/kernels/naive.cpp");
    ASSERT_TRUE(k) << k.error().message;
    naive_ = std::move(*k);
  }
  evolve_options options() const {
    evolve_options o;
    o.generations = 3;
    o.islands = 2;
    o.population = 2;
    o.children = 2;
    o.migrate_every = 1;
    o.descriptors = *parse_descriptors("features:1,2,3");
    o.target_text = "x86-64-v3 (scripted)";
    o.proposer_label = "rules";
    o.seed = 11;
    return o;
  }
  result<evolve_result> run(store& db, lineages::verifier& v, const evolve_options& o, const budget& b = {}) {
    agent::rules::rules_proposer p;
    llm::ledger ledger(llm::limits{b, std::nullopt});
    return evolve(t_, naive_, naive_, v, p, db, ledger, o);
  }
  test::temp_dir dir_;
  task t_;
  kernel_bundle naive_;
};

TEST_F(evolve_env, elites_are_unique_per_cell_and_a_contest_is_won_only_by_the_margin) {
  auto db = store::open(dir_.path() / "a.db");
  ASSERT_TRUE(db);
  scripted_verifier v;
  auto res = run(*db, v, options());
  ASSERT_TRUE(res) << res.error().message;
  EXPECT_GT(res->children.size(), 8u);
  for (const auto& c : res->children) {
    if (c.placement == placement::contest) {
      ASSERT_TRUE(c.contest_ratio) << c.kernel;
      EXPECT_EQ(c.placed, *c.contest_ratio > 1.05) << "contest ratio " << *c.contest_ratio;
    }
    if (c.placement == placement::kept || c.placement == placement::failed) {
      EXPECT_FALSE(c.placed);
    }
    if (c.placement == placement::new_cell) {
      EXPECT_TRUE(c.placed);
    }
  }
  const json summary = json::parse(res->r.summary);
  // Every failed child is counted once under its reason, and nothing else is.
  std::map<std::string, int> reasons;
  for (const auto& c : res->children)
    if (c.placement == placement::failed)
      ++reasons[c.kernel.empty() ? "proposer:" + c.failure.substr(0, c.failure.find(':'))
                                 : "gate:" + std::string(outcome_text(c.outcome))];
  using counts = std::map<std::string, int>;
  EXPECT_EQ(summary["failures"].get<counts>(), reasons);
  int counted = 0;
  for (const auto& [why, n] : summary["failures"].items()) {
    EXPECT_TRUE(why.starts_with("proposer:") || why.starts_with("gate:")) << why;
    EXPECT_NE(why, "gate:ok") << "a correct child is no failure";
    counted += n.get<int>();
  }
  EXPECT_EQ(counted, summary["failed"].get<int>());
  std::set<std::pair<int, int64_t>> cells;
  for (const auto& e : summary["archive"])
    EXPECT_TRUE(cells.insert({e["island"].get<int>(), e["cell"].get<int64_t>()}).second) << e.dump();
  EXPECT_EQ(res->best_per_generation.size(), 3u);
  for (size_t g = 1; g < res->best_per_generation.size(); ++g)
    EXPECT_GE(res->best_per_generation[g], res->best_per_generation[g - 1]);  // elites only improve
  ASSERT_FALSE(res->best.empty());
  EXPECT_NE(res->best, naive_.hash);  // the rule engine's mutations found something faster
  // Each child's prompt carried its parent's execution feedback: outcome, speedup, timing.
  int with_feedback = 0;
  for (const auto& c : res->children)
    if (c.kind == child_kind::child) {
      EXPECT_NE(c.prompt_context.find("The parent's last evaluation"), std::string::npos);
      with_feedback += c.prompt_context.find("timing and resources: median") != std::string::npos;
    }
  EXPECT_GT(with_feedback, 0);
}

TEST_F(evolve_env, a_child_that_loses_the_re_measure_never_replaces_the_elite) {
  auto db = store::open(dir_.path() / "b.db");
  ASSERT_TRUE(db);
  scripted_verifier v;
  // Against the baseline a child reads what its features say; against an incumbent (the
  // contest's re-measure) at 0.3 of that: no child clears the 5% margin there.
  v.away_for = "evolve contest";
  v.away = 0.3;
  evolve_options o = options();
  o.descriptors = *parse_descriptors("complexity:100000");  // one cell: every better child contests
  o.islands = 1;
  o.migrate_every = 0;
  auto res = run(*db, v, o);
  ASSERT_TRUE(res) << res.error().message;
  int contests = 0;
  for (const auto& c : res->children)
    if (c.placement == placement::contest) {
      ++contests;
      EXPECT_FALSE(c.placed) << *c.contest_ratio;
    }
  EXPECT_GT(contests, 0);  // faster children came, and each one lost its re-measure
  const json summary = json::parse(res->r.summary);
  ASSERT_EQ(summary["archive"].size(), 1u);
  EXPECT_EQ(summary["archive"][0]["kernel"], naive_.hash);  // the incumbent stayed
}

TEST_F(evolve_env, migration_moves_an_elite_to_the_next_island) {
  auto db = store::open(dir_.path() / "c.db");
  ASSERT_TRUE(db);
  scripted_verifier v;
  auto res = run(*db, v, options());
  ASSERT_TRUE(res) << res.error().message;
  int migrants = 0;
  for (const auto& c : res->children)
    if (c.kind == child_kind::migrant) {
      ++migrants;
      EXPECT_FALSE(c.kernel.empty());
    }
  EXPECT_EQ(migrants, 3 * 2);  // every generation, each of the two islands sends its best
}

TEST_F(evolve_env, a_resumed_run_repeats_no_child_and_ends_like_an_uninterrupted_one) {
  auto db = store::open(dir_.path() / "d.db");
  ASSERT_TRUE(db);
  scripted_verifier whole;
  auto full = run(*db, whole, options());
  ASSERT_TRUE(full) << full.error().message;
  // The same run cut short by its budget (children: steps), then resumed with more.
  auto db2 = store::open(dir_.path() / "e.db");
  ASSERT_TRUE(db2);
  scripted_verifier first;
  evolve_options o = options();
  o.run_id = "evolve-test-resume";
  budget small;
  small.steps = 4;
  auto cut = run(*db2, first, o, small);
  ASSERT_TRUE(cut) << cut.error().message;
  EXPECT_LT(cut->children.size(), full->children.size());
  scripted_verifier second;
  evolve_options again = options();
  again.resume_run = "evolve-test-resume";
  auto resumed = run(*db2, second, again);
  ASSERT_TRUE(resumed) << resumed.error().message;
  EXPECT_TRUE(resumed->resumed);
  ASSERT_EQ(resumed->children.size(), full->children.size());
  for (size_t i = 0; i < full->children.size(); ++i) {
    EXPECT_EQ(resumed->children[i].kernel, full->children[i].kernel) << i;
    EXPECT_EQ(resumed->children[i].placement, full->children[i].placement) << i;
  }
  EXPECT_EQ(resumed->best, full->best);
  // Nothing the first part decided was asked of the gate again.
  EXPECT_EQ(first.calls.size() + second.calls.size(), whole.calls.size());
}

// Without a start kernel, the initial population is the mock model's translations of the
// reference (through the LLM proposer, metered); mutations follow; every child is a text edit the
// scripted gate judged. Deterministic for a seed: two runs make the same children.
TEST_F(evolve_env, the_mock_model_translates_the_reference_then_evolves) {
  auto prompts = agent::prompt_library::load(fs::path(LATHE_SOURCE_DIR) / "prompts");
  ASSERT_TRUE(prompts) << prompts.error().message;
  auto once = [&](const std::string& name) -> result<evolve_result> {
    llm::command_config cc;
    cc.name = "mock";
    cc.argv = {LATHE_MOCK_MODEL, "--seed", "5"};
    cc.timeout_seconds = 60;
    llm::command_provider model(cc);
    agent::llm_proposer p(model, *prompts);
    auto db = store::open(dir_.path() / name);
    EXPECT_TRUE(db);
    scripted_verifier v;
    evolve_options o = options();
    o.generations = 2;
    std::ifstream ref(fs::path(LATHE_SOURCE_DIR) / "tasks/layernorm" / t_.reference);
    o.reference_source.assign(std::istreambuf_iterator<char>(ref), {});
    o.proposer_label = "llm:command/lathe-mock-model";
    llm::ledger ledger(llm::limits{budget{}, std::nullopt});
    return evolve(t_, kernel_bundle{}, naive_, v, p, *db, ledger, o);
  };
  auto a = once("mock-a.db");
  ASSERT_TRUE(a) << a.error().message;
  int translations = 0, mutations = 0;
  for (const auto& c : a->children) {
    translations += c.kind == child_kind::translation;
    mutations += c.kind == child_kind::child;
    if (c.kind == child_kind::translation) {
      EXPECT_TRUE(c.parent.empty());
    }
    if (!c.kernel.empty() && c.kind != child_kind::migrant) {
      EXPECT_NE(to_string(c.prov).find("mock"), std::string::npos) << to_string(c.prov);
    }
  }
  EXPECT_EQ(translations, 2 * 2);  // population 2 on each of 2 islands
  EXPECT_EQ(mutations, 2 * 2 * 2);
  EXPECT_GT(a->archive_size, 0u);
  auto b = once("mock-b.db");
  ASSERT_TRUE(b) << b.error().message;
  ASSERT_EQ(b->children.size(), a->children.size());
  for (size_t i = 0; i < a->children.size(); ++i) EXPECT_EQ(b->children[i].kernel, a->children[i].kernel) << i;
}

// --in-flight: a batch's children are gated at the same time (the scripted gate counts the calls
// in progress), the archive keeps its invariants, and a resumed batched run replays to the same
// children.
// A proposal: the parent with one more comment line (a new kernel that computes the same).
agent::proposal commented(const kernel_bundle& parent, const std::string& line, const char* label) {
  agent::proposal p;
  p.kernel = parent;
  for (auto& [path, text] : p.kernel.sources) text += "// " + line + "\n";
  p.kernel.hash = bundle_hash(p.kernel);
  p.action = "comment";
  p.locus = "function";
  p.prov = {"rules", label, true};
  return p;
}

// Every mutation a new kernel: the parent with one more comment line (so every batch has work).
class distinct : public test::delegating {
 public:
  using delegating::delegating;
  int n = 0;
  agent::op_result<agent::proposal> mutate(const agent::mutate_request& r) override {
    return commented(r.parent, "variant " + std::to_string(++n), "test:distinct");
  }
};

TEST_F(evolve_env, batches_gate_their_children_together_and_resume_alike) {
  auto db = store::open(dir_.path() / "f.db");
  ASSERT_TRUE(db);
  scripted_verifier v;
  v.probe_concurrency = true;
  evolve_options o = options();
  o.children = 4;
  o.in_flight = 4;
  o.run_id = "evolve-batched";
  agent::rules::rules_proposer inner;
  auto batched = [&](lathe::store& d, lineages::verifier& vv, const evolve_options& oo) {
    llm::ledger ledger(llm::limits{budget{}, std::nullopt});
    distinct fresh(inner);
    return evolve(t_, naive_, naive_, vv, fresh, d, ledger, oo);
  };
  auto full = batched(*db, v, o);
  ASSERT_TRUE(full) << full.error().message;
  EXPECT_GT(v.max_active.load(), 1);  // evaluations overlapped
  for (const auto& c : full->children)
    if (c.placement == placement::contest) {
      EXPECT_EQ(c.placed, c.contest_ratio && *c.contest_ratio > 1.05);
    }
  const json summary = json::parse(full->r.summary);
  std::set<std::pair<int, int64_t>> cells;
  for (const auto& e : summary["archive"]) EXPECT_TRUE(cells.insert({e["island"].get<int>(), e["cell"].get<int64_t>()}).second);
  // Resumed after it finished: the same children, no gate call.
  scripted_verifier again_v;
  evolve_options again = options();
  again.children = 4;
  again.in_flight = 4;
  again.resume_run = "evolve-batched";
  auto again_r = batched(*db, again_v, again);
  ASSERT_TRUE(again_r) << again_r.error().message;
  ASSERT_EQ(again_r->children.size(), full->children.size());
  for (size_t i = 0; i < full->children.size(); ++i) EXPECT_EQ(again_r->children[i].kernel, full->children[i].kernel);
  EXPECT_TRUE(again_v.calls.empty());
  // A resume with another --in-flight is refused: the batches decide the sampling.
  evolve_options other = again;
  other.in_flight = 2;
  EXPECT_FALSE(batched(*db, again_v, other));
}

// A proposer whose answer is a function of its request alone (the parent, the inspirations and
// the direction hashed into a comment line); each call lasts 20 ms and the calls in progress at
// once are counted. `concurrent` says whether evolve may ask it from several threads.
class stateless : public test::delegating {
 public:
  stateless(agent::proposer& inner, bool concurrent) : delegating(inner), concurrent_(concurrent) {}
  bool concurrent() const override { return concurrent_; }
  std::atomic<int> active{0}, max_active{0};
  agent::op_result<agent::proposal> mutate(const agent::mutate_request& r) override {
    const int now = ++active;
    int seen = max_active.load();
    while (now > seen && !max_active.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    --active;
    std::string key = r.parent.hash + r.direction;
    for (const auto& i : r.inspirations) key += i.hash;
    return commented(r.parent, "from " + std::to_string(std::hash<std::string>{}(key)), "test:stateless");
  }

 private:
  bool concurrent_;
};

// A batch's mutate requests are asked at the same time when the proposer takes concurrent calls,
// and the run is the one it would be with the calls made one by one.
TEST_F(evolve_env, a_batch_asks_its_proposals_together_and_ends_like_one_by_one) {
  agent::rules::rules_proposer inner;
  auto run = [&](bool concurrent, const std::string& id, int* max_active) {
    auto db = store::open(dir_.path() / (id + ".db"));
    EXPECT_TRUE(db);
    scripted_verifier v;
    evolve_options o = options();
    o.children = 4;
    o.in_flight = 4;
    o.run_id = id;
    llm::ledger ledger(llm::limits{budget{}, std::nullopt});
    stateless p(inner, concurrent);
    auto r = evolve(t_, naive_, naive_, v, p, *db, ledger, o);
    EXPECT_TRUE(r) << r.error().message;
    *max_active = p.max_active.load();
    std::vector<std::string> kernels;
    for (const auto& c : r->children) kernels.push_back(c.kernel + " " + to_string(c.placement) + " " + std::to_string(c.score));
    return kernels;
  };
  int together = 0, alone = 0;
  const auto a = run(true, "evolve-together", &together);
  const auto b = run(false, "evolve-alone", &alone);
  EXPECT_GT(together, 1);
  EXPECT_EQ(alone, 1);
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, b);
}

// A proposer call the budget refuses (a model call's worst-case time would pass the limit) ends
// the run: it is not recorded as a failed child, and the run does not go on asking.
class refused_after : public test::delegating {
 public:
  refused_after(agent::proposer& inner, int limit) : delegating(inner), limit_(limit) {}
  int calls = 0;
  agent::op_result<agent::proposal> mutate(const agent::mutate_request& r) override {
    if (++calls > limit_)
      return tl::unexpected(agent::failure{agent::failure_kind::budget, "budget: seconds: limit 60 s", 0});
    return commented(r.parent, "call " + std::to_string(calls), "test:refused_after");
  }

 private:
  int limit_;
};

TEST_F(evolve_env, a_proposer_call_the_budget_refuses_ends_the_run) {
  auto db = store::open(dir_.path() / "b.db");
  ASSERT_TRUE(db);
  scripted_verifier v;
  evolve_options o = options();
  o.children = 4;
  o.run_id = "evolve-refused";
  agent::rules::rules_proposer inner;
  refused_after p(inner, 3);
  llm::ledger ledger(llm::limits{budget{}, std::nullopt});
  auto r = evolve(t_, naive_, naive_, v, p, *db, ledger, o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(p.calls, 4);  // three answers, then the refusal, then nothing more
  EXPECT_EQ(r->children.size(), 3u);
  for (const auto& c : r->children) EXPECT_EQ(c.failure.find("budget"), std::string::npos) << c.failure;
  const json summary = json::parse(r->r.summary);
  EXPECT_NE(summary.value("stopped", "").find("budget"), std::string::npos) << summary.dump();
}

// The gate's cascade: with a screen, each child is first timed by it against the baseline, and
// only the start and the contests for elites' cells by the main verifier. Two verifiers that
// agree make the same run as one.
TEST_F(evolve_env, children_are_screened_and_contests_timed_by_the_main_verifier) {
  auto db = store::open(dir_.path() / "s.db");
  ASSERT_TRUE(db);
  scripted_verifier full, quick, alone;
  const auto one_cell = [&] {
    evolve_options x = options();
    x.descriptors = *parse_descriptors("complexity:100000");  // one cell: every better child contests
    x.islands = 1;
    x.migrate_every = 0;
    return x;
  };
  evolve_options o = one_cell();
  o.run_id = "evolve-screened";
  o.screen = &quick;
  o.screen_timing = child_timing::quick;
  auto res = run(*db, full, o);
  ASSERT_TRUE(res) << res.error().message;
  std::set<std::string> contested;
  for (const auto& c : res->children)
    if (c.placement == placement::contest) contested.insert(c.kernel);
  ASSERT_FALSE(contested.empty()) << "the run must contest a cell to show the split";
  EXPECT_GT(quick.timed_calls(), 0);
  for (const auto& c : quick.calls) {
    EXPECT_EQ(c.baseline, naive_.hash);  // a child against the baseline
    EXPECT_NE(c.candidate, naive_.hash);  // never the start
  }
  int start = 0;
  for (const auto& c : full.calls) {
    if (c.candidate == naive_.hash && c.baseline == naive_.hash) ++start;
    else EXPECT_TRUE(contested.count(c.candidate)) << c.candidate << " timed in full, not contested";
  }
  EXPECT_EQ(start, 1);
  EXPECT_GT(full.timed_calls(), 1);
  EXPECT_EQ(res->evaluations, quick.timed_calls() + full.timed_calls());
  EXPECT_EQ(json::parse(res->r.summary)["options"]["child_timing"], "quick");

  evolve_options one = one_cell();
  one.run_id = "evolve-one-verifier";
  auto same = run(*db, alone, one);
  ASSERT_TRUE(same) << same.error().message;
  ASSERT_EQ(same->children.size(), res->children.size());
  for (size_t i = 0; i < res->children.size(); ++i) {
    EXPECT_EQ(same->children[i].kernel, res->children[i].kernel) << i;
    EXPECT_EQ(same->children[i].placement, res->children[i].placement) << i;
  }
  EXPECT_EQ(same->best, res->best);
}

// Why children failed, in the summary: a proposer that refuses every third call and writes a
// wrong kernel every third answer.
class failing_sometimes : public test::delegating {
 public:
  explicit failing_sometimes(agent::proposer& inner) : delegating(inner) {}
  int calls = 0;
  agent::op_result<agent::proposal> mutate(const agent::mutate_request& r) override {
    const int n = ++calls;
    if (n % 3 == 0)
      return tl::unexpected(agent::failure{agent::failure_kind::refused, "test: no idea", 0});
    return commented(r.parent, (n % 3 == 1 ? "LATHE_BROKEN " : "variant ") + std::to_string(n),
                     "test:failing_sometimes");
  }
};

TEST_F(evolve_env, the_summary_counts_why_children_failed) {
  auto db = store::open(dir_.path() / "w.db");
  ASSERT_TRUE(db);
  scripted_verifier v;
  evolve_options o = options();
  o.run_id = "evolve-failing";
  agent::rules::rules_proposer inner;
  failing_sometimes p(inner);
  llm::ledger ledger(llm::limits{budget{}, std::nullopt});
  auto r = evolve(t_, naive_, naive_, v, p, *db, ledger, o);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_GE(p.calls, 6);
  const json summary = json::parse(r->r.summary);
  const std::map<std::string, int> expected = {{"gate:wrong_result", (p.calls + 2) / 3},
                                               {"proposer:refused", p.calls / 3}};
  using counts = std::map<std::string, int>;
  EXPECT_EQ(summary["failures"].get<counts>(), expected) << summary.dump();
  EXPECT_EQ(summary["failed"].get<int>(), (p.calls + 2) / 3 + p.calls / 3);
  EXPECT_EQ(summary["duplicates"].get<int>(), 0);
}

// ---- the training export, each filter on a constructed case ----

kernel_bundle src(const std::string& text) {
  kernel_bundle k;
  k.sources["k.cpp"] = text;
  k.hash = std::to_string(std::hash<std::string>{}(text));
  return k;
}

step_source step(const kernel_bundle* parent, const kernel_bundle* child, std::optional<double> sp,
                 std::optional<double> parent_sp) {
  step_source s;
  s.run = "evolve-x";
  s.task_text = "task";
  s.parent = parent;
  s.kernel = child;
  s.child.kind = child_kind::child;
  s.child.outcome = outcome::ok;
  s.child.kernel = child ? child->hash : "";
  s.child.speedup = sp;
  s.child.parent_speedup = parent_sp;
  return s;
}

TEST(training_export, each_filter_on_a_constructed_case) {
  const kernel_bundle parent = src("int f() {\n  return 1;\n}\n");
  const kernel_bundle child = src("int f() {\n  return 2;\n}\n");
  const kernel_bundle insp = src("int g() {\n  int x = 0;\n  for (int i = 0; i < 9; ++i) x += i;\n  return x;\n}\n");
  const kernel_bundle copy = insp;  // the child copies the inspiration verbatim
  export_options o;
  // Faster than its parent (1.5 / 1.2 = 1.25): kept; at epsilon 0.3, not faster enough.
  auto kept = step(&parent, &child, 1.5, 1.2);
  EXPECT_FALSE(judge(kept, o));
  o.epsilon = 0.3;
  EXPECT_EQ(judge(kept, o), drop_reason::not_faster);
  o.epsilon = 0;
  // A contest's paired ratio wins over the ratio of the speedups.
  kept.child.contest_ratio = 0.99;
  EXPECT_EQ(judge(kept, o), drop_reason::not_faster);
  kept.child.contest_ratio.reset();
  // Failed children and migrations are no samples.
  auto bad = step(&parent, &child, std::nullopt, 1.2);
  bad.child.outcome = outcome::wrong_result;
  EXPECT_EQ(judge(bad, o), drop_reason::failed);
  auto mig = kept;
  mig.child.kind = child_kind::migrant;
  EXPECT_EQ(judge(mig, o), drop_reason::migrant);
  // Translations are kept when correct, whatever their speed.
  auto tr = step(nullptr, &child, 0.5, std::nullopt);
  tr.child.kind = child_kind::translation;
  EXPECT_FALSE(judge(tr, o));
  // The leakage filter: a child that copies an inspiration shown in its prompt.
  auto leak = step(&parent, &copy, 1.5, 1.2);
  leak.inspirations = {&insp};
  EXPECT_EQ(judge(leak, o), drop_reason::leaked);
  EXPECT_DOUBLE_EQ(source_similarity(copy, insp), 1.0);
  auto unrelated = step(&parent, &child, 1.5, 1.2);
  unrelated.inspirations = {&insp};
  EXPECT_FALSE(judge(unrelated, o));  // shown, but not copied
  // Best steps: the parent must already have a speedup, and the child must leave room.
  o.best_steps = true;
  auto first_step = step(&parent, &child, 1.3, 1.0);  // the parent had none
  first_step.run_best_speedup = 3.0;
  EXPECT_EQ(judge(first_step, o), drop_reason::not_best_step);
  auto last_step = step(&parent, &child, 3.0, 1.5);  // it is the run's best: no room left
  last_step.run_best_speedup = 3.0;
  EXPECT_EQ(judge(last_step, o), drop_reason::not_best_step);
  auto middle = step(&parent, &child, 2.0, 1.5);
  middle.run_best_speedup = 3.0;
  EXPECT_FALSE(judge(middle, o));
  o.best_steps = false;
  // The context-length limit.
  o.max_chars = 20;
  EXPECT_EQ(judge(kept, o), drop_reason::too_long);
  o.max_chars = 0;
  // The samples: chat messages, the reward, provenance with the training grade.
  kept.training_grade = false;
  const auto res = export_steps({kept, bad, leak, tr}, o);
  EXPECT_EQ(res.steps, 4);
  ASSERT_EQ(res.samples.size(), 2u);
  EXPECT_EQ(res.dropped.at("failed"), 1);
  EXPECT_EQ(res.dropped.at("leaked"), 1);
  const auto& s = res.samples[0];
  ASSERT_EQ(s["messages"].size(), 3u);
  EXPECT_EQ(s["messages"][2]["role"], "assistant");
  EXPECT_NE(s["messages"][2]["content"].get<std::string>().find("return 2;"), std::string::npos);
  EXPECT_NE(s["messages"][1]["content"].get<std::string>().find("return 1;"), std::string::npos);  // the parent
  EXPECT_NEAR(s["reward"].get<double>(), 1.25, 1e-12);
  EXPECT_FALSE(s["provenance"]["training_grade"].get<bool>());
  EXPECT_EQ(res.samples[1]["kind"], "translation");
  EXPECT_TRUE(training_grade("llm:openai/gpt-4.1"));
  EXPECT_FALSE(training_grade("rules:catalog"));
  EXPECT_FALSE(training_grade("llm:command/lathe-mock-model"));
  EXPECT_FALSE(training_grade("replay:cassette.jsonl"));
  // Byte-identical samples (the same prompt and answer: a child found twice) are kept once.
  const auto twice = export_steps({kept, kept, tr}, o);
  EXPECT_EQ(twice.samples.size(), 2u);
  EXPECT_EQ(twice.dropped.at("duplicate"), 1);
}

}  // namespace
}  // namespace lathe::search_test
