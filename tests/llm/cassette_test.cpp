// Cassettes (llm/cassette.h): record/replay round trip byte for byte, repeated calls, missing and
// stale cassettes that name the nearest recording, keys never written.
#include "llm/cassette.h"
#include "llm/rerun.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "core/test_util.h"

namespace lathe::llm {
namespace {

namespace fs = std::filesystem;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A model that answers with scripted replies, one per call, and counts its calls.
class scripted_provider final : public provider {
 public:
  explicit scripted_provider(std::vector<std::string> replies) : replies_(std::move(replies)) {}
  std::string name() const override { return "scripted/test"; }
  call_result call(const request& r, const cancel_token*) override {
    if (calls_ >= replies_.size()) {
      call_failure f;
      f.kind = call_error::server;
      f.message = "out of replies";
      return tl::unexpected(f);
    }
    response resp;
    resp.text = replies_[calls_++];
    resp.tokens_in = static_cast<int64_t>(r.system.size());
    resp.tokens_out = static_cast<int64_t>(resp.text.size());
    resp.finish = finish_reason::length;
    resp.latency_seconds = 1.25;
    resp.request_id = "req-" + std::to_string(calls_);
    resp.model = "scripted-1";
    resp.attempts = 2;
    return resp;
  }
  size_t calls() const { return calls_; }

