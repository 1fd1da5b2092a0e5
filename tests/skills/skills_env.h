// Shared set-up of the skills/ integration tests: one real gate (the real worker, a private cache
// and lock directory, gate_env's short timing policy), one store, one gate_verifier over both, for
// the whole process, so that a kernel built by one test is not built again by the next. And a
// lineage built the way decompose builds one, without lineage/: the rule engine removes named
// features from a shipped expert one at a time, each predecessor gated and timed against its
// successor, each step re-derived forward by the rule engine.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/rules/rules_proposer.h"
#include "spec/bundle.h"
#include "gate/gate.h"
#include "spec/task_file.h"
#include "integration/gate_fixture.h"
#include "verify/verifier.h"
#include "store/store.h"

namespace lathe::testing {

class skills_env {
 public:
  static skills_env& get() {
    static skills_env env;
    return env;
  }

  task load(const std::string& name) {
    auto t = load_task(source_dir() / "tasks" / name);
    EXPECT_TRUE(t) << (t ? "" : t.error().message);
    return t ? *t : task{};
  }
  kernel_bundle kernel(const task& t, const std::string& name) {
    auto p = find_kernel(t, name);
    EXPECT_TRUE(p) << t.name << " has no kernel " << name;
    if (!p) return {};
    auto b = load_bundle(*p);
    EXPECT_TRUE(b) << (b ? "" : b.error().message);
    return b ? *b : kernel_bundle{};
  }
  std::vector<feature> features(const task& t, const kernel_bundle& k) {
    std::vector<feature> out;
    for (const auto& d : verifier->features(t, k).found) out.push_back(d.what);
    return out;
  }
  // A paired comparison asked again when the gate calls the machine too noisy to decide.
  evaluation compare(const task& t, const kernel_bundle& candidate, const kernel_bundle& baseline,
                     const provenance& prov) {
    evaluation e;
    for (int attempt = 0; attempt < 3; ++attempt) {
      e = verifier->compare(t, candidate, baseline, prov);
      if (e.result != outcome::unstable) break;
      std::printf("unstable (%s); asking again\n", e.message.c_str());
    }
    return e;
  }

  std::filesystem::path dir;
  // Set when a lineage step stayed `unstable` through every attempt: the gate refused to decide
  // on a machine too noisy to time (its A/A control failed), which is the gate being right, not
  // the code under test failing. The tests that need the lineage skip with this reason.
  std::string undecided;
  gate::gate_config cfg;
  std::optional<store> db;
  std::unique_ptr<lineages::gate_verifier> verifier;

