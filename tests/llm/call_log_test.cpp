// Model calls stored append-only (llm/call_log.h), and key hygiene: a key planted in the
// environment and quoted in every field of a request, a reply and an error never reaches the
// database file.
#include "llm/call_log.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "store/temp_dir.h"

namespace lathe::llm {
namespace {

namespace fs = std::filesystem;
using lathe::testing::temp_dir;

request sample_request() {
  request r;
  r.system = "You are a kernel engineer.";
  r.messages = {{"user", "Remove one optimization from kernel.cpp."},
                {"assistant", "{\"action\": \"unroll\"}"},
                {"user", "That edit did not apply; try again."}};
  r.temperature = 0.2;
  r.top_p = 0.9;
  r.max_tokens = 2048;
  r.stop = {"</edit>"};
  r.json_schema = R"({"type":"object"})";
  r.template_id = "propose_backward";
  r.template_version = 2;
  r.fields_hash = "0123456789abcdef0123456789abcdef";
  return r;
}

response sample_response() {
  response resp;
  resp.text = R"({"action":"unvectorize","locus":"kernel/i"})";
  resp.tokens_in = 1500;
  resp.tokens_out = 500;
  resp.finish = finish_reason::stop;
  resp.latency_seconds = 4.25;
  resp.request_id = "req_42";
  resp.model = "gpt-4o-2024-08-06";
  resp.attempts = 2;
  return resp;
}

store open_store(const fs::path& file) {
  auto s = store::open(file);
  if (!s) ADD_FAILURE() << s.error().message;
  return std::move(*s);
}

// Every byte the store left in its directory: the database, its WAL and shared memory.
std::string all_bytes(const fs::path& dir) {
  std::string out;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::ifstream in(e.path(), std::ios::binary);
    out.append(std::istreambuf_iterator<char>(in), {});
  }
  return out;
}

TEST(call_log, stores_the_rendered_request_reply_cost_and_template) {
  temp_dir dir;
  store db = open_store(dir / "lathe.db");
  call_identity id{"run-9", "openai", "gpt-4o", price{2.5, 10.0}};
  call_log log(db, id, {});
  const request r = sample_request();
  ASSERT_TRUE(log.record(r, sample_response()).has_value());

  auto calls = db.llm_calls("run-9").value();
  ASSERT_EQ(calls.size(), 1u);
  const lathe::llm_call& c = calls[0];
  EXPECT_EQ(c.provider, "openai");
  EXPECT_EQ(c.model, "gpt-4o-2024-08-06");  // the model that answered
  EXPECT_EQ(c.template_id, "propose_backward");
  EXPECT_EQ(c.template_version, 2);
  EXPECT_EQ(c.fields_hash, r.fields_hash);
  EXPECT_EQ(c.reply, sample_response().text);
  EXPECT_EQ(c.tokens_in, 1500);
  EXPECT_EQ(c.tokens_out, 500);
  ASSERT_TRUE(c.cost_usd.has_value());
  EXPECT_DOUBLE_EQ(*c.cost_usd, (1500 * 2.5 + 500 * 10.0) / 1e6);
  EXPECT_DOUBLE_EQ(c.latency_seconds, 4.25);
  EXPECT_EQ(c.finish_reason, "stop");
  EXPECT_EQ(c.error_kind, "none");
  EXPECT_EQ(c.attempts, 2);
  EXPECT_EQ(c.request_id, "req_42");

  // The prompt is the request, whole, as JSON: enough to send it again.
  auto j = nlohmann::json::parse(c.prompt);
  EXPECT_EQ(j["system"], r.system);
  ASSERT_EQ(j["messages"].size(), 3u);
  EXPECT_EQ(j["messages"][1]["role"], "assistant");
  EXPECT_EQ(j["messages"][2]["content"], r.messages[2].content);
  EXPECT_DOUBLE_EQ(j["temperature"].get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(j["top_p"].get<double>(), 0.9);
  EXPECT_EQ(j["max_tokens"], 2048);
  EXPECT_EQ(j["stop"], nlohmann::json::array({"</edit>"}));
  EXPECT_EQ(j["json_schema"], r.json_schema);
  EXPECT_EQ(j["template_id"], "propose_backward");
  // Nothing but the request's fields: no headers, no provider settings.
  EXPECT_EQ(j.size(), 10u) << j.dump();
  // The same request asked again is the same blob.
  EXPECT_EQ(request_record(r, {}), c.prompt);
}

TEST(call_log, a_failure_is_stored_with_its_kind_and_without_a_reply) {
  temp_dir dir;
  store db = open_store(dir / "lathe.db");
  call_log log(db, call_identity{std::nullopt, "anthropic", "claude-x", std::nullopt}, {});
  call_failure f{call_error::rate_limited, "429 after 4 attempts (Retry-After: 30)", 429, 4};
  ASSERT_TRUE(log.record(sample_request(), tl::unexpected(f), 95.5).has_value());
  auto calls = db.llm_calls(std::nullopt).value();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_FALSE(calls[0].run_id.has_value());
  EXPECT_EQ(calls[0].model, "claude-x");
  EXPECT_FALSE(calls[0].reply.has_value());
  EXPECT_FALSE(calls[0].cost_usd.has_value());  // no price: unknown, not free
  EXPECT_EQ(calls[0].finish_reason, "error");
  EXPECT_EQ(calls[0].error_kind, "rate_limited");
  EXPECT_EQ(calls[0].error_message, "HTTP 429: 429 after 4 attempts (Retry-After: 30)");
  EXPECT_EQ(calls[0].attempts, 4);
  EXPECT_DOUBLE_EQ(calls[0].latency_seconds, 95.5);
}

TEST(call_log, a_planted_key_never_reaches_the_database_file) {
  const std::string key = "sk-lathe-test-Zq8VwX3nK5mR7tY1uB4cD6eF";
  ::setenv("LATHE_TEST_LLM_KEY", key.c_str(), 1);
  temp_dir dir;
  std::ofstream(dir / "lathe.toml") << "provider = \"openai\"\nmodel = \"gpt-4o\"\n"
                                       "key_env = \"LATHE_TEST_LLM_KEY\"\n";
  auto cfg = load_config(dir / "lathe.toml", process_env());
  ASSERT_TRUE(cfg.has_value()) << cfg.error().message;
  const auto secrets = secret_values(&*cfg, process_env());
  ASSERT_NE(std::find(secrets.begin(), secrets.end(), key), secrets.end());

  const fs::path db_dir = dir / "db";
  fs::create_directories(db_dir);
  {
    store db = open_store(db_dir / "lathe.db");
    call_log log(db, identity_of(*cfg, "run-k"), secrets);
    // The key everywhere a request, a reply or an error can carry text; and a marker beside
    // it, to show that the scan below reads what was stored.
    request r = sample_request();
    r.system += " MARKER-SYSTEM Authorization: Bearer " + key;
    r.messages[0].content += "\nexport OPENAI_API_KEY=" + key + " MARKER-MESSAGE";
    r.stop.push_back(key);
    r.json_schema = "{\"description\": \"" + key + "\"}";
    r.template_id = "repair";
    r.fields_hash = key;
    response resp = sample_response();
    resp.text = "I found your key: " + key + " MARKER-REPLY";
    resp.request_id = key;
    resp.model = key;
    ASSERT_TRUE(log.record(r, resp).has_value());
    call_failure f{call_error::unauthorized, "401 for x-api-key " + key + " MARKER-ERROR", 401, 1};
    ASSERT_TRUE(log.record(r, tl::unexpected(f)).has_value());

    auto calls = db.llm_calls("run-k").value();
    ASSERT_EQ(calls.size(), 2u);
    EXPECT_NE(calls[0].prompt.find("[redacted]"), std::string::npos);
    EXPECT_NE(calls[0].reply->find("I found your key: [redacted]"), std::string::npos);
    EXPECT_NE(calls[1].error_message.find("x-api-key [redacted]"), std::string::npos);
  }
  const std::string bytes = all_bytes(db_dir);
  for (const char* marker : {"MARKER-SYSTEM", "MARKER-MESSAGE", "MARKER-REPLY", "MARKER-ERROR"})
    EXPECT_NE(bytes.find(marker), std::string::npos) << marker << " was not stored as text";
  EXPECT_EQ(bytes.find(key), std::string::npos) << "the key reached the database";
  // Nor a good part of it (a key split by escaping would leave its tail).
  EXPECT_EQ(bytes.find(key.substr(12)), std::string::npos);
  ::unsetenv("LATHE_TEST_LLM_KEY");
}

TEST(call_log, records_from_several_threads_all_arrive) {
  temp_dir dir;
  store db = open_store(dir / "lathe.db");
  call_log log(db, call_identity{"run-t", "openai", "m", price{1, 1}}, {});
  std::vector<std::thread> pool;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t)
    pool.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        request r = sample_request();
        r.messages[0].content += " " + std::to_string(t) + "/" + std::to_string(i);
        if (!log.record(r, sample_response())) ++failures;
      }
    });
  for (auto& th : pool) th.join();
  EXPECT_EQ(failures.load(), 0);
  auto calls = db.llm_calls("run-t").value();
  ASSERT_EQ(calls.size(), 100u);
  std::set<std::string> prompts;
  for (const auto& c : calls) prompts.insert(c.prompt);
  EXPECT_EQ(prompts.size(), 100u);
}

}  // namespace
}  // namespace lathe::llm
