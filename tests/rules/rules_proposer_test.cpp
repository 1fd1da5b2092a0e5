// The rule engine behind the proposer interface (agent/rules/rules_proposer.h): each operation on
// the shipped kernels, labelled rules:<rule>; its audit citations checked by the same
// verify_audit a model's get; a card's carrier replayed on another task's kernel; a backward step
// built and checked by the real gate (CPU, no timing: the checks decide). And the choice of a
// proposer (cli/proposer_choice.h): rules when no model is configured.
#include "agent/rules/rules_proposer.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/audit.h"
#include "cli/proposer_choice.h"
#include "spec/bundle.h"
#include "gate/gate.h"
#include "gate/host_target.h"
#include "spec/task_file.h"

namespace fs = std::filesystem;
using namespace lathe;
using namespace lathe::agent;
using namespace lathe::agent::rules;

namespace {

const fs::path kSrc = LATHE_SOURCE_DIR;

task load(const std::string& name) {
  auto t = load_task(kSrc / "tasks" / name);
  EXPECT_TRUE(t) << (t ? "" : t.error().message);
  return t ? *t : task{};
}

kernel_bundle bundle(const std::string& task_name, const std::string& kernel) {
  auto b = load_bundle(kSrc / "tasks" / task_name / "kernels" / kernel);
  EXPECT_TRUE(b) << (b ? "" : b.error().message);
  return b ? *b : kernel_bundle{};
}

// The kernel's source-detected features, as a lineage would hand them to the proposer.
std::vector<feature> features_of(const kernel_bundle& k) {
  std::vector<feature> out;
  for (const auto& d : detect_source(k)) out.push_back(d.what);
  return out;
}

bool source_has(const kernel_bundle& k, const std::string& name) {
  for (const auto& d : detect_source(k))
    if (d.what.name == name) return true;
  return false;
}

backward_request backward(const task& t, const kernel_bundle& k) {
  backward_request r;
  r.t = &t;
  r.kernel = k;
  r.features = features_of(k);
  return r;
}

std::string line_of(const kernel_bundle& k, const citation& c) {
  std::istringstream in(k.sources.at(c.file));
  std::string line;
  for (int32_t i = 0; i < c.first && std::getline(in, line); ++i) {
  }
  return line;
}

}  // namespace

TEST(rules_proposer, backward_removes_omp_parallel_from_the_softmax_expert) {
  const task t = load("softmax");
  const kernel_bundle k = bundle("softmax", "expert");
  rules_proposer p(options_for(t));
  backward_request r = backward(t, k);
  r.action_prior = {"omp_parallel"};
  auto got = p.propose_backward(r);
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(got->prov.kind, "rules");
  EXPECT_EQ(got->prov.detail, "omp_parallel.remove");
  EXPECT_TRUE(got->prov.mechanical);
  EXPECT_EQ(to_string(got->prov), "rules:omp_parallel.remove (mechanical)");
  EXPECT_EQ(got->action, "omp_parallel.remove");
  EXPECT_EQ(got->features_removed, std::vector<std::string>{"omp_parallel"});
  EXPECT_EQ(got->locus, "lathe_launch/r");
  EXPECT_NE(got->edits.find("#pragma omp parallel for"), std::string::npos) << got->edits;
  EXPECT_NE(got->rationale.find("Carrier: {"), std::string::npos) << got->rationale;
  EXPECT_FALSE(source_has(got->kernel, "omp_parallel"));
  EXPECT_NE(got->kernel.hash, k.hash);
  EXPECT_EQ(got->calls, 0);
}

TEST(rules_proposer, backward_order_prior_then_listed_then_catalog) {
  const task t = load("conv2d");
  const kernel_bundle k = bundle("conv2d", "expert");
  rules_proposer p(options_for(t));
  backward_request r = backward(t, k);
  r.action_prior = {"remove_restrict"};
  auto a = p.propose_backward(r);
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->action, "restrict.remove");
  // Without a prior, the listed order decides: omp_parallel listed first is removed first.
  r.action_prior.clear();
  std::stable_partition(r.features.begin(), r.features.end(),
                        [](const feature& f) { return f.name == "omp_parallel"; });
  auto b = p.propose_backward(r);
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->action, "omp_parallel.remove");
  // A rejected attempt (its rule and anchor named) is not repeated.
  r.rejected = {{"rules:omp_parallel.remove at function:lathe_launch: wrong_result"}};
  auto c = p.propose_backward(r);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_NE(c->action, "omp_parallel.remove") << c->rationale;
}

