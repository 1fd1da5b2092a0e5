// Budgets and the call record around the proposer (llm/metered.h): every call, repairs included,
// reserves its worst case and commits what it used; a refused reservation ends the operation with
// failure_kind::budget; every call is stored, and keys never are.
#include "llm/metered.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "scripted.h"
#include "store/temp_dir.h"

namespace lathe::agent::test {
namespace {

const std::string omp_line = "#pragma omp parallel for schedule(static)\n";

json good_reply(const std::string& rationale = "one thread") {
  return {{"action", "remove_omp_parallel"},
          {"locus", "lathe_launch/r"},
          {"removes", {"omp_parallel"}},
          {"rationale", rationale},
          {"edits", search_replace("kernel.cpp", omp_line, "")}};
}

backward_request backward(const kernel_bundle& k) {
  backward_request r;
  r.t = &softmax();
  r.kernel = k;
  r.features = {{"lathe_launch/r", "omp_parallel", {}}};
  return r;
}

TEST(metered, a_ledger_of_one_call_refuses_the_repair) {
  auto inner = std::make_unique<scripted>();
  scripted* model = inner.get();
  model->say_text("not json", 100, 50);
  model->say(good_reply());
  llm::limits l;
  l.calls = 1;
  l.run.usd = 10.0;
  llm::ledger budget(l);
  llm::meter m;
  m.budget = &budget;
  m.cost = llm::price{1.0, 2.0};
  m.max_seconds = 60;
  llm::metered_provider metered(std::move(inner), m);
  EXPECT_EQ(metered.name(), "scripted/test");
  llm_proposer p(metered, prompts());
  EXPECT_EQ(to_string(p.origin()), "llm:scripted/test");
  auto got = p.propose_backward(backward(softmax_expert()));
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind, failure_kind::budget);
  EXPECT_TRUE(has(got.error().message, "calls")) << got.error().message;
  EXPECT_EQ(got.error().calls, 2);    // the question and the refused repair
  EXPECT_EQ(model->seen.size(), 1u);  // the refused call never reached the model
  const llm::amounts spent = budget.spent();
  EXPECT_EQ(spent.calls, 1);
  EXPECT_EQ(spent.tokens, 150);
  EXPECT_DOUBLE_EQ(spent.usd, llm::cost_usd(*m.cost, 100, 50));
  EXPECT_EQ(budget.actions_in_flight(), 0);
  EXPECT_EQ(budget.in_flight().calls, 0);
  // The bundle went through the meter to the model.
  EXPECT_EQ(model->bundles[0], softmax_expert().hash);
}

TEST(metered, command_providers_are_counted_by_calls_and_a_cancelled_call_costs_nothing) {
  auto inner = std::make_unique<scripted>();
  scripted* model = inner.get();
  model->say_text("```json\n" + good_reply().dump() + "\n```", 0, 0);
  llm::limits l;
  l.calls = 5;
  l.run.tokens = 10;  // a command call asks for no tokens, so this never refuses it
  llm::ledger budget(l);
  llm::meter m;
  m.budget = &budget;
  m.command = true;
  m.max_seconds = 30;
  llm::metered_provider metered(std::move(inner), m);
  llm_proposer p(metered, prompts());
  auto got = p.propose_backward(backward(softmax_expert()));
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(budget.spent().calls, 1);
  EXPECT_EQ(budget.spent().tokens, 0);

  llm::cancel_token cancel;
  cancel.cancelled = true;
  llm::request r;
  auto cancelled = metered.call(r, &cancel);
  ASSERT_FALSE(cancelled);
  EXPECT_EQ(cancelled.error().kind, llm::call_error::cancelled);
  EXPECT_EQ(budget.spent().calls, 1);  // released, not charged
  EXPECT_EQ(model->seen.size(), 1u);
}

TEST(metered, what_a_failed_call_is_charged) {
  llm::amounts worst;
  worst.calls = 1;
  worst.tokens = 5000;
  worst.usd = 0.5;
  const auto timeout = llm::used_by_failure({llm::call_error::timeout, "", 0, 4}, worst);
  EXPECT_EQ(timeout.calls, 1);
  EXPECT_EQ(timeout.tokens, 5000);
  EXPECT_DOUBLE_EQ(timeout.usd, 0.5);
  const auto denied = llm::used_by_failure({llm::call_error::unauthorized, "", 401, 1}, worst);
  EXPECT_EQ(denied.calls, 1);
  EXPECT_EQ(denied.tokens, 0);
  EXPECT_DOUBLE_EQ(denied.usd, 0.0);
  worst.usd = std::numeric_limits<double>::infinity();  // no price known
  EXPECT_DOUBLE_EQ(llm::used_by_failure({llm::call_error::server, "", 500, 4}, worst).usd, 0.0);
}

TEST(metered, every_call_is_recorded_with_its_template_and_no_key) {
  const std::string key = "sk-lathe-test-0123456789abcdef";
  lathe::testing::temp_dir dir;
  auto db = store::open(dir / "lathe.db");
  ASSERT_TRUE(db) << db.error().message;
  llm::call_log log(
      *db, llm::call_identity{std::string("run-1"), "openai", "gpt-test", llm::price{1, 1}}, {key});

  kernel_bundle k = softmax_expert();
  k.sources["kernel.cpp"] = "// deploy key " + key + "\n" + k.sources.at("kernel.cpp");
  k.hash = bundle_hash(k);
  auto inner = std::make_unique<scripted>();
  scripted* model = inner.get();
  model->say_text("the key is " + key);  // not JSON
  model->say(
      json{{"action", "x"},
           {"locus", "f"},
           {"removes", {"omp_parallel"}},
           {"rationale", key},
           {"edits", search_replace("kernel.cpp", "no such line\n", "")}});  // does not apply
  model->say(good_reply(key));
  llm::limits l;
  l.calls = 3;
  llm::ledger budget(l);
  llm::meter m;
  m.budget = &budget;
  m.log = &log;
  m.cost = llm::price{1, 1};
  m.max_seconds = 60;
  llm::metered_provider metered(std::move(inner), m);
  llm_proposer p(metered, prompts());
  auto got = p.propose_backward(backward(k));
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(got->calls, 3);
  // A fourth call is refused by the budget, and recorded as refused.
  auto refused = p.propose_backward(backward(k));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, failure_kind::budget);
  EXPECT_EQ(model->seen.size(), 3u);

