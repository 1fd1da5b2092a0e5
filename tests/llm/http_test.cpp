// The HTTP transport and the openai / anthropic providers against a real HTTP server on
// 127.0.0.1 (cpp-httplib) that speaks both protocols and fails on purpose: what goes on the wire,
// which failures are retried and how far apart, Retry-After, timeouts, cancellation, the bound on
// calls in flight, and that the key never shows up in a failure or a log line.
#include "llm/anthropic.h"
#include "llm/http.h"
#include "llm/openai.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace lathe::llm {
namespace {

using json = nlohmann::json;
using steady = std::chrono::steady_clock;

// The secret that must never leave the request headers.
constexpr const char* kKey = "sk-lathe-test-7f3a9c2e51d04b8a";
constexpr const char* kKeyEnv = "LATHE_HTTP_TEST_KEY";

double seconds_since(steady::time_point t) {
  return std::chrono::duration<double>(steady::now() - t).count();
}

struct seen_request {
  std::string path;
  httplib::Headers headers;
  std::string body;
  double at = 0;  // seconds since the server started

  std::string header(const std::string& name) const {
    auto it = headers.find(name);  // httplib compares header names case-insensitively
    return it == headers.end() ? std::string("<absent>") : it->second;
  }
  json body_json() const { return json::parse(body); }
};

// One httplib server per test: routes are registered, then start() binds 127.0.0.1 on a free
// port. Every request is recorded with its arrival time; handlers see how many requests their
// path has had (1 for the first), so a route can fail first and succeed later.
class fake_server {
 public:
  using handler = std::function<void(const httplib::Request&, httplib::Response&, int32_t nth)>;

  fake_server() {
    // Enough workers for the concurrency test's callers plus stragglers still napping.
    server_.new_task_queue = [] { return new httplib::ThreadPool(16); };
  }
  ~fake_server() { stop(); }

  void route(const std::string& path, handler h) {
    server_.Post(path, [this, path, h](const httplib::Request& req, httplib::Response& res) {
      int32_t nth = 0;
      {
        std::lock_guard lock(mutex_);
        seen_.push_back({req.path, req.headers, req.body, seconds_since(started_)});
        nth = ++count_[path];
        max_concurrent_ = std::max(max_concurrent_, ++concurrent_);
      }
      h(req, res, nth);
      std::lock_guard lock(mutex_);
      --concurrent_;
    });
  }

