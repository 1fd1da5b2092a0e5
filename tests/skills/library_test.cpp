// Induction and admission on real rule-engine steps (skills/induce.h, skills/admit.h): lineages of
// the gemm and conv2d CPU experts walked backward by the rule engine through the real gate, cards
// induced from them, the cards tried on held-out tasks through the real gate. Timing on a 2-core
// VM is noisy: verdicts are asserted only where the effect is large (OpenMP on 2 cores, ~1.6-1.9x
// on the held-out naive kernels), never numbers.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/text.h"
#include "skills/admit.h"
#include "skills/induce.h"
#include "skills/retrieve.h"
#include "skills_env.h"

using namespace lathe;
using namespace lathe::skills;
using lathe::testing::skills_env;

namespace {

struct built_library {
  std::vector<lineage> lineages;
  induction result;
};

// Built once per process: gemm without OpenMP, then without __restrict__; conv2d without OpenMP.
const built_library& library() {
  static const built_library b = [] {
    built_library x;
    skills_env& env = skills_env::get();
    x.lineages.push_back(lathe::testing::rule_lineage("gemm", {"omp_parallel", "restrict"}, "run-gemm"));
    x.lineages.push_back(lathe::testing::rule_lineage("conv2d", {"omp_parallel"}, "run-conv2d"));
    for (const auto& l : x.lineages) {
      for (size_t k = 0; k < l.kernels.size(); ++k) {
        std::string fs;
        for (const auto& f : l.features[k]) fs += " " + f.name + "@" + f.locus;
        std::printf("%s K%zu %s:%s\n", l.task.c_str(), k, l.kernels[k].substr(0, 8).c_str(), fs.c_str());
      }
      for (const auto& s : l.steps)
        std::printf("  step %s locus %s speedup %.3f forward %s (%s)\n", s.action.c_str(), s.locus.c_str(),
                    s.speedup.value_or(0), to_string(s.forward.status), s.forward.reason.c_str());
    }
    agent::rules::rules_proposer p;
    induce_options o;
    o.tasks = {env.load("gemm"), env.load("conv2d")};
    auto r = induce_report(x.lineages, *env.db, p, o);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    if (r) x.result = *r;
    for (const auto& c : x.result.cards)
      std::printf("card %s %s provides [%s] ratio %.3f sources %zu\n", c.id.c_str(), c.name.c_str(),
                  join(c.provides_features, ",").c_str(), c.declared_ratio.value_or(0), c.sources.size());
    for (const auto& s : x.result.skipped) std::printf("skipped %s: %s\n", s.key.c_str(), s.reason.c_str());
    return x;
  }();
  return b;
}

const skill_card* card_providing(const std::string& feature) {
  for (const auto& c : library().result.cards)
    if (c.provides_features == std::vector<std::string>{feature}) return &c;
  return nullptr;
}

// The step a card source names ("<lineage id>#<step>") and its lineage.
std::pair<const lineage*, size_t> step_of(const std::string& source) {
  const std::string id = source.substr(0, source.rfind('#'));
  const size_t i = std::stoul(source.substr(source.rfind('#') + 1));
  for (const auto& l : library().lineages)
    if (l.id == id) return {&l, i};
  return {nullptr, 0};
}

// A lineage step the gate stayed too noisy to decide (the machine's load, not the code): the test
// skips with the gate's reason instead of failing (a test that times kernels must not fail
// because the machine is loaded).
#define SKIP_IF_UNDECIDED()                                                                  \
  do {                                                                                       \
    library();                                                                               \
    if (!skills_env::get().undecided.empty())                                                \
      GTEST_SKIP() << "the gate stayed unstable on this machine (" << skills_env::get().undecided \
                   << "); the lineage needs a decided step";                                 \
  } while (0)

std::set<std::string> names(const std::vector<feature>& fs) {
  std::set<std::string> out;
  for (const auto& f : fs) out.insert(f.name);
  return out;
}

}  // namespace