TEST(rules_proposer, refused_lists_the_features_it_could_not_touch) {
  const task t = load("softmax");
  const kernel_bundle k = bundle("softmax", "expert");
  rules_proposer p(options_for(t));
  backward_request r = backward(t, k);
  std::erase_if(r.features, [](const feature& f) { return f.name == "omp_parallel"; });
  ASSERT_FALSE(r.features.empty());
  // simd and vector_access have a rule (simd_intrinsics.remove); its one site rejected before.
  r.rejected = {{"rules:simd_intrinsics.remove at include:immintrin.h: wrong_result"}};
  auto got = p.propose_backward(r);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind, failure_kind::refused);
  EXPECT_NE(got.error().message.find("could not touch"), std::string::npos) << got.error().message;
  EXPECT_NE(got.error().message.find("simd"), std::string::npos) << got.error().message;
  EXPECT_NE(got.error().message.find("vector_access"), std::string::npos) << got.error().message;
  EXPECT_NE(got.error().message.find("rejected before"), std::string::npos) << got.error().message;
  r.features.clear();
  EXPECT_EQ(p.propose_backward(r).error().kind, failure_kind::refused);
}

TEST(rules_proposer, forward_restores_the_removed_feature_at_its_locus) {
  const task t = load("softmax");
  const kernel_bundle k = bundle("softmax", "expert");
  rules_proposer p(options_for(t));
  backward_request br = backward(t, k);
  br.action_prior = {"omp_parallel"};
  auto back = p.propose_backward(br);
  ASSERT_TRUE(back) << back.error().message;
  forward_request fr;
  fr.t = &t;
  fr.predecessor = back->kernel;
  fr.restore = {"lathe_launch/r", "omp_parallel", {{"schedule", "static"}}};
  fr.action = back->action;
  auto fwd = p.rederive_forward(fr);
  ASSERT_TRUE(fwd) << fwd.error().message;
  EXPECT_EQ(fwd->action, "omp_parallel.add");
  EXPECT_EQ(fwd->prov.detail, "omp_parallel.add");
  EXPECT_EQ(fwd->locus, "lathe_launch/r");
  EXPECT_EQ(fwd->features_added, std::vector<std::string>{"omp_parallel"});
  EXPECT_TRUE(source_has(fwd->kernel, "omp_parallel"));
  EXPECT_NE(fwd->rationale.find("no loop-carried dependence"), std::string::npos) << fwd->rationale;
  EXPECT_NE(fwd->rationale.find("checked by the gate"), std::string::npos);
  // A feature no rule adds is refused and named; an unregistered one is unsupported.
  fr.restore = {"lathe_launch", "register_tiling", {}};
  auto none = p.rederive_forward(fr);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().kind, failure_kind::refused);
  EXPECT_NE(none.error().message.find("register_tiling"), std::string::npos);
  fr.restore.name = "openmp";
  EXPECT_EQ(p.rederive_forward(fr).error().kind, failure_kind::unsupported);
}

TEST(rules_proposer, audit_citations_pass_verify_audit) {
  const task t = load("softmax");
  const kernel_bundle k = bundle("softmax", "expert");
  rules_proposer p(options_for(t));
  audit_request r;
  r.t = &t;
  r.kernel = k;
  r.features = {"omp_parallel", "simd", "loop_unroll", "restrict"};
  auto a = p.audit_features(r);
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_TRUE(a->passed()) << (a->demoted.empty() ? "" : a->demoted.front());
  ASSERT_EQ(a->verdicts.size(), 4u);
  EXPECT_EQ(a->verdicts[0].status, presence::present);
  EXPECT_EQ(a->verdicts[1].status, presence::present);
  EXPECT_EQ(a->verdicts[2].status, presence::absent);
  EXPECT_EQ(a->prov.kind, "rules");
  // The citations hold what the detector saw, and lathe's own check accepts them again.
  ASSERT_FALSE(a->verdicts[0].citations.empty());
  EXPECT_NE(line_of(k, a->verdicts[0].citations[0]).find("#pragma omp parallel"), std::string::npos);
  EXPECT_TRUE(verify_audit(k, r.features, a->verdicts).passed());
  // A name no detector covers is unknown, so the audit fails; a name outside the registry is
  // the caller's mistake.
  r.features = {"omp_parallel", "online_softmax"};
  auto u = p.audit_features(r);
  ASSERT_TRUE(u);
  EXPECT_FALSE(u->passed());
  EXPECT_EQ(u->verdicts[1].status, presence::unknown);
  EXPECT_NE(u->verdicts[1].note.find("no detector"), std::string::npos);
  r.features = {"openmp"};
  EXPECT_EQ(p.audit_features(r).error().kind, failure_kind::unsupported);
}

