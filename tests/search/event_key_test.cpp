// Run event keys (issue 43, step 8): each form's text as optimize and evolve wrote it before the
// keys were typed, byte for byte, so that a stored run's recorded actions are found on resume;
// and a run stored by text (an older lathe's events) replayed through the journal by typed keys.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/test_util.h"
#include "search/event_key.h"
#include "search/journal.h"

namespace lathe::search {
namespace {

using detail::event_key;
using nlohmann::json;

TEST(event_key, every_form_is_the_text_stored_runs_hold) {
  EXPECT_EQ(event_key::started().text(), "started");
  EXPECT_EQ(event_key::start().text(), "start");
  EXPECT_EQ(event_key::finished().text(), "finished");
  EXPECT_EQ(event_key::resumed(41).text(), "resumed/41");
  // optimize
  EXPECT_EQ(event_key::ranking(3).text(), "k/3");
  EXPECT_EQ(event_key::proposal(3, 0).text(), "p/3/0/0");
  EXPECT_EQ(event_key::proposal(12, 2).text(), "p/12/0/2");
  EXPECT_EQ(event_key::seed_proposal(0).text(), "p/seed/0/0");
  EXPECT_EQ(event_key::seed_proposal(1).text(), "p/seed/0/1");
  EXPECT_EQ(event_key::given_start_check().text(), "e/start/given");
  EXPECT_EQ(event_key::seeded_start_check(2).text(), "e/start/0/2");
  EXPECT_EQ(event_key::candidate(3, 1).text(), "e/candidate/3/0/1");
  EXPECT_EQ(event_key::remeasure(3).text(), "e/remeasure/3/0/0");
  EXPECT_EQ(event_key::final_best().text(), "e/final_best");
  EXPECT_EQ(event_key::final_expert().text(), "e/final_expert");
  EXPECT_EQ(event_key::rejected(3, 0).text(), "r/3/0");
  EXPECT_EQ(event_key::accepted(3).text(), "a/3");
  // an unstable verdict asked again, for any evaluation
  EXPECT_EQ(event_key::candidate(3, 0).retry(1).text(), "e/candidate/3/0/0/u1");
  EXPECT_EQ(event_key::remeasure(4).retry(2).text(), "e/remeasure/4/0/0/u2");
  EXPECT_EQ(event_key::final_best().retry(1).text(), "e/final_best/u1");
  // evolve
  EXPECT_EQ(event_key::translation(1, 2).text(), "t/1/2");
  EXPECT_EQ(event_key::child(0, 1, 3).text(), "c/0/1/3");
  EXPECT_EQ(event_key::child(7, 0, 11).text(), "c/7/0/11");
  EXPECT_EQ(event_key::migrant(4, 2).text(), "m/4/2");
  EXPECT_EQ(event_key::generation(5).text(), "g/5");
}

TEST(event_key, keys_of_different_actions_differ) {
  EXPECT_NE(event_key::proposal(1, 0), event_key::proposal(1, 1));
  EXPECT_NE(event_key::candidate(1, 0), event_key::candidate(1, 0).retry(1));
  EXPECT_NE(event_key::start(), event_key::started());
  EXPECT_EQ(event_key::child(2, 0, 1), event_key::child(2, 0, 1));
}

// Events as a stored run holds them (JSON text with its key), read by the journal and looked up
// by typed keys: recorded ones are found and not written again; a new one is appended.
TEST(event_key, a_stored_run_is_found_by_typed_keys) {
  test::temp_dir dir;
  auto db = store::open(dir.path() / "k.db");
  ASSERT_TRUE(db) << db.error().message;
  run r;
  r.id = "optimize-keys";
  r.kind = run_kind::optimize;
  r.task = "t";
  r.args = "{}";
  ASSERT_TRUE(db->put_run(r));
  ASSERT_TRUE(db->add_run_event(r.id, "started", R"({"elapsed":0.1,"key":"started","task":"t"})"));
  ASSERT_TRUE(db->add_run_event(r.id, "proposal", R"({"elapsed":1.5,"key":"p/1/0/0","ok":true})"));
  ASSERT_TRUE(db->add_run_event(r.id, "evaluation", R"({"elapsed":2.5,"key":"e/candidate/1/0/0/u1","id":7})"));

  detail::journal j(*db, r.id);
  ASSERT_TRUE(j.load());
  EXPECT_EQ(j.recorded_count(), 3u);
  EXPECT_EQ(j.last_seq(), 3);
  EXPECT_TRUE(j.replaying(event_key::started()));
  EXPECT_TRUE(j.replaying(event_key::proposal(1, 0)));
  ASSERT_NE(j.recorded(event_key::candidate(1, 0).retry(1)), nullptr);
  EXPECT_EQ(j.recorded(event_key::candidate(1, 0).retry(1))->value("id", 0), 7);
  EXPECT_FALSE(j.replaying(event_key::candidate(1, 0)));

  auto again = j.emit("proposal", event_key::proposal(1, 0), json{{"ok", false}}, 3.0);
  ASSERT_TRUE(again);
  EXPECT_FALSE(*again);  // recorded: nothing written
  auto fresh = j.emit("ranking", event_key::ranking(2), json{{"order", json::array()}}, 3.5);
  ASSERT_TRUE(fresh);
  EXPECT_TRUE(*fresh);
  auto events = db->run_events(r.id);
  ASSERT_TRUE(events);
  ASSERT_EQ(events->size(), 4u);
  EXPECT_EQ(events->back().json, R"({"elapsed":3.5,"key":"k/2","order":[]})");
}

// The error of a --resume naming a run of another kind reads as English for every kind.
TEST(event_key, resuming_a_run_of_another_kind_names_both_kinds) {
  test::temp_dir dir;
  auto db = store::open(dir.path() / "r.db");
  ASSERT_TRUE(db) << db.error().message;
  run r;
  r.id = "evolve-1";
  r.kind = run_kind::evolve;
  r.task = "t";
  r.args = "{}";
  ASSERT_TRUE(db->put_run(r));
  auto got = detail::resumable_run(*db, r.id, run_kind::optimize, "t");
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().message, "run 'evolve-1' is an evolve run, not an optimize run");
  r.id = "bench-1";
  r.kind = run_kind::bench;
  ASSERT_TRUE(db->put_run(r));
  got = detail::resumable_run(*db, r.id, run_kind::evolve, "t");
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().message, "run 'bench-1' is a bench run, not an evolve run");
}

}  // namespace
}  // namespace lathe::search