 private:
  std::vector<std::string> replies_;
  size_t calls_ = 0;
};

request templated(const std::string& id, int32_t version, const std::string& fields_hash,
                  const std::string& user = "Kernel: ...") {
  request r;
  r.system = "You optimize kernels.";
  r.messages.push_back({"user", user});
  r.template_id = id;
  r.template_version = version;
  r.fields_hash = fields_hash;
  return r;
}

const std::string h1 = "0123456789abcdef0123456789abcdef";
const std::string tag = sampling_tag(request{});  // a request's defaults: "t0-pnone-m4096"
const std::string h2 = "fedcba9876543210fedcba9876543210";

TEST(cassette, record_then_replay_is_byte_for_byte) {
  test::temp_dir tmp;
  // Unicode, CRLF, trailing blanks, a NUL and bytes that are not UTF-8 (stored as base64).
  const std::string tricky = "Résumé → ok\r\n  trailing  \n\t{\"json\": true}\n";
  const std::string binary = std::string("a\0b\xff\xfe", 5) + "tail";
  auto inner = std::make_unique<scripted_provider>(std::vector<std::string>{tricky, binary});
  record_provider rec(std::move(inner), tmp / "c");
  EXPECT_EQ(rec.name(), "scripted/test");
  auto live1 = rec.call(templated("propose_backward", 1, h1));
  auto live2 = rec.call(templated("propose_backward", 1, h2));
  ASSERT_TRUE(live1.has_value() && live2.has_value());
  EXPECT_TRUE(fs::exists(tmp / "c/propose_backward/v1" / (h1 + "." + tag + ".0.json")));

  replay_provider rep(tmp / "c");
  auto back2 = rep.call(templated("propose_backward", 1, h2));  // order across keys is free
  auto back1 = rep.call(templated("propose_backward", 1, h1));
  ASSERT_TRUE(back1.has_value()) << back1.error().message;
  ASSERT_TRUE(back2.has_value()) << back2.error().message;
  EXPECT_EQ(back1->text, tricky);
  EXPECT_EQ(back2->text, binary);
  EXPECT_EQ(back1->tokens_in, live1->tokens_in);
  EXPECT_EQ(back1->tokens_out, live1->tokens_out);
  EXPECT_EQ(back1->finish, finish_reason::length);
  EXPECT_EQ(back1->model, "scripted-1");
  EXPECT_EQ(back1->request_id, "req-1");
  EXPECT_EQ(back1->attempts, 2);
  EXPECT_DOUBLE_EQ(back1->latency_seconds, 1.25);
}

TEST(cassette, repeated_identical_calls_replay_in_order_then_fail) {
  test::temp_dir tmp;
  {
    record_provider rec(
        std::make_unique<scripted_provider>(std::vector<std::string>{"first", "second"}),
        tmp / "c");
    ASSERT_TRUE(rec.call(templated("mutate", 2, h1)).has_value());
    ASSERT_TRUE(rec.call(templated("mutate", 2, h1)).has_value());
  }
  replay_provider rep(tmp / "c");
  EXPECT_EQ(rep.call(templated("mutate", 2, h1))->text, "first");
  EXPECT_EQ(rep.call(templated("mutate", 2, h1))->text, "second");
  auto third = rep.call(templated("mutate", 2, h1));
  ASSERT_FALSE(third.has_value());
  EXPECT_EQ(third.error().kind, call_error::missing_cassette);
  EXPECT_TRUE(has(third.error().message, "recorded 2 time(s)")) << third.error().message;
}

TEST(cassette, missing_cassette_names_the_nearest_recording) {
  test::temp_dir tmp;
  {
    record_provider rec(std::make_unique<scripted_provider>(std::vector<std::string>{"a", "b"}),
                        tmp / "c");
    ASSERT_TRUE(rec.call(templated("propose_backward", 1, h1)).has_value());
    ASSERT_TRUE(rec.call(templated("repair", 3, h1)).has_value());
  }
  replay_provider rep(tmp / "c");
  // Same template and version, other fields.
  auto other_fields = rep.call(templated("propose_backward", 1, h2));
  ASSERT_FALSE(other_fields.has_value());
  EXPECT_EQ(other_fields.error().kind, call_error::missing_cassette);
  EXPECT_TRUE(has(other_fields.error().message, "same template version with other fields"));
  EXPECT_TRUE(has(other_fields.error().message, h1 + "." + tag + ".0.json")) << other_fields.error().message;
  // Other version.
  auto other_version = rep.call(templated("propose_backward", 2, h1));
  ASSERT_FALSE(other_version.has_value());
  EXPECT_TRUE(has(other_version.error().message, "other versions (v1)"))
      << other_version.error().message;
  // Unknown template: the recorded ones are listed.
  auto unknown = rep.call(templated("mutate", 1, h1));
  ASSERT_FALSE(unknown.has_value());
  EXPECT_TRUE(has(unknown.error().message, "propose_backward")) << unknown.error().message;
  EXPECT_TRUE(has(unknown.error().message, "repair"));
  // An empty directory says so.
  replay_provider empty(tmp / "nothing");
  auto none = empty.call(templated("mutate", 1, h1));
  ASSERT_FALSE(none.has_value());
  EXPECT_TRUE(has(none.error().message, "holds no cassettes"));
}

TEST(cassette, a_changed_prompt_under_the_same_key_is_stale) {
  test::temp_dir tmp;
  record_provider rec(std::make_unique<scripted_provider>(std::vector<std::string>{"x"}),
                      tmp / "c");
  ASSERT_TRUE(rec.call(templated("repair", 1, h1, "Fix this.")).has_value());
  replay_provider rep(tmp / "c");
  auto stale = rep.call(templated("repair", 1, h1, "Fix this, please."));
  ASSERT_FALSE(stale.has_value());
  EXPECT_EQ(stale.error().kind, call_error::missing_cassette);
  EXPECT_TRUE(has(stale.error().message, "stale cassette")) << stale.error().message;
}

TEST(cassette, untemplated_requests_are_keyed_by_their_prompt) {
  test::temp_dir tmp;
  request q;
  q.messages.push_back({"user", "ping"});
  record_provider rec(std::make_unique<scripted_provider>(std::vector<std::string>{"pong"}),
                      tmp / "c");
  ASSERT_TRUE(rec.call(q).has_value());
  EXPECT_TRUE(fs::exists(tmp / "c/_raw/v0" / (prompt_hash(q) + "." + tag + ".0.json")));
  replay_provider rep(tmp / "c");
  EXPECT_EQ(rep.call(q)->text, "pong");
  q.messages[0].content = "ping!";
  EXPECT_FALSE(rep.call(q).has_value());
}

TEST(cassette, keys_never_reach_a_cassette) {
  test::temp_dir tmp;
  const std::string key = "sk-test-0123456789abcdef";
  setenv("OPENAI_API_KEY", key.c_str(), 1);
  record_provider rec(std::make_unique<scripted_provider>(
                          std::vector<std::string>{"the key is " + key + ", twice: " + key}),
                      tmp / "c");
  auto live = rec.call(templated("repair", 1, h1));
  unsetenv("OPENAI_API_KEY");
  ASSERT_TRUE(live.has_value());
  const std::string file = test::read_text(tmp / "c/repair/v1" / (h1 + "." + tag + ".0.json"));
  ASSERT_FALSE(file.empty());
  EXPECT_FALSE(has(file, key));
  EXPECT_TRUE(has(file, "[redacted:OPENAI_API_KEY], twice: [redacted:OPENAI_API_KEY]"));
  EXPECT_TRUE(has(file, "\"schema\": \"lathe.cassette/1\""));
  EXPECT_FALSE(has(file, "Kernel: ..."));  // a summary of the request, not its text
}

TEST(cassette, failed_calls_are_not_recorded) {
  test::temp_dir tmp;
  record_provider rec(std::make_unique<scripted_provider>(std::vector<std::string>{}), tmp / "c");
  auto r = rec.call(templated("repair", 1, h1));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, call_error::server);
  EXPECT_FALSE(fs::exists(tmp / "c/repair"));
}

// agent/ask.cpp asks again after an invalid reply as "<id>/repair" with "<hash>:<attempt>": a
// recorded run with a repair round must replay, the round keyed apart from the first ask.
TEST(cassette, repair_rounds_are_recorded_and_replayed) {
  test::temp_dir tmp;
  request first = templated("mutate", 2, h1);
  request again = first;
  again.messages.push_back({"assistant", "not json"});
  again.messages.push_back({"user", "lathe-feedback: invalid\nReply again."});
  again.template_id = "mutate/repair";
  again.fields_hash = h1 + ":1";
  record_provider rec(
      std::make_unique<scripted_provider>(std::vector<std::string>{"not json", "{\"ok\": 1}"}),
      tmp / "c");
  ASSERT_TRUE(rec.call(first).has_value());
  auto live = rec.call(again);
  ASSERT_TRUE(live.has_value()) << live.error().message;
  EXPECT_TRUE(fs::exists(tmp / "c/mutate_repair/v2"));
  replay_provider rep(tmp / "c");
  EXPECT_EQ(rep.call(first)->text, "not json");
  auto replayed = rep.call(again);
  ASSERT_TRUE(replayed.has_value()) << replayed.error().message;
  EXPECT_EQ(replayed->text, "{\"ok\": 1}");
  request second = again;  // a second round is its own cassette: none was recorded
  second.fields_hash = h1 + ":2";
  EXPECT_FALSE(rep.call(second).has_value());
  EXPECT_FALSE(key_of(templated("mutate/repair", 2, h1 + ":x")).has_value());
}

// A v2 request carries its prompt key (the prompt without this machine's and this run's facts):
// the cassette is checked against it, so another machine's numbers replay, a changed template
// does not.
TEST(cassette, a_prompt_key_stands_for_the_first_message_and_a_changed_one_is_stale) {
  test::temp_dir tmp;
  request here = templated("mutate", 2, h1, "kernel k, 1.00 ms on 2 cores");
  here.prompt_key = "aa11";
  record_provider rec(std::make_unique<scripted_provider>(std::vector<std::string>{"reply"}),
                      tmp / "c");
  ASSERT_TRUE(rec.call(here).has_value());
  replay_provider rep(tmp / "c");
  request there = here;
  there.messages[0].content = "kernel k, 815 us on 16 cores";
  auto same = rep.call(there);
  ASSERT_TRUE(same.has_value()) << same.error().message;
  EXPECT_EQ(same->text, "reply");
  replay_provider rep2(tmp / "c");
  request changed = here;
  changed.prompt_key = "bb22";
  auto stale = rep2.call(changed);
  ASSERT_FALSE(stale.has_value());
  EXPECT_TRUE(has(stale.error().message, "stale cassette")) << stale.error().message;
}

TEST(cassette, keys_that_cannot_name_files_are_refused) {
  EXPECT_FALSE(key_of(templated("../x", 1, h1)).has_value());
  EXPECT_FALSE(key_of(templated("repair", 1, "../../etc")).has_value());
  EXPECT_TRUE(key_of(templated("repair", 1, h1)).has_value());
}

TEST(cassette, sampling_settings_are_in_the_key) {
  EXPECT_EQ(tag, "t0-pnone-m4096");
  test::temp_dir tmp;
  request warm = templated("mutate", 1, h1);
  warm.temperature = 0.6;
  warm.top_p = 0.95;
  EXPECT_EQ(sampling_tag(warm), "t0.6-p0.95-m4096");
  {
    record_provider rec(std::make_unique<scripted_provider>(std::vector<std::string>{"cold", "warm"}),
                        tmp / "c");
    ASSERT_TRUE(rec.call(templated("mutate", 1, h1)).has_value());
    ASSERT_TRUE(rec.call(warm).has_value());
  }
  EXPECT_TRUE(fs::exists(tmp / "c/mutate/v1" / (h1 + ".t0.6-p0.95-m4096.0.json")));
  replay_provider rep(tmp / "c");
  EXPECT_EQ(rep.call(warm)->text, "warm");  // the same prompt, its own recording per setting
  EXPECT_EQ(rep.call(templated("mutate", 1, h1))->text, "cold");
  request hot = warm;
  hot.temperature = 1.0;
  auto missing = rep.call(hot);
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().kind, call_error::missing_cassette);
  EXPECT_TRUE(has(missing.error().message, "recorded with other sampling settings")) << missing.error().message;
  // A cassette recorded before the settings were in its name: read when its recorded settings
  // are the call's, stale otherwise.
  test::temp_dir old;
  fs::create_directories(old / "c/mutate/v1");
  fs::copy_file(tmp / "c/mutate/v1" / (h1 + ".t0.6-p0.95-m4096.0.json"), old / "c/mutate/v1" / (h1 + ".0.json"));
  replay_provider legacy(old / "c");
  EXPECT_EQ(legacy.call(warm)->text, "warm");
  replay_provider legacy2(old / "c");
  auto stale = legacy2.call(hot);
  ASSERT_FALSE(stale.has_value());
  EXPECT_TRUE(has(stale.error().message, "recorded with temperature 0.6, this call asks with 1.0")) << stale.error().message;
}

}  // namespace
}  // namespace lathe::llm