TEST(rules_proposer, card_carrier_replays_on_another_task) {
  const task t = load("softmax");
  const kernel_bundle k = bundle("softmax", "expert");
  rules_proposer p(options_for(t));
  backward_request br = backward(t, k);
  br.action_prior = {"omp_parallel"};
  auto back = p.propose_backward(br);
  ASSERT_TRUE(back) << back.error().message;
  card_request cr;
  cr.t = &t;
  cr.step.action = back->action;
  cr.step.prov = back->prov;
  cr.step.locus = back->locus;
  cr.step.removed = {{back->locus, "omp_parallel", {}}};
  cr.step.speedup = 3.2;
  cr.before = back->kernel;  // less optimized
  cr.after = k;
  auto card = p.abstract_card(cr);
  ASSERT_TRUE(card) << card.error().message;
  ASSERT_TRUE(card->carriers.count(rules_carrier_key));
  auto inv = from_carrier(card->carriers.at(rules_carrier_key));
  ASSERT_TRUE(inv) << inv.error().message;
  EXPECT_EQ(inv->rule, "omp_parallel.add");
  EXPECT_TRUE(card->carriers.count("cpp/cpu"));  // the text diff, a hint for a model
  EXPECT_EQ(card->provides_features, std::vector<std::string>{"omp_parallel"});
  EXPECT_NE(card->intent.find("omp_parallel"), std::string::npos);
  EXPECT_FALSE(card->admitted());
  EXPECT_EQ(card->status, card_status::candidate);
  ASSERT_FALSE(card->verification_log.empty());
  EXPECT_NE(card->verification_log[0].find("byte for byte"), std::string::npos) << card->verification_log[0];

  // Another task's kernel: the carrier is replayed there by re-running the rule.
  const task lt = load("layernorm");
  const kernel_bundle naive = bundle("layernorm", "naive");
  ASSERT_FALSE(source_has(naive, "omp_parallel"));
  rules_proposer lp(options_for(lt));
  materialize_request mr;
  mr.t = &lt;
  mr.kernel = naive;
  mr.cards = {*card};
  auto m = lp.materialize(mr);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->prov.detail, "omp_parallel.add");
  EXPECT_TRUE(source_has(m->kernel, "omp_parallel"));
  EXPECT_EQ(m->features_added, std::vector<std::string>{"omp_parallel"});
  // A card that gives no carrier falls back to a forward rule of what it provides; one that
  // provides nothing any rule adds is refused.
  skill_card bare = *card;
  bare.carriers.clear();
  mr.cards = {bare};
  EXPECT_TRUE(lp.materialize(mr));
  bare.provides_features = {"smem_tiling"};
  mr.cards = {bare};
  auto refused = lp.materialize(mr);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, failure_kind::refused);
}

TEST(rules_proposer, rank_mutate_repair_seed) {
  const task t = load("softmax");
  const kernel_bundle naive = bundle("softmax", "naive");
  rules_proposer p(options_for(t, 7));
  rank_request rr;
  rr.t = &t;
  rr.kernel = naive;
  rr.paths = {{"b", "loop_unroll then restrict"}, {"a", "omp_parallel"}, {"c", "restrict and omp_parallel"}};
  auto rank = p.rank_paths(rr);
  ASSERT_TRUE(rank);
  EXPECT_EQ(rank->order, (std::vector<std::string>{"b", "c", "a"}));
  EXPECT_NE(rank->reasons[0].find("loop_unroll"), std::string::npos);

  mutate_request mr;
  mr.t = &t;
  mr.parent = naive;
  auto m1 = p.mutate(mr), m2 = p.mutate(mr);
  ASSERT_TRUE(m1) << m1.error().message;
  ASSERT_TRUE(m2);
  EXPECT_EQ(m1->kernel.hash, m2->kernel.hash);  // the same seed and parent: the same mutation
  EXPECT_EQ(m1->prov.kind, "rules");
  mr.direction = "try omp_parallel";
  auto m3 = p.mutate(mr);
  ASSERT_TRUE(m3);
  EXPECT_EQ(m3->action, "omp_parallel.add");

  EXPECT_EQ(p.repair({}).error().kind, failure_kind::unsupported);
  EXPECT_EQ(p.seed_baseline({}).error().kind, failure_kind::unsupported);
  EXPECT_EQ(to_string(p.origin()), "rules:catalog (mechanical)");
}