  auto calls = db->llm_calls(std::string("run-1"));
  ASSERT_TRUE(calls) << calls.error().message;
  ASSERT_EQ(calls->size(), 4u);
  EXPECT_EQ((*calls)[0].template_id, "propose_backward");
  EXPECT_EQ((*calls)[1].template_id, "propose_backward/repair");
  EXPECT_EQ((*calls)[2].template_id, "propose_backward/repair");
  EXPECT_EQ((*calls)[3].template_id, "propose_backward");
  for (const auto& c : *calls) EXPECT_EQ(c.template_version, 2);
  EXPECT_NE((*calls)[1].fields_hash, (*calls)[2].fields_hash);
  EXPECT_EQ((*calls)[2].error_kind, "none");
  EXPECT_EQ((*calls)[3].error_kind, "budget");
  EXPECT_FALSE((*calls)[3].reply.has_value());
  EXPECT_TRUE(has((*calls)[2].prompt, "lathe-feedback: edit_not_applied"));
  for (const auto& c : *calls) {
    EXPECT_FALSE(has(c.prompt, key));
    EXPECT_FALSE(has(c.reply.value_or(""), key));
    EXPECT_FALSE(has(c.error_message, key));
  }
  EXPECT_TRUE(has((*calls)[0].prompt, "[redacted]"));
  EXPECT_TRUE(has(*(*calls)[0].reply, "the key is [redacted]"));
  // Nor anywhere in the database file.
  std::ifstream in(dir / "lathe.db", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_FALSE(has(bytes, key));
}

}  // namespace
}  // namespace lathe::agent::test