namespace lathe::llm {
namespace {

llm_call recorded_call(const std::string& fields, const std::string& reply, const std::string& error = "none") {
  llm_call c;
  c.provider = "scripted";
  c.model = "scripted-1";
  c.template_id = "mutate";
  c.template_version = 1;
  c.fields_hash = fields;
  c.prompt = "{}";
  c.reply = reply;
  c.tokens_in = 100;
  c.tokens_out = 20;
  c.cost_usd = 0.01;
  c.error_kind = error;
  return c;
}

request templated(const std::string& fields) {
  request r;
  r.system = "sys";
  r.messages = {{"user", "u"}};
  r.template_id = "mutate";
  r.template_version = 1;
  r.fields_hash = fields;
  return r;
}

// A resumed run's calls come back from the call log, in order per prompt; the rest go to the
// model; failed recordings are asked again; every answer from the log is charged to the ledger.
TEST(rerun, recorded_calls_are_answered_from_the_log_and_charged_again) {
  auto inner = std::make_unique<scripted_provider>(std::vector<std::string>{"live 1", "live 2", "live 3"});
  scripted_provider* model = inner.get();
  ledger budget(limits{});
  rerun_provider p(std::move(inner),
                   {recorded_call("aaa", "logged a0"), recorded_call("bbb", "", "timeout"),
                    recorded_call("aaa", "logged a1")},
                   &budget);
  EXPECT_EQ(p.call(templated("aaa"))->text, "logged a0");
  EXPECT_EQ(p.call(templated("aaa"))->text, "logged a1");  // the second identical call: the second recording
  EXPECT_EQ(model->calls(), 0u);
  EXPECT_EQ(p.call(templated("aaa"))->text, "live 1");     // a third one was never made: asked
  EXPECT_EQ(p.call(templated("bbb"))->text, "live 2");     // the recording failed: asked again
  request raw = templated("aaa");
  raw.template_id.clear();
  EXPECT_EQ(p.call(raw)->text, "live 3");                   // no template: never from the log
  EXPECT_EQ(model->calls(), 3u);
  EXPECT_EQ(p.answered_from_log(), 2);
  EXPECT_EQ(budget.spent().calls, 2);
  EXPECT_EQ(budget.spent().tokens, 240);
  EXPECT_DOUBLE_EQ(budget.spent().usd, 0.02);
}

}  // namespace
}  // namespace lathe::llm