// A backward step of the rule engine, really built and checked by the gate.
TEST(rules_proposer_gate, backward_step_passes_the_gate) {
  char tmpl[] = "/tmp/lathe-rules-proposer-XXXXXX";
  const fs::path dir = mkdtemp(tmpl);
  setenv("LATHE_LOCK_DIR", (dir / "locks").c_str(), 1);
  gate::gate_config cfg;
  auto tc = gate::detect_toolchain(kSrc / "include");
  ASSERT_TRUE(tc) << tc.error().message;
  cfg.tools = *tc;
  cfg.cache_dir = dir / "cache";
  cfg.tgt = gate::detect_cpu_target();
  cfg.sandbox.worker_exe = fs::path(LATHE_BINARY_DIR) / "lathe-worker";
  cfg.sandbox.address_space_bytes = uint64_t{4} << 30;
  cfg.sandbox.rss_limit_bytes = uint64_t{2} << 30;
  cfg.call_timeout_s = 20;
  cfg.time = false;  // the checks decide; no test times

  const task t = load("softmax");
  const kernel_bundle k = bundle("softmax", "expert");
  rules_proposer p(options_for(t));
  backward_request r = backward(t, k);
  r.action_prior = {"omp_parallel"};
  auto got = p.propose_backward(r);
  ASSERT_TRUE(got) << got.error().message;
  gate::gate_request req;
  req.t = &t;
  req.candidate = got->kernel;
  req.baseline = k;
  req.prov = got->prov;
  const evaluation e = gate::evaluate(cfg, req);
  EXPECT_EQ(e.result, outcome::ok) << e.message << "\n" << e.diagnostics;
  EXPECT_EQ(e.prov.detail, "omp_parallel.remove");
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST(proposer_choice, auto_is_rules_without_a_model) {
  using cli::choose_proposer;
  using cli::proposer_choice;
  EXPECT_EQ(*choose_proposer("auto", false), proposer_choice::rules);
  EXPECT_EQ(*choose_proposer("auto", true), proposer_choice::llm);
  EXPECT_EQ(*choose_proposer("rules", true), proposer_choice::rules);
  EXPECT_EQ(*choose_proposer("llm", true), proposer_choice::llm);
  auto no_model = choose_proposer("llm", false);
  ASSERT_FALSE(no_model);
  EXPECT_NE(no_model.error().message.find("no model is configured"), std::string::npos);
  EXPECT_FALSE(choose_proposer("gpt", true));

  // Through lathe.toml: none in the workspace or the user's directory → rules; one → llm.
  char tmpl[] = "/tmp/lathe-choice-XXXXXX";
  const fs::path dir = mkdtemp(tmpl);
  const fs::path ws = dir / "ws" / ".lathe", home = dir / "home";
  fs::create_directories(ws);
  fs::create_directories(home);
  const llm::env_lookup env = [&](const std::string& name) -> std::optional<std::string> {
    if (name == "XDG_CONFIG_HOME") return home.string();
    if (name == "HOME") return home.string();
    return std::nullopt;
  };
  auto d = cli::decide_proposer("auto", workspace{ws}, env);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->choice, proposer_choice::rules);
  EXPECT_NE(d->why.find("no model configured"), std::string::npos) << d->why;
  EXPECT_EQ(d->config_source.rfind("none (looked for in " + (ws / "lathe.toml").string(), 0), 0u) << d->config_source;
  EXPECT_FALSE(cli::decide_proposer("llm", workspace{ws}, env));
  std::ofstream(ws / "lathe.toml") << "provider = \"openai\"\nmodel = \"m\"\nbase_url = "
                                      "\"http://127.0.0.1:1/v1\"\nkey_env = \"\"\n";
  auto l = cli::decide_proposer("auto", workspace{ws}, env);
  ASSERT_TRUE(l) << l.error().message;
  EXPECT_EQ(l->choice, proposer_choice::llm);
  ASSERT_TRUE(l->cfg);
  EXPECT_EQ(l->cfg->model, "m");
  EXPECT_EQ(l->config_source, (ws / "lathe.toml").string());  // the run's provenance names the file
  EXPECT_EQ(cli::decide_proposer("rules", workspace{ws}, env)->choice, proposer_choice::rules);
  EXPECT_EQ(cli::decide_proposer("rules", workspace{ws}, env)->config_source, "not read (--proposer rules)");
  // A broken lathe.toml is an error for auto, never a silent fall-back to the rules.
  std::ofstream(ws / "lathe.toml") << "provider = \"nonsense\"\n";
  EXPECT_FALSE(cli::decide_proposer("auto", workspace{ws}, env));
  std::error_code ec;
  fs::remove_all(dir, ec);
}
