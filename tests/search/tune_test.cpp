// `lathe tune`'s engine over a gate as a formula (no build, no timing): every strategy finds what
// the space and the budget allow, configurations that fail are kept out of the best, the cache
// replays a finished search without timing anything, and only a decided "faster" crowns.
#include "search/tune.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "spec/tune.h"

namespace lathe::search {
namespace {

// Time of a configuration: 1 ms * (BLOCK / 128 + 128 / BLOCK) * (1 + |ITEMS - 4| / 4), best at
// BLOCK = 128, ITEMS = 4; ITEMS = 16 computes a wrong result.
class formula_verifier final : public lineages::verifier {
 public:
  int checks = 0, comparisons = 0;
  std::set<std::string> compared;  // configured bundles' names
  double crown_ratio = 0;          // when set, the ratio of a comparison asked a second time
  static double millis(const kernel_bundle& k) {
    const double block = std::stod(k.manifest.defines.at("BLOCK")), items = std::stod(k.manifest.defines.at("ITEMS"));
    return (block / 128 + 128 / block) * (1 + std::abs(items - 4) / 4);
  }
  evaluation check(const task& t, const kernel_bundle& k, const kernel_bundle&, const provenance&) override {
    ++checks;
    evaluation e;
    e.task = t.name;
    e.kernel_hash = k.hash;
    e.id = 1000 + checks;
    return e;
  }
  evaluation compare(const task& t, const kernel_bundle& k, const kernel_bundle& b, const provenance&) override {
    ++comparisons;
    evaluation e;
    e.task = t.name;
    e.kernel_hash = k.hash;
    e.id = comparisons;
    if (k.manifest.defines.at("ITEMS") == "16") {
      e.result = outcome::wrong_result;
      e.message = "output 0 differs";
      return e;
    }
    const bool again = !compared.insert(k.name).second;
    paired_series s;
    s.ratio = again && crown_ratio > 0 ? crown_ratio : millis(b) / millis(k);
    s.ci_low = s.ratio * 0.98;
    s.ci_high = s.ratio * 1.02;
    e.paired = s;
    e.decision = s.ci_low > 1.05 ? decision::faster : s.ci_high < 1 / 1.05 ? decision::slower : decision::same;
    return e;
  }
  agent::rules::detections features(const task&, const kernel_bundle&) override { return {}; }
  result<std::filesystem::path> object(const task&, const kernel_bundle&) override {
    return fail(errc::unsupported, "nothing is built");
  }
};

kernel_bundle tunable_kernel() {
  kernel_bundle k;
  k.name = "naive";
  k.manifest.entry = "kernel.cpp";
  k.manifest.files = {"kernel.cpp"};
  k.sources["kernel.cpp"] = "// uses BLOCK and ITEMS\n";
  k.manifest.tune.params = {{"BLOCK", {256, 32, 64, 128, 512}}, {"ITEMS", {1, 2, 4, 8, 16}}};
  k.manifest.tune.constraints = {"BLOCK * ITEMS <= N"};
  k.manifest.tune.defaults = {{"BLOCK", 256}, {"ITEMS", 1}};
  return k;
}

task small_task() {
  task t;
  t.name = "tunable";
  t.shapes = {{"main", {{"N", 2048}}, true}};
  return t;
}

std::string label_of(const tune_result& r) { return config_label(r.winner); }

TEST(tune, exhaustive_measures_every_admitted_configuration_and_crowns_the_fastest) {
  formula_verifier v;
  auto r = tune(small_task(), tunable_kernel(), target{}, v, {}, nullptr, {});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  // 25 configurations; BLOCK * ITEMS <= 2048 refuses 256x16, 512x8 and 512x16.
  EXPECT_EQ(r->admitted, 22u);
  EXPECT_EQ(r->refused.size(), 3u);
  EXPECT_EQ(r->refused_count, 3u);
  EXPECT_EQ(r->points.size(), 22u);
  EXPECT_EQ(config_label(r->points[0].config), "BLOCK=256,ITEMS=1");  // the default first
  EXPECT_EQ(r->stop, "space exhausted");
  EXPECT_EQ(label_of(*r), "BLOCK=128,ITEMS=4");
  EXPECT_TRUE(r->improved);
  ASSERT_TRUE(r->crown.has_value());
  EXPECT_EQ(v.checks, 1);                         // the default, checked once
  EXPECT_EQ(v.comparisons, 21 + 1);               // every other one, and the crown
  size_t wrong = 0;
  for (const auto& p : r->points)
    if (p.result == outcome::wrong_result) {
      ++wrong;
      EXPECT_FALSE(p.speedup.has_value());
      EXPECT_EQ(p.message, "output 0 differs");
    }
  EXPECT_EQ(wrong, 3u);  // ITEMS = 16 with BLOCK 32, 64 and 128 (256 and 512 were refused)
}

TEST(tune, random_samples_without_repetition_within_the_evaluation_budget) {
  formula_verifier v;
  tune_options o;
  o.strategy = tune_strategy::random;
  o.max_evaluations = 8;
  o.seed = 7;
  auto r = tune(small_task(), tunable_kernel(), target{}, v, o, nullptr, {});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->points.size(), 8u);
  EXPECT_EQ(r->stop, "evaluation budget");
  std::set<std::string> seen;
  for (const auto& p : r->points) EXPECT_TRUE(seen.insert(config_label(p.config)).second);
  // The same seed, the same order; another seed, another.
  auto space = enumerate_configs(tunable_kernel().manifest.tune, small_task(), target{});
  ASSERT_TRUE(space.has_value());
  const auto a = tune_order(tune_strategy::random, space->configs, tunable_kernel().manifest.tune.defaults, 7, 0);
  const auto b = tune_order(tune_strategy::random, space->configs, tunable_kernel().manifest.tune.defaults, 7, 0);
  const auto c = tune_order(tune_strategy::random, space->configs, tunable_kernel().manifest.tune.defaults, 8, 0);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(a.size(), 22u);
  EXPECT_EQ(config_label(a[0]), "BLOCK=256,ITEMS=1");
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(config_label(a[i]), config_label(r->points[i].config));
}

TEST(tune, the_cache_replays_a_finished_search_without_timing_anything) {
  std::map<std::string, tune_point> stored;
  tune_cache cache{[&](const std::string& k) -> std::optional<tune_point> {
                     auto it = stored.find(k);
                     return it == stored.end() ? std::nullopt : std::optional<tune_point>(it->second);
                   },
                   [&](const std::string& k, const tune_point& p) { stored[k] = p; }};
  tune_options o;
  o.settings = "max_time=1";
  formula_verifier first;
  auto r1 = tune(small_task(), tunable_kernel(), target{}, first, o, &cache, {});
  ASSERT_TRUE(r1.has_value()) << r1.error().message;
  EXPECT_EQ(r1->timed, 21);
  EXPECT_EQ(stored.size(), 21u);

  formula_verifier second;
  auto r2 = tune(small_task(), tunable_kernel(), target{}, second, o, &cache, {});
  ASSERT_TRUE(r2.has_value()) << r2.error().message;
  EXPECT_EQ(r2->timed, 0);
  EXPECT_EQ(r2->replayed, 21);
  EXPECT_EQ(second.comparisons, 1);  // the crown alone: never replayed
  EXPECT_EQ(label_of(*r2), label_of(*r1));
  for (size_t i = 1; i < r2->points.size(); ++i) EXPECT_TRUE(r2->points[i].cached);

  // A simulation: the same search from the cache alone, no gate at all, no crown.
  formula_verifier none;
  o.simulate = true;
  o.strategy = tune_strategy::model;
  o.max_evaluations = 10;
  auto sim = tune(small_task(), tunable_kernel(), target{}, none, o, &cache, {});
  ASSERT_TRUE(sim.has_value()) << sim.error().message;
  EXPECT_EQ(none.checks + none.comparisons, 0);
  EXPECT_EQ(sim->replayed, 9);
  EXPECT_FALSE(sim->crown.has_value());
  o.settings = "never";  // nothing cached under these: a simulation cannot go on
  auto missing = tune(small_task(), tunable_kernel(), target{}, none, o, &cache, {});
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message.find("without --simulate first"), std::string::npos);
  o.simulate = false;
  o.strategy = tune_strategy::exhaustive;
  o.max_evaluations = 0;