  void start() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    started_ = steady::now();
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() before the accept loop runs would be lost and join() would hang.
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  void stop() {
    if (!thread_.joinable()) return;
    stopping_ = true;
    server_.stop();
    thread_.join();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  std::vector<seen_request> requests() const {
    std::lock_guard lock(mutex_);
    return seen_;
  }
  int32_t count() const {
    std::lock_guard lock(mutex_);
    return static_cast<int32_t>(seen_.size());
  }
  int32_t max_concurrent() const {
    std::lock_guard lock(mutex_);
    return max_concurrent_;
  }

  // A slow handler: sleeps up to `s`, sooner when the server is being stopped.
  void nap(double s) const {
    const auto until = steady::now() + std::chrono::duration<double>(s);
    while (!stopping_ && steady::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  steady::time_point started_ = steady::now();
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::vector<seen_request> seen_;
  std::map<std::string, int32_t> count_;
  int32_t concurrent_ = 0, max_concurrent_ = 0;
};

// Every line the client logs, from whichever thread.
struct log_sink {
  std::mutex mutex;
  std::vector<std::string> lines;

  std::function<void(const std::string&)> writer() {
    return [this](const std::string& line) {
      std::lock_guard lock(mutex);
      lines.push_back(line);
    };
  }
  std::string all() {
    std::lock_guard lock(mutex);
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
  }
};

// Fast, deterministic transport settings: jitter pinned to its upper end so a backoff wait is
// exactly base * 2^(n-1).
http_options fast_http(log_sink& logs) {
  http_options o;
  o.connect_timeout_s = 2;
  o.timeout_s = 5;
  o.retry.max_attempts = 3;
  o.retry.base_delay_s = 0.001;
  o.retry.max_delay_s = 0.05;
  o.retry.max_retry_after_s = 5;
  o.max_in_flight = 4;
  o.log = logs.writer();
  o.jitter = [] { return 1.0; };
  return o;
}

openai_options openai_opts(const std::string& base_url, log_sink& logs) {
  openai_options o;
  o.model = "gpt-test";
  o.base_url = base_url;
  o.key_env = kKeyEnv;
  o.http = fast_http(logs);
  return o;
}

anthropic_options anthropic_opts(const std::string& base_url, log_sink& logs) {
  anthropic_options o;
  o.model = "claude-test";
  o.base_url = base_url;
  o.key_env = kKeyEnv;
  o.http = fast_http(logs);
  return o;
}

request simple_request() {
  request r;
  r.system = "You are terse.";
  r.messages = {{"user", "hi"}};
  r.max_tokens = 64;
  return r;
}

std::string openai_reply(const std::string& text, const std::string& finish = "stop") {
  return json{{"id", "chatcmpl-42"},
              {"object", "chat.completion"},
              {"model", "gpt-test-served"},
              {"choices",
               {{{"index", 0},
                 {"message", {{"role", "assistant"}, {"content", text}}},
                 {"finish_reason", finish}}}},
              {"usage", {{"prompt_tokens", 11}, {"completion_tokens", 7}, {"total_tokens", 18}}}}
      .dump();
}

std::string anthropic_reply(const json& content, const std::string& stop_reason) {
  return json{{"id", "msg_01"},
              {"type", "message"},
              {"role", "assistant"},
              {"model", "claude-test-served"},
              {"content", content},
              {"stop_reason", stop_reason},
              {"stop_sequence", nullptr},
              {"usage", {{"input_tokens", 13}, {"output_tokens", 5}}}}
      .dump();
}

void reply_json(httplib::Response& res, int status, const std::string& body) {
  res.status = status;
  res.set_content(body, "application/json");
}

// A failed call must not carry the key in its message, nor may any log line.
void expect_no_key(const call_result& r, log_sink& logs) {
  if (!r) {
    EXPECT_EQ(r.error().message.find(kKey), std::string::npos) << r.error().message;
  }
  EXPECT_EQ(logs.all().find(kKey), std::string::npos) << logs.all();
}

class http_test : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv(kKeyEnv, kKey, 1); }
  void TearDown() override { ::unsetenv(kKeyEnv); }
};

// ---------------------------------------------------------------------------------------------
// Helpers of the transport.

TEST(http_helpers, retry_after_reads_seconds_and_http_dates) {
  const std::time_t now = 1445412475;  // Wed, 21 Oct 2015 07:27:55 GMT
  EXPECT_EQ(parse_retry_after("120", now), 120.0);
  EXPECT_EQ(parse_retry_after(" 0.25 ", now), 0.25);
  EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now), 5.0);
  EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now), 0.0);  // in the past
  EXPECT_FALSE(parse_retry_after("soon", now).has_value());
  EXPECT_FALSE(parse_retry_after("12abc", now).has_value());
  EXPECT_FALSE(parse_retry_after("", now).has_value());
}

TEST(http_helpers, local_urls_and_redaction) {
  EXPECT_TRUE(is_local_url("http://localhost:8000/v1"));
  EXPECT_TRUE(is_local_url("http://127.0.0.1:11434/v1"));
  EXPECT_TRUE(is_local_url("http://[::1]:8080"));
  EXPECT_TRUE(is_local_url("http://user@127.0.0.1/v1"));
  EXPECT_FALSE(is_local_url("https://api.openai.com/v1"));
  EXPECT_FALSE(is_local_url("https://127.0.0.1.evil.example/v1"));
  EXPECT_FALSE(is_local_url("https://localhost.example.com/v1"));
  EXPECT_FALSE(is_local_url("localhost:8000"));  // no scheme: not a URL curl would call locally
  EXPECT_EQ(redact("a sk-1 b sk-1 c", {"sk-1", ""}), "a [redacted] b [redacted] c");
  EXPECT_TRUE(is_secret_header("Authorization"));
  EXPECT_TRUE(is_secret_header("X-Api-Key"));
  EXPECT_FALSE(is_secret_header("anthropic-version"));
}

TEST_F(http_test, key_policies) {
  auto got = resolve_key(kKeyEnv, key_policy::required, "https://api.openai.com/v1");
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, kKey);
  EXPECT_EQ(resolve_key(kKeyEnv, key_policy::none, "https://api.openai.com/v1").value(), "");
  ::unsetenv(kKeyEnv);
  EXPECT_EQ(resolve_key(kKeyEnv, key_policy::when_remote, "http://127.0.0.1:8000/v1").value(), "");
  auto missing = resolve_key(kKeyEnv, key_policy::when_remote, "https://api.openai.com/v1");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind, call_error::unauthorized);
  EXPECT_NE(missing.error().message.find(kKeyEnv), std::string::npos) << missing.error().message;
  EXPECT_FALSE(resolve_key(kKeyEnv, key_policy::required, "http://127.0.0.1:8000/v1"));
}

