// A verb's stored options (cli/stored_options.h, issue 43 step 7): written as the verbs wrote
// their run's args by hand before, byte for byte, and read back over the command line's on
// --resume as their fill_from_run copies did; a run of another kind is refused in English.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/gate_options.h"
#include "cli/stored_options.h"
#include "core/test_util.h"

namespace lathe::cli {
namespace {

using nlohmann::json;

struct demo_cli {
  std::string task, kernel, resume, proposer = "auto";
  int32_t repairs = 1;
  uint64_t seed = 1;
  double max_time = 1.0;
  bool quick = false;
};

const stored_options<demo_cli> table = {
    {"task", &demo_cli::task}, {"kernel", &demo_cli::kernel},     {"max_repairs", &demo_cli::repairs},
    {"seed", &demo_cli::seed}, {"max_time", &demo_cli::max_time}, {"quick", &demo_cli::quick},
};

TEST(stored_options, written_as_the_verbs_wrote_them_by_hand) {
  demo_cli o;
  o.task = "layernorm", o.kernel = "naive", o.repairs = 2, o.seed = 18446744073709551615u, o.max_time = 0.7;
  o.quick = true;
  json by_hand{{"task", o.task},    {"kernel", o.kernel},     {"max_repairs", o.repairs},
               {"seed", o.seed},    {"max_time", o.max_time}, {"quick", o.quick}};
  EXPECT_EQ(stored_json(o, table).dump(), by_hand.dump());
  EXPECT_EQ(stored_json(o, table).dump(),
            R"({"kernel":"naive","max_repairs":2,"max_time":0.7,"quick":true,"seed":18446744073709551615,"task":"layernorm"})");
  EXPECT_EQ(stored_json(demo_cli{}, stored_options<demo_cli>{}).dump(), "{}");
}

// The gate's options optimize and evolve store, bound in the verbs straight into their settings:
// the keys the runs stored before (max_time, quick), read back into the settings.
TEST(stored_options, the_timing_options_are_stored_from_the_gate_settings) {
  gate_settings gs = gate_settings_with(1.0);
  EXPECT_EQ(gs.max_time, 1.0);
  EXPECT_EQ(gs.seeds, gate_settings{}.seeds);
  EXPECT_EQ(gs.mode, gate_settings{}.mode);
  EXPECT_EQ(stored_json(gs, stored_timing).dump(), R"({"max_time":1.0,"quick":false})");
  read_stored(json::parse(R"({"max_time":0.7,"quick":true,"task":"layernorm"})"), gs, stored_timing);
  EXPECT_EQ(gs.max_time, 0.7);
  EXPECT_TRUE(gs.quick);
}

class resume : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = store::open(dir_.path() / "lathe.db");
    ASSERT_TRUE(db) << db.error().message;
    ctx_.db.emplace(std::move(*db));
  }
  void put(const std::string& id, run_kind kind, const std::string& args) {
    run r;
    r.id = id;
    r.kind = kind;
    r.task = "layernorm";
    r.args = args;
    ASSERT_TRUE(ctx_.db->put_run(r));
  }
  test::temp_dir dir_;
  context ctx_;
};

TEST_F(resume, the_stored_options_replace_the_command_lines) {
  put("optimize-1", run_kind::optimize,
      R"({"kernel":"naive","max_repairs":2,"max_time":0.7,"proposer":"rules","quick":true,"seed":7,"task":"layernorm","extra":1})");
  demo_cli o;
  o.resume = "optimize-1";
  o.kernel = "expert";  // the run's own wins
  auto a = resume_options(ctx_, run_kind::optimize, "optimizes", o, table);
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(o.task, "layernorm");
  EXPECT_EQ(o.kernel, "naive");
  EXPECT_EQ(o.repairs, 2);
  EXPECT_EQ(o.seed, 7u);
  EXPECT_EQ(o.max_time, 0.7);
  EXPECT_TRUE(o.quick);
  EXPECT_EQ(o.proposer, "rules");  // "auto" on the command line: the run's own
  EXPECT_EQ(a->value("extra", 0), 1);

  demo_cli named;
  named.resume = "optimize-1";
  named.proposer = "llm";  // named on the command line: kept
  ASSERT_TRUE(resume_options(ctx_, run_kind::optimize, "optimizes", named, table));
  EXPECT_EQ(named.proposer, "llm");
}

TEST_F(resume, an_option_the_run_did_not_store_keeps_the_command_lines) {
  put("optimize-2", run_kind::optimize, R"({"task":"layernorm"})");
  demo_cli o;
  o.resume = "optimize-2";
  o.repairs = 5;
  ASSERT_TRUE(resume_options(ctx_, run_kind::optimize, "optimizes", o, table));
  EXPECT_EQ(o.repairs, 5);
  EXPECT_EQ(o.proposer, "auto");
}

TEST_F(resume, refusals_name_the_run_and_what_is_wrong) {
  put("evolve-1", run_kind::evolve, R"({"task":"layernorm"})");
  put("bench-1", run_kind::bench, R"({"task":"layernorm"})");
  put("optimize-3", run_kind::optimize, "not json");
  demo_cli o;
  o.resume = "evolve-1";
  auto a = resume_options(ctx_, run_kind::optimize, "optimizes", o, table);
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().message, "run 'evolve-1' is an evolve run, not an optimize run");
  o.resume = "bench-1";
  a = resume_options(ctx_, run_kind::evolve, "evolves", o, table);
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().message, "run 'bench-1' is a bench run, not an evolve run");
  o.resume = "optimize-3";
  a = resume_options(ctx_, run_kind::optimize, "optimizes", o, table);
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().message, "run 'optimize-3' has no readable arguments");
  o.resume = "evolve-1";
  o.task = "gemm";
  a = resume_options(ctx_, run_kind::evolve, "evolves", o, table);
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().message, "run 'evolve-1' evolves layernorm, not gemm");
}

}  // namespace
}  // namespace lathe::cli
