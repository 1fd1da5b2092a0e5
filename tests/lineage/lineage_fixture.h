// Shared set-up of the lineage tests: the real gate (gate_env: real toolchain, real worker),
// reached through lineages::gate_verifier with every evaluation stored in a temporary store,
// and a short timing policy (these tests decide steps, not speed records).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "agent/rules/rules_proposer.h"
#include "core/json.h"
#include "core/text.h"
#include "spec/bundle.h"
#include "integration/gate_fixture.h"
#include "lineage/decompose.h"
#include "features/feature_audit.h"
#include "lineage/init.h"
#include "lineage/run_log.h"
#include "store/store.h"

namespace lathe::lineage_test {

namespace fs = std::filesystem;
using lathe::testing::source_dir;

class lineage_env : public lathe::testing::gate_env {
 protected:
  void SetUp() override {
    gate_env::SetUp();
    // One build cache for the whole executable: the tests walk the same experts, and a build
    // (g++ -O3 of an AVX2 expert: ~5 s here) is content-addressed, so sharing it is safe.
    cfg_.cache_dir = shared_cache();
    // gate_env's short series (1.5 s at most) on two process pairs instead of four: a step's
    // ratio only has to exist, and the forward check only has to clear 1 - margin.
    cfg_.policy.processes = 2;
    // And 4 rounds before the noise criterion may stop a series, as lathe's --quick: a step's
    // ratio only has to exist, and the A/A margin grows with the wider intervals.
    cfg_.policy.min_rounds = 4;
    // The 2-core VM is shared: under load its A/A interval reaches 0.78..1.31, which the default
    // (0.20) calls unstable. Deciding anyway is safe here because the margin grows with the
    // measured A/A spread (verifier.h margin), so noise only makes "faster" harder to show.
    cfg_.policy.aa_unstable = 0.6;
    auto db = store::open(dir_ / "lathe.db");
    ASSERT_TRUE(db) << db.error().message;
    db_ = std::make_unique<store>(std::move(*db));
    verifier_ = std::make_unique<lineages::gate_verifier>(hooks());
  }

  // The gate as configured here, every evaluation stored in the test's store, one writer at a
  // time (evaluations on several CPU slots end at once; the store's connection takes one
  // transaction at a time, as lathe's own hooks write: cli/proposer_session.cpp).
  lineages::gate_hooks hooks() {
    lineages::gate_hooks h;
    const gate::gate_config base = cfg_;
    h.config = [base](const task&, bool time) {
      gate::gate_config c = base;
      c.time = time;
      return c;
    };
    store* s = db_.get();
    h.record = [s, mu = record_mu_](const kernel_bundle& k, evaluation& e) -> result<int64_t> {
      std::lock_guard<std::mutex> g(*mu);
      (void)s->put_kernel(k);
      auto id = s->add_evaluation(e);
      if (id) e.id = *id;
      return id;
    };
    return h;
  }

  static fs::path shared_cache() {
    struct dir {
      fs::path path;
      dir() {
        char tmpl[] = "/tmp/lathe-lineage-cache-XXXXXX";
        path = mkdtemp(tmpl);
      }
      ~dir() {
        std::error_code ec;
        fs::remove_all(path, ec);
      }
    };
    static const dir d;
    return d.path;
  }

  task shipped(const std::string& name) { return load(source_dir() / "tasks" / name); }
  // softmax with its timed shape made smaller (2048 x 2048 instead of 4096 x 4096: 16 MB instead
  // of 64 MB per tensor). Its checks take ~9 s at full size, a third of every step's cost. Not
  // smaller: below the 32 MB LLC the gate's roofline floor is the cache's, which the loaded VM
  // measures low, and a correct expert reads `suspicious_speed`. The other sets stay as shipped.
  task small_softmax() {
    task t = shipped("softmax");
    for (auto& s : t.shapes)
      if (s.time) s.symbols = {{"R", 2048}, {"C", 2048}};
    return t;
  }
  kernel_bundle shipped_kernel(const task& t, const std::string& name) {
    return kernel(*find_kernel(t, name));
  }

  // An accepted expert check with the expert's detected features, stored as init would store
  // it, so that a test about the walk does not spend two timed comparisons on init (init has its
  // own tests). The reason says where it came from.
  void seed_check(const task& t, const kernel_bundle& expert) {
    expert_check c;
    c.task = t.name;
    c.kernel = expert.hash;
    c.kernel_name = expert.name;
    c.target = cfg_.tgt.arch;
    c.accepted = true;
    c.reason = "accepted: seeded by the test (init is tested on its own)";
    c.features = lineages::features_of(verifier_->features(t, expert));
    ASSERT_TRUE(db_->put_kernel(expert));
    ASSERT_TRUE(db_->add_expert_check(c));
  }

  std::vector<run_event> events(const std::string& run_id) {
    auto e = db_->run_events(run_id);
    EXPECT_TRUE(e) << (e ? "" : e.error().message);
    return e ? *e : std::vector<run_event>{};
  }

  // The `claimed` features of each accepted step, in backward order (1 = from the expert).
  std::vector<std::vector<feature>> claimed(const std::string& run_id) {
    std::vector<std::vector<feature>> out;
    for (const auto& e : events(run_id))
      if (e.kind == lineages::event_kind::backward_accepted) {
        out.emplace_back();
        const nlohmann::json body = nlohmann::json::parse(e.json);
        for (const auto& j : body.at("claimed")) {
          feature f;
          from_json(j, f);
          out.back().push_back(f);
        }
      }
    return out;
  }

  kernel_bundle stored(const std::string& hash) {
    auto k = db_->get_kernel(hash);
    EXPECT_TRUE(k) << (k ? "" : k.error().message);
    return k ? *k : kernel_bundle{};
  }

  std::unique_ptr<store> db_;
  std::unique_ptr<lineages::gate_verifier> verifier_;
  std::shared_ptr<std::mutex> record_mu_ = std::make_shared<std::mutex>();
};

inline std::vector<std::string> names(const std::vector<feature>& fs) {
  std::vector<std::string> out;
  for (const auto& f : fs) out.push_back(f.name);
  return out;
}

}  // namespace lathe::lineage_test