  // An edited task (another shape): another identity, measured again.
  task edited = small_task();
  edited.shapes.push_back({"ragged", {{"N", 4096}}, false});
  EXPECT_NE(task_identity(edited), task_identity(small_task()));
  formula_verifier fourth;
  auto r4 = tune(edited, tunable_kernel(), target{}, fourth, o, &cache, {});
  ASSERT_TRUE(r4.has_value()) << r4.error().message;
  EXPECT_EQ(r4->replayed, 0);

  // Other gate settings: another key, timed again.
  o.settings = "max_time=3";
  formula_verifier third;
  auto r3 = tune(small_task(), tunable_kernel(), target{}, third, o, &cache, {});
  ASSERT_TRUE(r3.has_value());
  EXPECT_EQ(r3->timed, 21);
}

TEST(tune, a_best_the_fresh_series_does_not_decide_faster_leaves_the_default) {
  formula_verifier v;
  v.crown_ratio = 1.01;  // measured again, the best is no longer decided faster
  auto r = tune(small_task(), tunable_kernel(), target{}, v, {}, nullptr, {});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_TRUE(r->best.has_value());
  EXPECT_EQ(config_label(r->points[*r->best].config), "BLOCK=128,ITEMS=4");
  EXPECT_FALSE(r->improved);
  EXPECT_EQ(label_of(*r), "BLOCK=256,ITEMS=1");
}

TEST(tune, progress_counts_toward_the_plan) {
  formula_verifier v;
  tune_options o;
  o.max_evaluations = 5;
  std::vector<size_t> done;
  auto r = tune(small_task(), tunable_kernel(), target{}, v, o, nullptr, [&](const tune_progress& p) {
    done.push_back(p.done);
    EXPECT_EQ(p.planned, 5u);
    EXPECT_NE(p.point, nullptr);
  });
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(done, (std::vector<size_t>{2, 3, 4, 5}));
}