TEST(skills_induce, rule_steps_of_cpu_experts_give_cards_with_every_field) {
  SKIP_IF_UNDECIDED();
  const built_library& b = library();
  ASSERT_EQ(b.lineages.size(), 2u);
  ASSERT_EQ(b.lineages[0].steps.size(), 2u);
  ASSERT_FALSE(b.result.cards.empty());
  EXPECT_EQ(b.result.proposer_calls, int32_t(b.result.cards.size() + b.result.skipped.size()));
  skills_env& env = skills_env::get();
  std::set<std::string> seen_names;
  for (const auto& c : b.result.cards) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.id.size(), 16u);
    EXPECT_FALSE(c.name.empty());
    EXPECT_LE(c.name.size(), 64u);
    EXPECT_EQ(c.name, kebab(c.name));
    EXPECT_TRUE(seen_names.insert(c.name).second);
    EXPECT_FALSE(c.intent.empty());
    EXPECT_FALSE(c.anchor.empty());
    EXPECT_FALSE(c.action.empty());
    EXPECT_TRUE(c.op == "gemm" || c.op == "conv2d") << c.op;
    EXPECT_TRUE(c.carriers.count("rules"));    // the rule invocation (replayable)
    EXPECT_TRUE(c.carriers.count("cpp/cpu"));  // the text diff (a hint for a model)
    EXPECT_FALSE(c.preconditions.empty());
    EXPECT_FALSE(c.effect.empty());
    EXPECT_FALSE(c.risk.empty());
    EXPECT_FALSE(c.scope.empty());
    ASSERT_TRUE(c.declared_ratio);
    EXPECT_FALSE(c.evidence.empty());
    for (int64_t id : c.evidence) EXPECT_TRUE(env.db->get_evaluation(id)) << "evidence #" << id;
    EXPECT_FALSE(c.verification_log.empty());
    EXPECT_FALSE(c.sources.empty());
    EXPECT_FALSE(c.source_tasks.empty());
    EXPECT_EQ(c.target, env.cfg.tgt.arch);
    EXPECT_FALSE(c.shape.empty());
    EXPECT_EQ(c.status, card_status::candidate);
    EXPECT_EQ(c.prov.kind, "rules");
    for (const auto& k : c.constraints) EXPECT_FALSE(grammar_problem(k)) << constraint_text(k);
    // The declared ratio is the geometric mean of the group's measured speedups.
    double logs = 0;
    for (const auto& src : c.sources) logs += std::log(*step_of(src).first->steps[step_of(src).second].speedup);
    EXPECT_NEAR(*c.declared_ratio, std::exp(logs / double(c.sources.size())), 1e-9);
    // Stored as returned.
    auto stored = env.db->get_card(c.id);
    ASSERT_TRUE(stored && *stored);
    EXPECT_EQ((*stored)->name, c.name);
    EXPECT_EQ((*stored)->evidence, c.evidence);
    // How its steps were re-derived forward is in the log.
    bool forward_noted = false;
    for (const auto& line : c.verification_log)
      forward_noted |= line.rfind("forward re-derivation: ", 0) == 0;
    EXPECT_TRUE(forward_noted);
  }
  // OpenMP was removed from both experts at function level: one card, two tasks, two steps.
  const skill_card* omp = card_providing("omp_parallel");
  ASSERT_TRUE(omp);
  EXPECT_EQ(omp->sources.size(), 2u);
  EXPECT_EQ(std::set<std::string>(omp->source_tasks.begin(), omp->source_tasks.end()),
            (std::set<std::string>{"gemm", "conv2d"}));
  EXPECT_EQ(omp->action, "omp_parallel");
  ASSERT_TRUE(card_providing("restrict"));

  // Induction again: the same ids and names, evidence not duplicated.
  agent::rules::rules_proposer p;
  induce_options o;
  o.tasks = {env.load("gemm"), env.load("conv2d")};
  auto again = induce(b.lineages, *env.db, p, o);
  ASSERT_TRUE(again) << again.error().message;
  ASSERT_EQ(again->size(), b.result.cards.size());
  for (size_t i = 0; i < again->size(); ++i) {
    EXPECT_EQ((*again)[i].id, b.result.cards[i].id);
    EXPECT_EQ((*again)[i].name, b.result.cards[i].name);
    EXPECT_EQ((*again)[i].sources.size(), b.result.cards[i].sources.size());
  }
}

TEST(skills_induce, contract_agrees_with_the_evidence) {
  SKIP_IF_UNDECIDED();
  for (const auto& c : library().result.cards) {
    SCOPED_TRACE(c.name);
    for (const auto& src : c.sources) {
      auto [l, i] = step_of(src);
      ASSERT_TRUE(l) << src;
      const auto before = names(l->features[i]), after = names(l->features[i + 1]);
      // provides: what every step adds.
      EXPECT_EQ(names(l->steps[i].added), std::set<std::string>(c.provides_features.begin(), c.provides_features.end()));
      for (const auto& f : c.provides_features) {
        EXPECT_FALSE(before.count(f)) << f;
        EXPECT_TRUE(after.count(f)) << f;
      }
      // requires: present before every step.
      for (const auto& f : c.requires_features) EXPECT_TRUE(before.count(f)) << f;
      // conflicts: never together with what the card provides, in any kernel of the lineage.
      for (const auto& f : c.conflicts_features)
        for (const auto& state : l->features) {
          const auto s = names(state);
          for (const auto& p : c.provides_features) EXPECT_FALSE(s.count(f) && s.count(p)) << f << " with " << p;
        }
    }
  }
  // Adding OpenMP needs nothing the kernels had, and replaced nothing.
  const skill_card* omp = card_providing("omp_parallel");
  ASSERT_TRUE(omp);
  EXPECT_TRUE(omp->requires_features.empty());
  EXPECT_TRUE(omp->conflicts_features.empty());
}