// ---------------------------------------------------------------------------------------------
// The wire formats.

TEST_F(http_test, openai_sends_chat_completions_and_reads_the_reply) {
  fake_server server;
  server.route("/v1/chat/completions", [](const auto&, auto& res, int32_t) {
    res.set_header("x-request-id", "req_abc123");
    reply_json(res, 200, openai_reply("{\"a\": 1}"));
  });
  server.start();
  log_sink logs;
  openai_provider p(openai_opts(server.url() + "/v1/", logs));
  EXPECT_EQ(p.name(), "openai/gpt-test");
  EXPECT_EQ(p.url(), server.url() + "/v1/chat/completions");

  request r;
  r.system = "You are terse.";
  r.messages = {{"user", "hi"}, {"assistant", "hello"}, {"user", "again"}};
  r.temperature = 0.25;
  r.top_p = 0.5;
  r.max_tokens = 321;
  r.stop = {"###", "END"};
  const std::string schema =
      R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],)"
      R"("additionalProperties":false})";
  r.json_schema = schema;
  auto got = p.call(r);
  ASSERT_TRUE(got) << got.error().message;

  ASSERT_EQ(server.count(), 1);
  const seen_request sent = server.requests()[0];
  EXPECT_EQ(sent.path, "/v1/chat/completions");
  EXPECT_EQ(sent.header("Authorization"), std::string("Bearer ") + kKey);
  EXPECT_EQ(sent.header("Content-Type"), "application/json");
  EXPECT_EQ(sent.header("x-api-key"), "<absent>");
  const json body = sent.body_json();
  EXPECT_EQ(body["model"], "gpt-test");
  ASSERT_EQ(body["messages"].size(), 4u);
  EXPECT_EQ(body["messages"][0], (json{{"role", "system"}, {"content", "You are terse."}}));
  EXPECT_EQ(body["messages"][1], (json{{"role", "user"}, {"content", "hi"}}));
  EXPECT_EQ(body["messages"][2], (json{{"role", "assistant"}, {"content", "hello"}}));
  EXPECT_EQ(body["messages"][3], (json{{"role", "user"}, {"content", "again"}}));
  EXPECT_EQ(body["temperature"], 0.25);
  EXPECT_EQ(body["top_p"], 0.5);
  EXPECT_EQ(body["max_tokens"], 321);
  EXPECT_EQ(body["stop"], (json{"###", "END"}));
  EXPECT_FALSE(body.contains("system"));
  EXPECT_EQ(body["response_format"]["type"], "json_schema");
  EXPECT_EQ(body["response_format"]["json_schema"]["name"], "reply");
  EXPECT_EQ(body["response_format"]["json_schema"]["strict"], true);
  EXPECT_EQ(body["response_format"]["json_schema"]["schema"], json::parse(schema));

  EXPECT_EQ(got->text, "{\"a\": 1}");
  EXPECT_EQ(got->tokens_in, 11);
  EXPECT_EQ(got->tokens_out, 7);
  EXPECT_EQ(got->finish, finish_reason::stop);
  EXPECT_EQ(got->request_id, "req_abc123");
  EXPECT_EQ(got->model, "gpt-test-served");
  EXPECT_EQ(got->attempts, 1);
  EXPECT_GT(got->latency_seconds, 0.0);
  // The log shows the headers it sent, with the key's value replaced.
  EXPECT_NE(logs.all().find("Authorization: [redacted]"), std::string::npos) << logs.all();
  expect_no_key(got, logs);
}

