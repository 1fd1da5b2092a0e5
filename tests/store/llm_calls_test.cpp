// Model calls in the store (schema v4): round trip of every field, prompts and replies as
// content-addressed blobs, selection by run, refusal of incomplete records.
#include <gtest/gtest.h>

#include "core/hash.h"
#include "store/raw_db.h"
#include "store/sample_data.h"
#include "store/store.h"
#include "store/temp_dir.h"

namespace lathe {
namespace {

using testing::temp_dir;

store open_ok(const std::filesystem::path& file) {
  auto s = store::open(file);
  if (!s) ADD_FAILURE() << s.error().message;
  return std::move(*s);
}

TEST(llm_calls, round_trip_keeps_every_field) {
  temp_dir dir;
  store s = open_ok(dir / "lathe.db");
  const llm_call in = testing::sample_llm_call("run-7");
  const int64_t id = s.add_llm_call(in).value();
  EXPECT_EQ(id, 1);
  auto all = s.llm_calls(std::nullopt).value();
  ASSERT_EQ(all.size(), 1u);
  const llm_call& out = all[0];
  EXPECT_EQ(out.id, 1);
  EXPECT_EQ(out.created_at.size(), 24u) << out.created_at;  // 2025-01-02T03:04:05.678Z
  EXPECT_EQ(out.run_id, in.run_id);
  EXPECT_EQ(out.provider, in.provider);
  EXPECT_EQ(out.model, in.model);
  EXPECT_EQ(out.template_id, in.template_id);
  EXPECT_EQ(out.template_version, in.template_version);
  EXPECT_EQ(out.fields_hash, in.fields_hash);
  EXPECT_EQ(out.prompt, in.prompt);
  EXPECT_EQ(out.reply, in.reply);
  EXPECT_EQ(out.tokens_in, in.tokens_in);
  EXPECT_EQ(out.tokens_out, in.tokens_out);
  ASSERT_TRUE(out.cost_usd.has_value());
  EXPECT_DOUBLE_EQ(*out.cost_usd, *in.cost_usd);
  EXPECT_DOUBLE_EQ(out.latency_seconds, in.latency_seconds);
  EXPECT_EQ(out.finish_reason, in.finish_reason);
  EXPECT_EQ(out.error_kind, "none");
  EXPECT_EQ(out.error_message, "");
  EXPECT_EQ(out.attempts, in.attempts);
  EXPECT_EQ(out.request_id, in.request_id);

  // The prompt and the reply are blobs under their content hash, not copies in the row.
  auto raw = testing::open_raw(dir / "lathe.db");
  EXPECT_EQ(testing::query(raw.get(), "SELECT prompt_blob FROM llm_calls"),
            content_hash(in.prompt));
  EXPECT_EQ(testing::query(raw.get(), "SELECT reply_blob FROM llm_calls"), content_hash(*in.reply));
}

TEST(llm_calls, a_failed_call_keeps_no_reply_and_an_unknown_cost) {
  temp_dir dir;
  store s = open_ok(dir / "lathe.db");
  llm_call c = testing::sample_llm_call(std::nullopt);
  c.reply.reset();
  c.cost_usd.reset();
  c.tokens_in = c.tokens_out = 0;
  c.finish_reason = "error";
  c.error_kind = "timeout";
  c.error_message = "no reply within 120 s after 4 attempts";
  c.attempts = 4;
  ASSERT_TRUE(s.add_llm_call(c).has_value());
  auto got = s.llm_calls(std::nullopt).value();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FALSE(got[0].run_id.has_value());
  EXPECT_FALSE(got[0].reply.has_value());
  EXPECT_FALSE(got[0].cost_usd.has_value());  // unknown, not free
  EXPECT_EQ(got[0].error_kind, "timeout");
  EXPECT_EQ(got[0].error_message, c.error_message);
  EXPECT_EQ(got[0].attempts, 4);
  auto raw = testing::open_raw(dir / "lathe.db");
  EXPECT_EQ(testing::query_int(raw.get(),
                               "SELECT count(*) FROM llm_calls WHERE reply_blob IS NULL "
                               "AND cost_usd IS NULL AND run_id IS NULL"),
            1);
}

TEST(llm_calls, selected_by_run_oldest_first_and_prompts_dedup) {
  temp_dir dir;
  store s = open_ok(dir / "lathe.db");
  llm_call a = testing::sample_llm_call("run-a");
  llm_call b = testing::sample_llm_call("run-b");
  b.reply = "a different reply";
  llm_call a2 = testing::sample_llm_call("run-a");
  a2.template_id = "repair";
  llm_call none = testing::sample_llm_call(std::nullopt);
  for (const llm_call* c : {&a, &b, &a2, &none}) ASSERT_TRUE(s.add_llm_call(*c).has_value());

  auto run_a = s.llm_calls("run-a").value();
  ASSERT_EQ(run_a.size(), 2u);
  EXPECT_EQ(run_a[0].template_id, "propose_backward");
  EXPECT_EQ(run_a[1].template_id, "repair");
  EXPECT_LT(run_a[0].id, run_a[1].id);
  auto run_b = s.llm_calls("run-b").value();
  ASSERT_EQ(run_b.size(), 1u);
  EXPECT_EQ(run_b[0].reply, "a different reply");
  EXPECT_TRUE(s.llm_calls("run-c").value().empty());
  EXPECT_EQ(s.llm_calls(std::nullopt).value().size(), 4u);

  // Four calls with one prompt: one prompt blob; two distinct replies: two more.
  auto raw = testing::open_raw(dir / "lathe.db");
  EXPECT_EQ(testing::query_int(raw.get(), "SELECT count(DISTINCT prompt_blob) FROM llm_calls"), 1);
  EXPECT_EQ(testing::query_int(raw.get(), "SELECT count(*) FROM blobs"), 3);
}

TEST(llm_calls, incomplete_records_are_refused_and_nothing_is_written) {
  temp_dir dir;
  store s = open_ok(dir / "lathe.db");
  struct bad_case {
    const char* what;
    void (*spoil)(llm_call&);
  };
  const bad_case cases[] = {
      {"provider", [](llm_call& c) { c.provider.clear(); }},
      {"template", [](llm_call& c) { c.template_id.clear(); }},
      {"prompt", [](llm_call& c) { c.prompt.clear(); }},
      {"negative token", [](llm_call& c) { c.tokens_out = -1; }},
      {"attempts", [](llm_call& c) { c.attempts = -2; }},
      {"cost", [](llm_call& c) { c.cost_usd = -0.5; }},
  };
  for (const auto& bc : cases) {
    SCOPED_TRACE(bc.what);
    llm_call c = testing::sample_llm_call("run-1");
    bc.spoil(c);
    auto r = s.add_llm_call(c);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code, errc::invalid_argument);
    EXPECT_NE(r.error().message.find(bc.what), std::string::npos) << r.error().message;
  }
  auto raw = testing::open_raw(dir / "lathe.db");
  EXPECT_EQ(testing::query_int(raw.get(), "SELECT count(*) FROM llm_calls"), 0);
  EXPECT_EQ(testing::query_int(raw.get(), "SELECT count(*) FROM blobs"), 0);
}

}  // namespace
}  // namespace lathe