TEST(skills_admit, omp_card_admitted_restrict_card_refused_source_task_refused) {
  SKIP_IF_UNDECIDED();
  skills_env& env = skills_env::get();
  const skill_card* omp = card_providing("omp_parallel");
  const skill_card* restrict_card = card_providing("restrict");
  ASSERT_TRUE(omp && restrict_card);
  // The held-out tasks where OpenMP pays most first (compute-bound naive loops), then a source
  // task, which must be refused as ground.
  std::vector<task> heldout = {env.load("silu"), env.load("row_mean"), env.load("layernorm"),
                               env.load("transpose"), env.load("gemm")};
  agent::rules::rules_proposer p;
  admit_options o;
  o.tgt = env.cfg.tgt;
  auto a = admit({*omp, *restrict_card}, heldout, *env.verifier, p, *env.db, o);
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_EQ(a->cards.size(), 2u);
  for (const auto& ca : a->cards)
    for (const auto& t : ca.trials)
      std::printf("%s on %s: %s %s (%s)\n", ca.name.c_str(), t.task.c_str(), to_string(t.verdict),
                  t.ratio ? std::to_string(*t.ratio).c_str() : "-", t.reason.c_str());

  ASSERT_FALSE(a->refused.empty());
  EXPECT_EQ(a->refused[0].task, "gemm");
  EXPECT_NE(a->refused[0].reason.find("source"), std::string::npos) << a->refused[0].reason;

  // Whether OpenMP clears the gate's rule on the held-out tasks is the machine's to say: the
  // rule is that the ratio's interval clears 1 + margin (issue 43, step 10), and on the 2-core
  // VM the A/A margins reach 0.2-0.8 (a fresh-clone CI run under load reproduced it on
  // layernorm, x2.02, and not on silu, row_mean or transpose, x1.05-1.15 against margins of
  // 0.13-0.24; transpose read x1.62 [1.32, 1.99] against a margin of 0.595). What must hold is
  // the rule: every held-out task was tried through the gate, and the card is admitted exactly
  // when enough reproduced.
  auto check_rule = [&](const card_admission& ca) {
    ASSERT_FALSE(ca.trials.empty());
    int32_t reproduced = 0;
    for (const auto& t : ca.trials) {
      EXPECT_NE(t.task, "gemm");
      // Measured, or a comparison the gate stayed too noisy to decide (kept as gate_failed with
      // outcome unstable); never applied wrongly or refused as inapplicable.
      const bool measured = t.verdict == trial_verdict::reproduced || t.verdict == trial_verdict::not_reproduced;
      EXPECT_TRUE(measured || (t.verdict == trial_verdict::gate_failed && t.outcome == "unstable"))
          << t.task << ": " << to_string(t.verdict) << " (" << t.reason << ")";
      if (measured) {
        EXPECT_TRUE(t.ratio) << t.task;
      }
      EXPECT_FALSE(t.evaluations.empty()) << t.task;
      if (t.verdict == trial_verdict::reproduced) ++reproduced;
    }
    EXPECT_EQ(ca.reproduced, reproduced);
    if (reproduced >= o.min_tasks) {
      EXPECT_EQ(ca.status, card_status::replay_admitted) << ca.reason;
    } else {
      EXPECT_EQ(ca.status, card_status::refused) << ca.reason;
      EXPECT_NE(ca.reason.find("reproduced on " + std::to_string(reproduced) + " of the " +
                               std::to_string(o.min_tasks)),
                std::string::npos)
          << ca.reason;
      std::printf("NOTE: on this machine OpenMP reproduced on %d of the %d held-out tasks needed\n",
                  reproduced, o.min_tasks);
    }
  };

  const card_admission& ao = a->cards[0];
  // The experts' OpenMP is worth ~1.3-1.9x on an idle 2-core machine; with other processes on
  // the cores it measures ~1.0 (measured here: x0.94-1.07 at a load of 3), and a card that
  // declares no speedup is refused untried. That is the rule working, not the card failing:
  // say so instead of reporting a failure the machine caused.
  const bool measured_speedup = *omp->declared_ratio >= 1.05;
  if (!measured_speedup) {
    std::printf("NOTE: the lineages measured OpenMP at x%.3f (a loaded machine): the card is refused untried\n",
                *omp->declared_ratio);
    EXPECT_EQ(ao.status, card_status::refused);
    EXPECT_NE(ao.reason.find("no speedup"), std::string::npos) << ao.reason;
    EXPECT_TRUE(ao.trials.empty());
    // Admission itself is still tried: the same card as an idle machine measures it.
    skill_card idle = *omp;
    idle.id = "test-omp-idle";
    idle.name = "test-omp-idle";
    idle.declared_ratio = 1.8;
    ASSERT_TRUE(env.db->put_card(idle));
    auto again = admit({idle}, heldout, *env.verifier, p, *env.db, o);
    ASSERT_TRUE(again) << again.error().message;
    for (const auto& t : again->cards[0].trials)
      std::printf("%s on %s: %s %s (%s)\n", idle.name.c_str(), t.task.c_str(), to_string(t.verdict),
                  t.ratio ? std::to_string(*t.ratio).c_str() : "-", t.reason.c_str());
    check_rule(again->cards[0]);
  } else {
    check_rule(ao);
    if (ao.status == card_status::replay_admitted)
      EXPECT_NE(ao.reason.find("rule replay"), std::string::npos) << ao.reason;
  }
  for (const auto& t : ao.trials) {
    EXPECT_NE(t.task, "gemm");
    EXPECT_EQ(t.prov.kind, "rules");
    if (t.verdict == trial_verdict::reproduced) {
      ASSERT_FALSE(t.evaluations.empty());
      auto e = env.db->get_evaluation(t.evaluations.back());
      ASSERT_TRUE(e) << e.error().message;
      EXPECT_EQ(e->kernel_hash, t.kernel_after);
      EXPECT_EQ(e->baseline_hash, t.kernel_before);
      EXPECT_EQ(e->result, outcome::ok);
    }
    // Reproduced exactly when the gate decided the result faster (issue 43, step 10).
    if (t.verdict == trial_verdict::reproduced || t.verdict == trial_verdict::not_reproduced) {
      auto e = env.db->get_evaluation(t.evaluations.back());
      ASSERT_TRUE(e) << e.error().message;
      EXPECT_EQ(e->decision == decision::faster, t.verdict == trial_verdict::reproduced) << t.task << ": " << t.reason;
    }
  }

  const card_admission& ar = a->cards[1];
  EXPECT_EQ(ar.status, card_status::refused);
  EXPECT_FALSE(ar.reason.empty());
  EXPECT_LT(ar.reproduced, 2);

  // Every trial is in the card's verification log, with its provenance and evaluations.
  for (const auto& ca : a->cards) {
    auto stored = env.db->get_card(ca.card_id);
    ASSERT_TRUE(stored && *stored);
    EXPECT_EQ((*stored)->status, ca.status);
    EXPECT_EQ((*stored)->status_reason, ca.reason);
    ASSERT_EQ((*stored)->trials.size(), ca.trials.size());
    for (size_t i = 0; i < ca.trials.size(); ++i) {
      EXPECT_EQ((*stored)->trials[i].task, ca.trials[i].task);
      EXPECT_EQ((*stored)->trials[i].verdict, ca.trials[i].verdict);
      EXPECT_EQ((*stored)->trials[i].evaluations, ca.trials[i].evaluations);
      EXPECT_EQ(to_string((*stored)->trials[i].prov), to_string(ca.trials[i].prov));
      EXPECT_FALSE((*stored)->trials[i].created_at.empty());
    }
  }
  int64_t evals = 0;
  for (const auto& ca : a->cards)
    for (const auto& t : ca.trials) evals += int64_t(t.evaluations.size());
  EXPECT_EQ(a->cost.gate_evaluations, evals);
  EXPECT_GE(a->cost.proposer_calls, int64_t(ao.trials.size()));
  EXPECT_EQ(a->cost.model_calls, 0);
  EXPECT_GT(a->cost.seconds, 0);
  ASSERT_TRUE(a->rates.count("cpu"));
  EXPECT_EQ(a->rates.at("cpu").decided, 2);
  if (ao.status != card_status::replay_admitted) {
    EXPECT_EQ(a->rates.at("cpu").admitted, 0);
    return;  // the machine's noise left OpenMP unreproduced: nothing admitted to retrieve
  }
  EXPECT_EQ(a->rates.at("cpu").admitted, 1);
  EXPECT_DOUBLE_EQ(a->rates.at("cpu").rate(), 0.5);

  // The admitted card, found on gemm, is retrieved for a held-out operator; the refused one is not.
  auto cards = env.db->list_cards("");
  ASSERT_TRUE(cards);
  const task mean = env.load("row_mean");
  retrieve_query q;
  q.tgt = env.cfg.tgt;
  q.t = &mean;
  q.features = {};
  const retrieval r = retrieve(*cards, q, {.admitted_only = true});
  ASSERT_FALSE(r.ranked.empty());
  EXPECT_EQ(r.ranked.front().card.id, omp->id);
  EXPECT_EQ(r.ranked.front().score.rel, op_relation::other);  // gemm is no row reduction
}