TEST_F(http_test, openai_leaves_out_unset_fields_and_needs_no_key_for_a_local_server) {
  fake_server server;
  server.route("/v1/chat/completions", [](const auto&, auto& res, int32_t) {
    reply_json(res, 200, openai_reply("truncated answ", "length"));
  });
  server.start();
  ::unsetenv(kKeyEnv);
  log_sink logs;
  openai_options o = openai_opts(server.url() + "/v1", logs);
  o.max_tokens_field = "max_completion_tokens";
  openai_provider p(o);
  request r;
  r.messages = {{"user", "hi"}};
  r.max_tokens = 99;
  auto got = p.call(r);
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(got->finish, finish_reason::length);
  EXPECT_EQ(got->request_id, "chatcmpl-42");  // no x-request-id header: the body's id

  const seen_request sent = server.requests().at(0);
  EXPECT_EQ(sent.header("Authorization"), "<absent>");
  const json body = sent.body_json();
  EXPECT_EQ(body["messages"].size(), 1u);
  EXPECT_EQ(body["messages"][0]["role"], "user");  // no empty system message
  EXPECT_EQ(body["max_completion_tokens"], 99);
  for (const char* absent : {"max_tokens", "top_p", "stop", "response_format"})
    EXPECT_FALSE(body.contains(absent)) << absent << " in " << body.dump();
}

TEST_F(http_test, a_missing_key_fails_before_anything_is_sent) {
  fake_server server;
  server.route("/v1/chat/completions", [](const auto&, auto& res, int32_t) {
    reply_json(res, 200, openai_reply("x"));
  });
  server.start();
  ::unsetenv(kKeyEnv);
  log_sink logs;
  openai_provider remote(openai_opts("https://api.example.invalid/v1", logs));
  auto got = remote.call(simple_request());
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind, call_error::unauthorized);
  EXPECT_EQ(got.error().attempts, 0);

  anthropic_provider local(anthropic_opts(server.url(), logs));  // key_policy::required
  auto got2 = local.call(simple_request());
  ASSERT_FALSE(got2);
  EXPECT_EQ(got2.error().kind, call_error::unauthorized);
  EXPECT_NE(got2.error().message.find(kKeyEnv), std::string::npos);
  EXPECT_EQ(server.count(), 0);
}

TEST_F(http_test, anthropic_sends_messages_and_reads_text_blocks) {
  fake_server server;
  server.route("/v1/messages", [](const auto&, auto& res, int32_t) {
    res.set_header("request-id", "req_ant_7");
    const json content = {{{"type", "text"}, {"text", "Hello "}},
                          {{"type", "tool_use"}, {"id", "t1"}, {"name", "x"}, {"input", json::object()}},
                          {{"type", "text"}, {"text", "world"}}};
    reply_json(res, 200, anthropic_reply(content, "stop_sequence"));
  });
  server.start();
  log_sink logs;
  anthropic_provider p(anthropic_opts(server.url() + "/", logs));
  EXPECT_EQ(p.name(), "anthropic/claude-test");

  request r;
  r.system = "You are terse.";
  r.messages = {{"user", "hi"}, {"assistant", "hello"}, {"user", "again"}};
  r.temperature = 0.75;
  r.top_p = 0.5;
  r.max_tokens = 555;
  r.stop = {"</done>"};
  r.json_schema = R"({"type":"object"})";
  auto got = p.call(r);
  ASSERT_TRUE(got) << got.error().message;

  const seen_request sent = server.requests().at(0);
  EXPECT_EQ(sent.path, "/v1/messages");
  EXPECT_EQ(sent.header("x-api-key"), kKey);
  EXPECT_EQ(sent.header("anthropic-version"), "2023-06-01");
  EXPECT_EQ(sent.header("Authorization"), "<absent>");
  const json body = sent.body_json();
  EXPECT_EQ(body["model"], "claude-test");
  EXPECT_EQ(body["max_tokens"], 555);
  EXPECT_EQ(body["system"], "You are terse.");  // top level, not a message
  ASSERT_EQ(body["messages"].size(), 3u);
  for (const auto& m : body["messages"]) EXPECT_NE(m["role"], "system");
  EXPECT_EQ(body["messages"][1], (json{{"role", "assistant"}, {"content", "hello"}}));
  EXPECT_EQ(body["stop_sequences"], (json{"</done>"}));
  EXPECT_EQ(body["temperature"], 0.75);
  EXPECT_EQ(body["top_p"], 0.5);
  for (const char* absent : {"stop", "response_format"}) EXPECT_FALSE(body.contains(absent));

  EXPECT_EQ(got->text, "Hello world");
  EXPECT_EQ(got->tokens_in, 13);
  EXPECT_EQ(got->tokens_out, 5);
  EXPECT_EQ(got->finish, finish_reason::stop_sequence);
  EXPECT_EQ(got->request_id, "req_ant_7");
  EXPECT_EQ(got->model, "claude-test-served");
  expect_no_key(got, logs);
  EXPECT_NE(logs.all().find("x-api-key: [redacted]"), std::string::npos) << logs.all();
}