 private:
  skills_env() {
    char tmpl[] = "/tmp/lathe-skills-test-XXXXXX";
    dir = mkdtemp(tmpl);
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
    setenv("LATHE_LOCK_DIR", (dir / "locks").c_str(), 1);
    auto tc = gate::detect_toolchain(source_dir() / "include");
    EXPECT_TRUE(tc) << tc.error().message;
    if (tc) cfg.tools = *tc;
    cfg.cache_dir = dir / "cache";
    cfg.tgt = measured_target();
    cfg.sandbox.worker_exe = std::filesystem::path(LATHE_BINARY_DIR) / "lathe-worker";
    cfg.sandbox.address_space_bytes = uint64_t{2} << 30;
    cfg.sandbox.rss_limit_bytes = uint64_t{1} << 30;
    cfg.call_timeout_s = 3;
    cfg.policy.min_seconds = 0.2;
    cfg.policy.max_seconds = 1.5;
    cfg.policy.warmup_seconds = 0.02;
    auto s = store::open(dir / "lathe.db");
    EXPECT_TRUE(s) << s.error().message;
    if (s) db.emplace(std::move(*s));
    lineages::gate_hooks hooks;
    hooks.config = [this](const task&, bool time) {
      gate::gate_config c = cfg;
      c.time = time;
      return c;
    };
    hooks.record = [this](const kernel_bundle& k, evaluation& e) -> result<int64_t> {
      if (auto put = db->put_kernel(k); !put) return tl::unexpected(put.error());
      auto id = db->add_evaluation(e);
      if (id) e.id = *id;
      return id;
    };
    verifier = std::make_unique<lineages::gate_verifier>(std::move(hooks));
  }
  ~skills_env() {
    verifier.reset();
    db.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

// The features `a` has by name that `b` lacks.
inline std::vector<feature> minus(const std::vector<feature>& a, const std::vector<feature>& b) {
  std::vector<feature> out;
  for (const auto& f : a)
    if (std::none_of(b.begin(), b.end(), [&](const feature& g) { return g.name == f.name; }) &&
        std::none_of(out.begin(), out.end(), [&](const feature& g) { return g.name == f.name; }))
      out.push_back(f);
  return out;
}

// Walks the expert of `task_name` backward through `remove` (feature names, in order) with the
// rule engine, gating and timing every step, re-deriving it forward, and stores the lineage.
inline lineage rule_lineage(const std::string& task_name, const std::vector<std::string>& remove,
                            const std::string& run_id) {
  skills_env& env = skills_env::get();
  const task t = env.load(task_name);
  agent::rules::rules_proposer p(agent::rules::options_for(t));
  kernel_bundle cur = env.kernel(t, "expert");
  std::vector<kernel_bundle> kernels{cur};
  std::vector<std::vector<feature>> feats{env.features(t, cur)};
  std::vector<transition> steps;
  for (const auto& name : remove) {
    // One mechanism at a time, whole: a rule removes one site (one __restrict__ of three), so it
    // is asked again until the feature is gone from the source, and the sites form one step.
    std::optional<agent::proposal> back;
    kernel_bundle prev = cur;
    std::string edits;
    for (int site = 0; site < 8; ++site) {
      agent::backward_request br;
      br.t = &t;
      br.kernel = prev;
      for (const auto& d : agent::rules::detect_source(prev)) br.features.push_back(d.what);
      br.action_prior = {name};
      auto got = p.propose_backward(br);
      EXPECT_TRUE(got) << (got ? "" : got.error().message);
      if (!got) break;
      EXPECT_EQ(got->features_removed, std::vector<std::string>{name});
      prev = got->kernel;
      edits += got->edits;
      if (!back) back = *got;
      const auto left = agent::rules::detect_source(prev);
      if (std::none_of(left.begin(), left.end(), [&](const auto& d) { return d.what.name == name; })) break;
    }
    if (!back) break;
    back->edits = edits;
    EXPECT_TRUE(env.db->put_kernel(prev));
    EXPECT_TRUE(env.db->put_kernel(cur));
    // Successor against predecessor: ratio = time(prev) / time(cur), the step's speedup.
    const evaluation e = env.compare(t, cur, prev, back->prov);
    if (e.result == outcome::unstable) {
      env.undecided = task_name + " without " + name + ": " + e.message;
      break;
    }
    EXPECT_EQ(e.result, outcome::ok) << task_name << " without " << name << ": " << e.message;
    transition st;
    st.from_kernel = prev.hash;
    st.to_kernel = cur.hash;
    st.action = back->action;
    st.locus = back->locus;
    st.edit = back->edits;
    st.prov = back->prov;
    st.speedup = lineages::ratio(e);
    st.evaluations = {e.id};
    const std::vector<feature> prev_feats = env.features(t, prev);
    st.added = minus(feats.front(), prev_feats);  // feats.front(): the successor's (cur's)
    st.removed = minus(prev_feats, feats.front());
    // Forward: the rule engine restores the feature on the predecessor.
    agent::forward_request fr;
    fr.t = &t;
    fr.predecessor = prev;
    fr.restore = {back->locus, name, {}, detection_method::source};
    fr.action = back->action;
    auto fwd = p.rederive_forward(fr);
    if (!fwd) {
      st.forward.status = forward_status::rejected;
      st.forward.reason = fwd.error().message;
    } else if (fwd->kernel.hash == cur.hash) {
      st.forward.status = forward_status::identity_roundtrip;
      st.forward.kernel = fwd->kernel.hash;
      st.forward.prov = fwd->prov;
      st.forward.prov.mechanical = true;
      st.forward.reason = "byte for byte the successor";
    } else {
      const evaluation c = env.verifier->check(t, fwd->kernel, prev, fwd->prov);
      st.forward.status = lineages::passed(c) ? forward_status::accepted : forward_status::rejected;
      st.forward.kernel = fwd->kernel.hash;
      st.forward.prov = fwd->prov;
      st.forward.evaluations = {c.id};
      st.forward.reason = lineages::passed(c) ? "passed the checks" : "the gate said " + std::string(to_string(c.result));
    }
    steps.insert(steps.begin(), st);
    kernels.insert(kernels.begin(), prev);
    feats.insert(feats.begin(), prev_feats);
    cur = prev;
  }
  lineage l;
  l.task = t.name;
  l.op = t.op;
  l.expert = "expert";
  l.target = env.cfg.tgt.arch;
  l.run_id = run_id;
  l.id = t.name + "/" + kernels.back().hash.substr(0, 12) + "/" + run_id;
  for (const auto& k : kernels) l.kernels.push_back(k.hash);
  l.features = feats;
  l.steps = steps;
  l.term = termination::step_limit;
  l.reason = "the test asked for " + std::to_string(remove.size()) + " step(s)";
  EXPECT_TRUE(env.db->put_lineage(l));
  return l;
}

}  // namespace lathe::testing