TEST(skills_admit, own_lineage_kernels_inapplicable_cards_and_no_speedup_are_refused) {
  SKIP_IF_UNDECIDED();
  skills_env& env = skills_env::get();
  const skill_card* omp = card_providing("omp_parallel");
  ASSERT_TRUE(omp);
  agent::rules::rules_proposer p;
  admit_options o;
  o.tgt = env.cfg.tgt;

  // A task posing as held out whose start kernel is the gemm expert: a kernel of the card's own
  // lineage is no admission ground.
  // Clones of the OpenMP card with a declared effect of their own, so that what is tested here
  // does not hang on what the lineages measured on a possibly loaded machine.
  skill_card own = *omp;
  own.declared_ratio = 1.8;
  own.id = "test-own-lineage";
  own.name = "test-own-lineage";
  ASSERT_TRUE(env.db->put_card(own));
  task disguised = env.load("gemm");
  disguised.name = "gemm_disguised";
  disguised.role = task_role::heldout;
  o.start_kernel = "expert";
  auto a = admit({own}, {disguised}, *env.verifier, p, *env.db, o);
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_EQ(a->refused.size(), 1u);
  EXPECT_NE(a->refused[0].reason.find("own lineages"), std::string::npos) << a->refused[0].reason;
  EXPECT_TRUE(a->cards[0].trials.empty());
  EXPECT_EQ(a->cards[0].status, card_status::refused);
  EXPECT_EQ(a->cost.gate_evaluations, 0);

  // A card whose constraint the target fails: tried, logged as not applicable, refused.
  const std::string missing = "amx_fp16";
  ASSERT_FALSE(has_capability(env.cfg.tgt, missing));
  skill_card gated = *omp;
  gated.declared_ratio = 1.8;
  gated.id = "test-needs-" + missing;
  gated.name = "test-needs-amx";
  gated.constraints.push_back({"capability", missing});
  ASSERT_TRUE(env.db->put_card(gated));
  o.start_kernel.clear();
  a = admit({gated}, {env.load("silu"), env.load("row_mean")}, *env.verifier, p, *env.db, o);
  ASSERT_TRUE(a) << a.error().message;
  const card_admission& g = a->cards[0];
  EXPECT_EQ(g.status, card_status::refused);
  ASSERT_EQ(g.trials.size(), 2u);
  for (const auto& t : g.trials) {
    EXPECT_EQ(t.verdict, trial_verdict::not_applicable);
    EXPECT_NE(t.reason.find("capability=" + missing), std::string::npos) << t.reason;
    EXPECT_NE(t.reason.find(env.cfg.tgt.arch), std::string::npos) << t.reason;
  }
  EXPECT_NE(g.reason.find("0 of the 2"), std::string::npos) << g.reason;
  EXPECT_EQ(a->cost.gate_evaluations, 0);
  auto stored = env.db->get_card(gated.id);
  ASSERT_TRUE(stored && *stored);
  EXPECT_EQ((*stored)->trials.size(), 2u);

  // A card that declares no speedup has nothing to reproduce: refused without a trial.
  skill_card flat = *omp;
  flat.id = "test-no-speedup";
  flat.name = "test-no-speedup";
  flat.declared_ratio = 1.01;
  ASSERT_TRUE(env.db->put_card(flat));
  a = admit({flat}, {env.load("silu"), env.load("row_mean")}, *env.verifier, p, *env.db, o);
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->cards[0].status, card_status::refused);
  EXPECT_TRUE(a->cards[0].trials.empty());
  EXPECT_NE(a->cards[0].reason.find("no speedup"), std::string::npos) << a->cards[0].reason;
}