TEST_F(http_test, anthropic_stop_reasons) {
  fake_server server;
  const std::vector<std::string> reasons = {"end_turn", "max_tokens", "refusal", "tool_use"};
  server.route("/v1/messages", [&](const auto&, auto& res, int32_t nth) {
    reply_json(res, 200, anthropic_reply(json::array({{{"type", "text"}, {"text", "x"}}}),
                                         reasons.at(nth - 1)));
  });
  server.start();
  log_sink logs;
  anthropic_provider p(anthropic_opts(server.url(), logs));
  for (finish_reason want : {finish_reason::stop, finish_reason::length,
                             finish_reason::content_filter, finish_reason::other}) {
    auto got = p.call(simple_request());
    ASSERT_TRUE(got) << got.error().message;
    EXPECT_EQ(got->finish, want) << to_string(got->finish);
  }
}

// ---------------------------------------------------------------------------------------------
// Retries.

TEST_F(http_test, retry_after_on_429_is_honoured) {
  fake_server server;
  server.route("/v1/chat/completions", [](const auto&, auto& res, int32_t nth) {
    if (nth == 1) {
      res.set_header("Retry-After", "1");
      reply_json(res, 429, R"({"error":{"message":"Rate limit reached","type":"requests"}})");
      return;
    }
    reply_json(res, 200, openai_reply("ok"));
  });
  server.start();
  log_sink logs;
  openai_provider p(openai_opts(server.url() + "/v1", logs));  // backoff alone would wait 1 ms
  auto got = p.call(simple_request());
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(got->attempts, 2);
  const auto seen = server.requests();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_GE(seen[1].at - seen[0].at, 1.0);
  EXPECT_GE(got->latency_seconds, 1.0);  // retries count in the latency
  EXPECT_NE(logs.all().find("(Retry-After)"), std::string::npos) << logs.all();
}

TEST_F(http_test, retry_after_is_capped) {
  fake_server server;
  server.route("/v1/messages", [](const auto&, auto& res, int32_t nth) {
    if (nth == 1) {
      res.set_header("retry-after", "3600");
      reply_json(res, 529, R"({"type":"error","error":{"type":"overloaded_error","message":"x"}})");
      return;
    }
    reply_json(res, 200, anthropic_reply(json::array({{{"type", "text"}, {"text", "ok"}}}), "end_turn"));
  });
  server.start();
  log_sink logs;
  anthropic_options o = anthropic_opts(server.url(), logs);
  o.http.retry.max_retry_after_s = 0.2;
  anthropic_provider p(o);
  const auto t0 = steady::now();
  auto got = p.call(simple_request());
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(got->attempts, 2);
  const auto seen = server.requests();
  EXPECT_GE(seen.at(1).at - seen.at(0).at, 0.2);
  EXPECT_LT(seconds_since(t0), 3.0);
}

TEST_F(http_test, server_errors_back_off_exponentially_then_succeed) {
  fake_server server;
  server.route("/v1/chat/completions", [](const auto&, auto& res, int32_t nth) {
    if (nth <= 2) {
      res.status = 500;
      res.set_content("internal error", "text/plain");
      return;
    }
    reply_json(res, 200, openai_reply("third time"));
  });
  server.start();
  log_sink logs;
  openai_options o = openai_opts(server.url() + "/v1", logs);
  o.http.retry.base_delay_s = 0.1;  // jitter pinned to 1: waits of 0.1 s, then 0.2 s
  o.http.retry.max_delay_s = 1.0;
  openai_provider p(o);
  auto got = p.call(simple_request());
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(got->text, "third time");
  EXPECT_EQ(got->attempts, 3);
  const auto seen = server.requests();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_GE(seen[1].at - seen[0].at, 0.1);
  EXPECT_GE(seen[2].at - seen[1].at, 0.2);
}

TEST_F(http_test, the_jitter_scales_the_backoff) {
  fake_server server;
  server.route("/v1/chat/completions", [](const auto&, auto& res, int32_t nth) {
    if (nth == 1) return reply_json(res, 503, R"({"error":{"message":"busy"}})");
    reply_json(res, 200, openai_reply("ok"));
  });
  server.start();
  log_sink logs;
  openai_options o = openai_opts(server.url() + "/v1", logs);
  o.http.retry.base_delay_s = 30;  // the full wait would outlast the test
  o.http.retry.max_delay_s = 30;
  o.http.jitter = [] { return 0.005; };  // 0.15 s of it
  openai_provider p(o);
  const auto t0 = steady::now();
  auto got = p.call(simple_request());
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_LT(seconds_since(t0), 5.0);
  const auto seen = server.requests();
  EXPECT_GE(seen.at(1).at - seen.at(0).at, 0.15);
}

