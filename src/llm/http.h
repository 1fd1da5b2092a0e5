// The transport under the HTTP providers (openai.h, anthropic.h): one JSON POST over libcurl, with
// connect and total timeouts, retries with exponential backoff and full jitter, Retry-After, a
// bound on calls in flight, cancellation, and failures sorted into call_error.
//
// Keys: a request header whose name is a known credential (authorization, x-api-key, api-key,
// proxy-authorization) or that is marked secret is never written to a log line or a failure
// message, and its value is scrubbed from any text the server sends back before that text is
// quoted (servers echo keys in 401 bodies).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <ctime>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "llm/provider.h"

namespace lathe::llm {

struct http_header {
  std::string name;
  std::string value;
  bool secret = false;  // also implied by the name (is_secret_header)
};

// Retry schedule. Retried: HTTP 408, 429 and 5xx; timeouts; refused, reset and cut-off
// connections. Never retried: other 4xx (the request or the key is wrong: repeating it cannot
// help), malformed replies, DNS failures, cancellation.
struct retry_policy {
  int32_t max_attempts = 5;      // the first try included
  // Full jitter (the AWS Architecture Blog's "Exponential Backoff and Jitter"): the wait before
  // retry n is uniform in [0, min(max_delay_s, base_delay_s * 2^(n-1))], so clients that failed
  // together do not come back together.
  double base_delay_s = 1.0;
  double max_delay_s = 30.0;
  // A server's Retry-After (429, 503) replaces the backoff, waited exactly but never longer than
  // this: an hour-long quota reset should not freeze a run; the next attempt will say so again.
  double max_retry_after_s = 60.0;
};

struct http_options {
  double connect_timeout_s = 10.0;
  // One attempt, first byte sent to last byte received. Generous: a long completion from a slow
  // local server takes minutes, and a reply is not streamed.
  double timeout_s = 600.0;
  retry_policy retry;
  int32_t max_in_flight = 4;  // attempts on the wire at once per client; more callers wait
  // One line per attempt outcome and retry decision (secrets redacted); none when empty.
  std::function<void(const std::string&)> log;
  // Uniform in [0, 1) for the jitter; empty: a PRNG seeded from std::random_device. Tests pin it.
  std::function<double()> jitter;
};

struct http_post {
  std::string url;
  std::vector<http_header> headers;  // Content-Type: application/json is added when absent
  std::string body;
};

struct http_reply {
  int32_t status = 0;
  std::vector<http_header> headers;  // names lower-case, in arrival order
  std::string body;
  int32_t attempts = 1;
  double seconds = 0;  // first attempt started -> last byte of the reply, retry waits included

  // The first header of that name (case-insensitive), or nullptr.
  const std::string* header(std::string_view name) const;
  // x-request-id (OpenAI and most compatible servers), else request-id (Anthropic), else "".
  std::string request_id() const;
};

// A 2xx reply, or why there is none. Non-2xx statuses become failures here (with the server's
// error message when its body carries one); the providers only judge 2xx bodies.
using http_result = tl::expected<http_reply, call_failure>;

class http_client {
 public:
  explicit http_client(http_options options = {});
  http_client(const http_client&) = delete;
  http_client& operator=(const http_client&) = delete;

  // Thread-safe: any number of threads may call at once; at most max_in_flight are on the wire.
  http_result post_json(const http_post& post, const cancel_token* cancel = nullptr);

  const http_options& options() const { return options_; }
  int32_t in_flight() const;

 private:
  struct attempt;
  attempt perform(const http_post& post, const cancel_token* cancel);
  bool acquire_slot(const cancel_token* cancel);
  void release_slot();
  double next_jitter();
  void log(const std::string& line, const std::vector<std::string>& secrets) const;

  http_options options_;
  mutable std::mutex mutex_;
  std::condition_variable slot_free_;
  int32_t in_flight_ = 0;
  std::mt19937_64 rng_;
};

// A 2xx reply that is not the protocol's JSON (truncated, malformed, an HTML page from a proxy):
// call_error::malformed, naming the URL, what was wrong, the content type and the start of the
// body, every secret redacted. Never retried: the same request gets the same broken answer.
call_failure malformed_reply(const http_reply& reply, std::string_view url, std::string_view what,
                             const std::vector<std::string>& secrets);

// Case-insensitive: authorization, proxy-authorization, x-api-key, api-key.
bool is_secret_header(std::string_view name);

// Retry-After is either delta-seconds ("120"; a decimal such as "0.5" is accepted too) or an
// HTTP date ("Wed, 21 Oct 2015 07:28:00 GMT"), read against `now`. Seconds to wait (0 for a
// date in the past), or nullopt when the value is neither.
std::optional<double> parse_retry_after(std::string_view value, std::time_t now);

// Every occurrence of each non-empty secret replaced by "[redacted]".
std::string redact(std::string text, const std::vector<std::string>& secrets);

// True for http(s)://localhost, 127.x.y.z, [::1] and 0.0.0.0 (a local vLLM, Ollama or
// llama.cpp server needs no key).
bool is_local_url(std::string_view url);

// `configured` when not empty, else $env_var when set, else `fallback`; without trailing slashes.
std::string resolve_base_url(std::string configured, const char* env_var, std::string fallback);

// When a provider needs a key (openai.h, anthropic.h).
enum class key_policy : uint8_t {
  required,     // a missing key fails the call before anything is sent
  when_remote,  // required unless the base URL is local (is_local_url)
  none,         // never sent, even when the variable is set
};

// The key named by `env_var`, read now (never cached beyond the call): "" when no key is to be
// sent, a failure (unauthorized, naming the variable, never a value) when one is required and
// missing.
tl::expected<std::string, call_failure> resolve_key(const std::string& env_var, key_policy policy,
                                                    std::string_view base_url);

// A token count of a reply's `usage` object (both wire formats carry one): 0 when the object or
// the integer field is missing, since providers omit what they do not count.
int64_t usage_count(const nlohmann::json& usage, const char* field);

}  // namespace lathe::llm