TEST(tune, halving_times_a_sample_quickly_and_the_best_third_in_full) {
  formula_verifier full, quick;
  tune_options o;
  o.strategy = tune_strategy::halving;
  o.quick = &quick;
  o.settings = "full";
  o.quick_settings = "quick";
  auto r = tune(small_task(), tunable_kernel(), target{}, full, o, nullptr, {});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(quick.comparisons, 21);      // every admitted configuration but the default
  EXPECT_EQ(full.comparisons, 7 + 1);    // the best third of those, and the crown
  EXPECT_EQ(r->points.size(), 1u + 21 + 7);
  size_t quick_points = 0;
  for (const auto& p : r->points) quick_points += p.quick ? 1 : 0;
  EXPECT_EQ(quick_points, 21u);
  ASSERT_TRUE(r->best.has_value());
  EXPECT_FALSE(r->points[*r->best].quick);  // a quick measurement never crowns
  EXPECT_EQ(label_of(*r), "BLOCK=128,ITEMS=4");

  // Within a budget: the first rung leaves room for its survivors.
  formula_verifier full2, quick2;
  o.quick = &quick2;
  o.max_evaluations = 9;
  auto b = tune(small_task(), tunable_kernel(), target{}, full2, o, nullptr, {});
  ASSERT_TRUE(b.has_value()) << b.error().message;
  EXPECT_EQ(quick2.comparisons, 6);
  EXPECT_EQ(full2.comparisons - (b->crown ? 1 : 0), 2);
  EXPECT_LE(b->points.size(), 9u);

  // A budget of one: the default alone, nothing timed quickly or in full.
  formula_verifier full3, quick3;
  o.quick = &quick3;
  o.max_evaluations = 1;
  auto one = tune(small_task(), tunable_kernel(), target{}, full3, o, nullptr, {});
  ASSERT_TRUE(one.has_value()) << one.error().message;
  EXPECT_EQ(one->points.size(), 1u);
  EXPECT_EQ(quick3.comparisons + full3.comparisons, 0);

  o.quick = nullptr;
  EXPECT_FALSE(tune(small_task(), tunable_kernel(), target{}, full, o, nullptr, {}).has_value());
}

// A larger space (8 x 8, every configuration admitted) where a budget of 12 is a fifth of it.
kernel_bundle wide_kernel() {
  kernel_bundle k = tunable_kernel();
  k.manifest.tune.params = {{"BLOCK", {8, 16, 32, 64, 128, 256, 512, 1024}}, {"ITEMS", {1, 2, 3, 4, 5, 6, 7, 8}}};
  k.manifest.tune.constraints = {};
  k.manifest.tune.defaults = {{"BLOCK", 8}, {"ITEMS", 1}};
  return k;
}

double best_fraction(tune_strategy s, uint64_t seed, std::set<std::string>* repeated = nullptr) {
  formula_verifier v;
  tune_options o;
  o.strategy = s;
  o.max_evaluations = 12;
  o.seed = seed;
  auto r = tune(small_task(), wide_kernel(), target{}, v, o, nullptr, {});
  EXPECT_TRUE(r.has_value());
  if (!r) return 0;
  std::set<std::string> seen;
  for (const auto& p : r->points)
    if (!seen.insert(config_label(p.config)).second && repeated) repeated->insert(config_label(p.config));
  EXPECT_EQ(r->points.size(), 12u);
  // The optimum's speedup over the default (8, 1): (8/128 + 128/8) * 1.75 / 2.
  const double optimum = (8.0 / 128 + 128.0 / 8) * 1.75 / 2;
  return r->best ? *r->points[*r->best].speedup / optimum : 0;
}

TEST(tune, the_model_finds_more_than_random_sampling_in_the_same_budget) {
  double model = 0, random = 0;
  std::set<std::string> repeated;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    model += best_fraction(tune_strategy::model, seed, &repeated) / 20;
    random += best_fraction(tune_strategy::random, seed) / 20;
  }
  EXPECT_TRUE(repeated.empty()) << *repeated.begin();  // never the same configuration twice
  EXPECT_GT(model, random) << "model " << model << ", random " << random;
  EXPECT_GT(model, 0.9) << "model " << model << ", random " << random;
}

TEST(tune, what_cannot_be_tuned_says_why) {
  formula_verifier v;
  kernel_bundle plain = tunable_kernel();
  plain.manifest.tune = {};
  EXPECT_NE(tune(small_task(), plain, target{}, v, {}, nullptr, {}).error().message.find("declares no tunables"),
            std::string::npos);
  task tiny = small_task();
  tiny.shapes[0].symbols["N"] = 64;  // the default 256 x 1 no longer fits
  EXPECT_NE(tune(tiny, tunable_kernel(), target{}, v, {}, nullptr, {}).error().message.find("default configuration"),
            std::string::npos);
}

}  // namespace
}  // namespace lathe::search