TEST_F(http_test, exhausted_retries_report_the_last_failure) {
  fake_server server;
  server.route("/busy/v1/chat/completions", [](const auto&, auto& res, int32_t) {
    reply_json(res, 503, R"({"error":{"message":"The server is overloaded"}})");
  });
  server.route("/limited/v1/chat/completions", [](const auto&, auto& res, int32_t) {
    reply_json(res, 429, R"({"error":{"message":"quota"}})");
  });
  server.start();
  log_sink logs;
  openai_provider busy(openai_opts(server.url() + "/busy/v1", logs));
  auto got = busy.call(simple_request());
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind, call_error::server);
  EXPECT_EQ(got.error().http_status, 503);
  EXPECT_EQ(got.error().attempts, 3);
  EXPECT_NE(got.error().message.find("The server is overloaded"), std::string::npos);
  EXPECT_NE(got.error().message.find("after 3 attempts"), std::string::npos);
  EXPECT_EQ(server.count(), 3);
  expect_no_key(got, logs);

  openai_provider limited(openai_opts(server.url() + "/limited/v1", logs));
  auto got2 = limited.call(simple_request());
  ASSERT_FALSE(got2);
  EXPECT_EQ(got2.error().kind, call_error::rate_limited);
  EXPECT_EQ(got2.error().attempts, 3);
  EXPECT_EQ(server.count(), 6);
}

// ---------------------------------------------------------------------------------------------
// Failures that are not retried, and how each is classified.

TEST_F(http_test, client_errors_are_not_retried_and_the_key_is_not_echoed) {
  fake_server server;
  server.route("/v1/chat/completions", [](const auto& req, auto& res, int32_t) {
    // Like OpenAI's 401, but quoting the whole key back.
    const std::string auth = req.get_header_value("Authorization");
    reply_json(res, 401,
               json{{"error", {{"message", "Incorrect API key provided: " + auth.substr(7)}}}}.dump());
  });
  server.route("/v1/messages", [](const auto&, auto& res, int32_t) {
    reply_json(res, 400, R"({"type":"error","error":{"type":"invalid_request_error",)"
                         R"("message":"max_tokens: must be positive"}})");
  });
  server.start();
  log_sink logs;
  openai_provider p(openai_opts(server.url() + "/v1", logs));
  auto got = p.call(simple_request());
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind, call_error::unauthorized);
  EXPECT_EQ(got.error().http_status, 401);
  EXPECT_EQ(got.error().attempts, 1);
  EXPECT_NE(got.error().message.find("Incorrect API key provided: [redacted]"), std::string::npos)
      << got.error().message;
  expect_no_key(got, logs);

  anthropic_provider a(anthropic_opts(server.url(), logs));
  auto got2 = a.call(simple_request());
  ASSERT_FALSE(got2);
  EXPECT_EQ(got2.error().kind, call_error::bad_request);
  EXPECT_EQ(got2.error().attempts, 1);
  EXPECT_NE(got2.error().message.find("max_tokens: must be positive"), std::string::npos);
  EXPECT_EQ(server.count(), 2);
  expect_no_key(got2, logs);
}

TEST_F(http_test, a_reply_past_the_timeout_times_out) {
  fake_server server;
  server.route("/v1/chat/completions", [&server](const auto&, auto& res, int32_t) {
    server.nap(2.0);
    reply_json(res, 200, openai_reply("too late"));
  });
  server.start();
  log_sink logs;
  openai_options o = openai_opts(server.url() + "/v1", logs);
  o.http.timeout_s = 0.3;
  o.http.retry.max_attempts = 2;
  openai_provider p(o);
  const auto t0 = steady::now();
  auto got = p.call(simple_request());
  const double took = seconds_since(t0);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind, call_error::timeout);
  EXPECT_EQ(got.error().attempts, 2);
  EXPECT_EQ(server.count(), 2);
  EXPECT_GE(took, 0.6);
  EXPECT_LT(took, 1.8);  // two attempts cut at 0.3 s, not one 2 s reply
  expect_no_key(got, logs);
}

TEST_F(http_test, truncated_and_malformed_json_are_malformed) {
  fake_server server;
  server.route("/trunc/v1/chat/completions", [](const auto&, auto& res, int32_t) {
    reply_json(res, 200, R"({"id":"x","choices":[{"message":{"content":"hel)");
  });
  server.route("/shape/v1/chat/completions", [](const auto&, auto& res, int32_t) {
    reply_json(res, 200, R"({"object":"list","data":[]})");
  });
  server.route("/v1/messages", [](const auto&, auto& res, int32_t) {
    reply_json(res, 200, R"({"type":"message","content":"not a list"})");
  });
  server.start();
  log_sink logs;
  for (const char* prefix : {"/trunc/v1", "/shape/v1"}) {
    openai_provider p(openai_opts(server.url() + prefix, logs));
    auto got = p.call(simple_request());
    ASSERT_FALSE(got) << prefix;
    EXPECT_EQ(got.error().kind, call_error::malformed) << prefix;
    EXPECT_EQ(got.error().attempts, 1) << prefix;
    EXPECT_NE(got.error().message.find("application/json"), std::string::npos) << got.error().message;
    expect_no_key(got, logs);
  }
  anthropic_provider a(anthropic_opts(server.url(), logs));
  auto got = a.call(simple_request());
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind, call_error::malformed);
  EXPECT_NE(got.error().message.find("content"), std::string::npos) << got.error().message;
  EXPECT_EQ(server.count(), 3);  // none retried
}

TEST_F(http_test, an_html_page_is_malformed_or_a_server_error) {
  fake_server server;
  server.route("/ok/v1/chat/completions", [](const auto&, auto& res, int32_t) {
    res.status = 200;
    res.set_content("<html><body><h1>Sign in to the proxy</h1></body></html>", "text/html");
  });
  server.route("/bad/v1/chat/completions", [](const auto&, auto& res, int32_t) {
    res.status = 502;
    res.set_content("<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html");
  });
  server.start();
  log_sink logs;
  openai_provider ok(openai_opts(server.url() + "/ok/v1", logs));
  auto got = ok.call(simple_request());
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind, call_error::malformed);
  EXPECT_NE(got.error().message.find("text/html"), std::string::npos) << got.error().message;
  EXPECT_NE(got.error().message.find("Sign in to the proxy"), std::string::npos);

  openai_provider bad(openai_opts(server.url() + "/bad/v1", logs));
  auto got2 = bad.call(simple_request());
  ASSERT_FALSE(got2);
  EXPECT_EQ(got2.error().kind, call_error::server);
  EXPECT_EQ(got2.error().http_status, 502);
  EXPECT_EQ(got2.error().attempts, 3);
  EXPECT_NE(got2.error().message.find("text/html"), std::string::npos) << got2.error().message;
  expect_no_key(got2, logs);
}

// Announces 1000 bytes, sends a few, then drops the connection.
void cut_mid_reply(httplib::Response& res) {
  res.status = 200;
  res.set_content_provider(1000, "application/json",
                           [](size_t, size_t, httplib::DataSink& sink) {
                             sink.write(R"({"id":"chatcmpl-)", 16);
                             return false;  // httplib closes the socket
                           });
}

TEST_F(http_test, a_connection_cut_mid_reply_is_retried) {
  fake_server server;
  server.route("/flaky/v1/chat/completions", [](const auto&, auto& res, int32_t nth) {
    if (nth == 1) return cut_mid_reply(res);
    reply_json(res, 200, openai_reply("second try"));
  });
  server.route("/dead/v1/chat/completions", [](const auto&, auto& res, int32_t) {
    cut_mid_reply(res);
  });
  server.start();
  log_sink logs;
  openai_provider flaky(openai_opts(server.url() + "/flaky/v1", logs));
  auto got = flaky.call(simple_request());
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(got->text, "second try");
  EXPECT_EQ(got->attempts, 2);

  openai_provider dead(openai_opts(server.url() + "/dead/v1", logs));
  auto got2 = dead.call(simple_request());
  ASSERT_FALSE(got2);
  EXPECT_EQ(got2.error().kind, call_error::network);
  EXPECT_EQ(got2.error().attempts, 3);
  EXPECT_EQ(server.count(), 5);
  expect_no_key(got2, logs);
}

TEST_F(http_test, a_refused_connection_is_a_network_failure) {
  std::string url;
  {
    fake_server gone;
    gone.start();
    url = gone.url();
  }  // stopped: nothing listens on its port now
  log_sink logs;
  anthropic_provider p(anthropic_opts(url, logs));
  auto got = p.call(simple_request());
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind, call_error::network);
  EXPECT_EQ(got.error().attempts, 3);
  expect_no_key(got, logs);
}

// ---------------------------------------------------------------------------------------------
// Cancellation and the bound on calls in flight.

TEST_F(http_test, cancellation_wakes_a_call_waiting_in_backoff) {
  fake_server server;
  server.route("/v1/chat/completions", [](const auto&, auto& res, int32_t) {
    res.set_header("Retry-After", "10");
    reply_json(res, 503, R"({"error":{"message":"busy"}})");
  });
  server.start();
  log_sink logs;
  openai_options o = openai_opts(server.url() + "/v1", logs);
  o.http.retry.max_retry_after_s = 10;
  openai_provider p(o);
  cancel_token token;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    token.cancelled = true;
  });
  const auto t0 = steady::now();
  auto got = p.call(simple_request(), &token);
  const double took = seconds_since(t0);
  canceller.join();
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind, call_error::cancelled);
  EXPECT_EQ(got.error().attempts, 1);
  EXPECT_EQ(server.count(), 1);
  EXPECT_LT(took, 1.0);  // not the 10 s the server asked for
  expect_no_key(got, logs);
}

TEST_F(http_test, cancellation_aborts_a_reply_in_flight) {
  fake_server server;
  server.route("/v1/messages", [&server](const auto&, auto& res, int32_t) {
    server.nap(3.0);
    reply_json(res, 200, anthropic_reply(json::array(), "end_turn"));
  });
  server.start();
  log_sink logs;
  anthropic_provider p(anthropic_opts(server.url(), logs));
  cancel_token token;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    token.cancelled = true;
  });
  const auto t0 = steady::now();
  auto got = p.call(simple_request(), &token);
  const double took = seconds_since(t0);
  canceller.join();
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind, call_error::cancelled);
  EXPECT_LT(took, 1.0);

  // A token already cancelled sends nothing.
  auto again = p.call(simple_request(), &token);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().kind, call_error::cancelled);
  EXPECT_EQ(again.error().attempts, 0);
  EXPECT_EQ(server.count(), 1);
}

TEST_F(http_test, cancellation_stops_a_call_waiting_for_a_slot) {
  fake_server server;
  server.route("/v1/chat/completions", [&server](const auto&, auto& res, int32_t) {
    server.nap(1.0);
    reply_json(res, 200, openai_reply("slow"));
  });
  server.start();
  log_sink logs;
  openai_options o = openai_opts(server.url() + "/v1", logs);
  o.http.max_in_flight = 1;
  openai_provider p(o);
  cancel_token first_token, second_token;
  std::thread first([&] { (void)p.call(simple_request(), &first_token); });
  while (server.count() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    second_token.cancelled = true;
  });
  const auto t0 = steady::now();
  auto got = p.call(simple_request(), &second_token);
  const double took = seconds_since(t0);
  canceller.join();
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind, call_error::cancelled);
  EXPECT_EQ(got.error().attempts, 0);
  EXPECT_LT(took, 0.6);
  EXPECT_EQ(server.count(), 1);  // the second call never reached the server
  first_token.cancelled = true;
  first.join();
}

// Six callers at once against a server that holds each request for 150 ms.
int32_t max_seen_in_flight(int32_t bound) {
  fake_server server;
  server.route("/v1/chat/completions", [&server](const auto&, auto& res, int32_t) {
    server.nap(0.15);
    reply_json(res, 200, openai_reply("ok"));
  });
  server.start();
  log_sink logs;
  openai_options o = openai_opts(server.url() + "/v1", logs);
  o.http.max_in_flight = bound;
  openai_provider p(o);
  std::atomic<int32_t> ok{0};
  std::vector<std::thread> callers;
  for (int i = 0; i < 6; ++i)
    callers.emplace_back([&] {
      if (p.call(simple_request())) ++ok;
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(ok.load(), 6);
  EXPECT_EQ(server.count(), 6);
  return server.max_concurrent();
}

TEST_F(http_test, at_most_max_in_flight_calls_reach_the_server) {
  EXPECT_EQ(max_seen_in_flight(2), 2);
  EXPECT_GT(max_seen_in_flight(6), 2);  // the server can see more when the client allows it
}

}  // namespace
}  // namespace lathe::llm
