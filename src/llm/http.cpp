#include "llm/http.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

namespace lathe::llm {
namespace {

using clock_type = std::chrono::steady_clock;

struct easy_deleter {
  void operator()(CURL* h) const { curl_easy_cleanup(h); }
};
struct multi_deleter {
  void operator()(CURLM* h) const { curl_multi_cleanup(h); }
};
struct slist_deleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
using easy_ptr = std::unique_ptr<CURL, easy_deleter>;
using multi_ptr = std::unique_ptr<CURLM, multi_deleter>;
using slist_ptr = std::unique_ptr<curl_slist, slist_deleter>;

// curl_global_init is not thread-safe on every libcurl build; run it once before any handle.
void global_init_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool is_cancelled(const cancel_token* cancel) {
  return cancel && cancel->cancelled.load(std::memory_order_relaxed);
}

// Waits `seconds`, waking every 10 ms to look at the token: a cancelled run must not sit out a
// 60 s Retry-After. False when cancelled.
bool sleep_unless_cancelled(double seconds, const cancel_token* cancel) {
  const auto until =
      clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                              std::chrono::duration<double>(std::max(0.0, seconds)));
  while (clock_type::now() < until) {
    if (is_cancelled(cancel)) return false;
    const clock_type::duration left = until - clock_type::now();
    std::this_thread::sleep_for(std::min<clock_type::duration>(left, std::chrono::milliseconds(10)));
  }
  return !is_cancelled(cancel);
}

double since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

std::string fmt_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

// Header lines of every response curl sees; a status line starts a new response (after a
// 100 Continue or a proxy CONNECT), so only the last response's headers remain.
size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* headers = static_cast<std::vector<http_header>*>(user);
  std::string_view line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {
    headers->clear();
  } else if (auto colon = line.find(':'); colon != std::string_view::npos) {
    headers->push_back({lower(trim(line.substr(0, colon))), std::string(trim(line.substr(colon + 1))),
                        false});
  }
  return size * n;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return is_cancelled(static_cast<const cancel_token*>(user)) ? 1 : 0;
}

// A non-negative decimal number and nothing else.
std::optional<double> parse_seconds(std::string_view value) {
  value = trim(value);
  if (value.empty() || !std::isdigit(static_cast<unsigned char>(value.front()))) return std::nullopt;
  double s = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), s);
  if (ec != std::errc() || end != value.data() + value.size() || !std::isfinite(s))
    return std::nullopt;
  return s;
}

bool retryable_status(int32_t status) {
  return status == 408 || status == 429 || (status >= 500 && status <= 599);
}

call_error kind_of_status(int32_t status) {
  if (status == 401 || status == 403) return call_error::unauthorized;
  if (status == 408) return call_error::timeout;
  if (status == 429) return call_error::rate_limited;
  if (status >= 500) return call_error::server;
  return call_error::bad_request;
}

bool retryable_curl(CURLcode code) {
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_COULDNT_CONNECT:   // a local server restarting
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:        // connection reset
    case CURLE_GOT_NOTHING:       // closed before a status line
    case CURLE_PARTIAL_FILE:      // closed mid-body
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
      return true;
    default:
      return false;  // DNS, bad URL, unsupported protocol: the same next time
  }
}

// "text/html body: <html><head>…", whitespace collapsed, at most 200 bytes of the body.
std::string excerpt_of(const http_reply& r) {
  std::string excerpt;
  for (char c : std::string_view(r.body).substr(0, 200)) {
    const bool space = std::isspace(static_cast<unsigned char>(c));
    if (space && (excerpt.empty() || excerpt.back() == ' ')) continue;
    excerpt += space ? ' ' : c;
  }
  const std::string* type = r.header("content-type");
  const std::string prefix = type ? *type + " body" : std::string("body");
  if (excerpt.empty()) return prefix + " empty";
  return prefix + ": " + excerpt + (r.body.size() > 200 ? "..." : "");
}

// What the server said about a failure: error.message (OpenAI and Anthropic both nest it so),
// else a short excerpt of the body with its content type. Redacted by the caller.
std::string server_message(const http_reply& r) {
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_object()) {
    if (auto e = j.find("error"); e != j.end()) {
      if (e->is_object() && e->contains("message") && (*e)["message"].is_string())
        return (*e)["message"].get<std::string>();
      if (e->is_string()) return e->get<std::string>();
    }
    if (auto m = j.find("message"); m != j.end() && m->is_string()) return m->get<std::string>();
  }
  return excerpt_of(r);
}

}  // namespace

const std::string* http_reply::header(std::string_view name) const {
  const std::string key = lower(name);
  for (const auto& h : headers)
    if (h.name == key) return &h.value;
  return nullptr;
}

std::string http_reply::request_id() const {
  if (const auto* id = header("x-request-id")) return *id;
  if (const auto* id = header("request-id")) return *id;
  return {};
}

call_failure malformed_reply(const http_reply& reply, std::string_view url, std::string_view what,
                             const std::vector<std::string>& secrets) {
  call_failure f;
  f.kind = call_error::malformed;
  f.http_status = reply.status;
  f.attempts = reply.attempts;
  f.message = redact("malformed reply from " + std::string(url) + ": " + std::string(what) + " (" +
                         excerpt_of(reply) + ")",
                     secrets);
  return f;
}

bool is_secret_header(std::string_view name) {
  const std::string n = lower(name);
  return n == "authorization" || n == "proxy-authorization" || n == "x-api-key" || n == "api-key";
}

std::optional<double> parse_retry_after(std::string_view value, std::time_t now) {
  value = trim(value);
  if (value.empty()) return std::nullopt;
  if (std::isdigit(static_cast<unsigned char>(value.front()))) return parse_seconds(value);
  const std::string text(value);
  const std::time_t at = curl_getdate(text.c_str(), nullptr);
  if (at == -1) return std::nullopt;
  return std::max(0.0, std::difftime(at, now));
}

std::string redact(std::string text, const std::vector<std::string>& secrets) {
  static constexpr std::string_view mask = "[redacted]";
  for (const auto& s : secrets) {
    if (s.empty()) continue;
    for (size_t at = text.find(s); at != std::string::npos; at = text.find(s, at + mask.size()))
      text.replace(at, s.size(), mask);
  }
  return text;
}

bool is_local_url(std::string_view url) {
  const auto scheme = url.find("://");
  if (scheme == std::string_view::npos) return false;
  std::string_view rest = url.substr(scheme + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (auto at = rest.rfind('@'); at != std::string_view::npos) rest = rest.substr(at + 1);
  std::string_view host;
  if (!rest.empty() && rest.front() == '[') {
    host = rest.substr(1, rest.find(']') - 1);
  } else {
    host = rest.substr(0, rest.find(':'));
  }
  const std::string h = lower(host);
  if (h == "localhost" || h == "::1" || h == "0.0.0.0") return true;
  if (h.rfind("127.", 0) == 0)
    return std::all_of(h.begin(), h.end(), [](char c) { return c == '.' || std::isdigit(c); });
  return false;
}

std::string resolve_base_url(std::string configured, const char* env_var, std::string fallback) {
  std::string url = std::move(configured);
  if (url.empty())
    if (const char* v = std::getenv(env_var); v && *v) url = v;
  if (url.empty()) url = std::move(fallback);
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

tl::expected<std::string, call_failure> resolve_key(const std::string& env_var, key_policy policy,
                                                    std::string_view base_url) {
  if (policy == key_policy::none) return std::string();
  const char* value = env_var.empty() ? nullptr : std::getenv(env_var.c_str());
  if (value && *value) return std::string(value);
  if (policy == key_policy::when_remote && is_local_url(base_url)) return std::string();
  call_failure f;
  f.kind = call_error::unauthorized;
  f.message = "no API key: the environment variable " +
              (env_var.empty() ? std::string("(none configured)") : env_var) +
              " is empty or unset, and " + std::string(base_url) +
              (policy == key_policy::required ? " is configured to require one"
                                              : " is not a local server");
  return tl::unexpected(std::move(f));
}

// ---------------------------------------------------------------------------------------------

struct http_client::attempt {
  CURLcode code = CURLE_OK;
  bool cancelled = false;
  std::string curl_message;
  http_reply reply;
};

http_client::http_client(http_options options) : options_(std::move(options)) {
  global_init_once();
  options_.max_in_flight = std::max<int32_t>(1, options_.max_in_flight);
  options_.retry.max_attempts = std::max<int32_t>(1, options_.retry.max_attempts);
  if (!options_.jitter) rng_.seed(std::random_device{}());
}

int32_t http_client::in_flight() const {
  std::lock_guard lock(mutex_);
  return in_flight_;
}

bool http_client::acquire_slot(const cancel_token* cancel) {
  std::unique_lock lock(mutex_);
  while (in_flight_ >= options_.max_in_flight) {
    if (is_cancelled(cancel)) return false;
    // The token has no way to notify: look at it every 20 ms.
    slot_free_.wait_for(lock, std::chrono::milliseconds(20));
  }
  ++in_flight_;
  return true;
}

void http_client::release_slot() {
  {
    std::lock_guard lock(mutex_);
    --in_flight_;
  }
  slot_free_.notify_one();
}

double http_client::next_jitter() {
  if (options_.jitter) return std::clamp(options_.jitter(), 0.0, 1.0);
  std::lock_guard lock(mutex_);
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
}

void http_client::log(const std::string& line, const std::vector<std::string>& secrets) const {
  if (options_.log) options_.log(redact(line, secrets));
}

http_client::attempt http_client::perform(const http_post& post, const cancel_token* cancel) {
  attempt a;
  easy_ptr easy(curl_easy_init());
  multi_ptr multi(curl_multi_init());
  if (!easy || !multi) {
    a.code = CURLE_FAILED_INIT;
    a.curl_message = "libcurl could not create a handle";
    return a;
  }
  slist_ptr list;
  auto add = [&](const std::string& line) {
    curl_slist* next = curl_slist_append(list.get(), line.c_str());
    if (next) {  // the same head after the first append; on failure the old list stays owned
      (void)list.release();
      list.reset(next);
    }
  };
  bool has_type = false;
  for (const auto& h : post.headers) {
    has_type = has_type || lower(h.name) == "content-type";
    add(h.name + ": " + h.value);
  }
  if (!has_type) add("Content-Type: application/json");
  add("Expect:");  // no 100-continue round trip on large prompts

  char errbuf[CURL_ERROR_SIZE] = {0};
  CURL* h = easy.get();
  curl_easy_setopt(h, CURLOPT_URL, post.url.c_str());
  curl_easy_setopt(h, CURLOPT_POST, 1L);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, post.body.data());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(post.body.size()));
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, list.get());
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(std::ceil(options_.connect_timeout_s * 1000)));
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(std::ceil(options_.timeout_s * 1000)));
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  // A redirect would carry the key to wherever the server points; providers never redirect.
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(h, CURLOPT_USERAGENT, "lathe/0.1");
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &a.reply.body);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &a.reply.headers);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, cancel);

  // The multi loop rather than curl_easy_perform: while a slow server is silent, curl calls the
  // progress callback only about once a second; polling 50 ms at a time bounds how long a
  // cancelled call lingers.
  curl_multi_add_handle(multi.get(), h);
  int running = 1;
  while (running) {
    if (curl_multi_perform(multi.get(), &running) != CURLM_OK) break;
    if (!running) break;
    if (is_cancelled(cancel)) {
      a.cancelled = true;
      break;
    }
    curl_multi_poll(multi.get(), nullptr, 0, 50, nullptr);
  }
  int left = 0;
  while (CURLMsg* msg = curl_multi_info_read(multi.get(), &left))
    if (msg->msg == CURLMSG_DONE) a.code = msg->data.result;
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  a.reply.status = static_cast<int32_t>(status);
  curl_multi_remove_handle(multi.get(), h);
  if (a.code == CURLE_ABORTED_BY_CALLBACK) a.cancelled = true;
  if (a.code != CURLE_OK) a.curl_message = errbuf[0] ? errbuf : curl_easy_strerror(a.code);
  return a;
}

http_result http_client::post_json(const http_post& post, const cancel_token* cancel) {
  std::vector<std::string> secrets;
  std::string header_list;
  for (const auto& h : post.headers) {
    const bool secret = h.secret || is_secret_header(h.name);
    if (secret && !h.value.empty()) {
      secrets.push_back(h.value);
      // "Bearer sk-…": servers echo the credential without its scheme.
      if (auto space = h.value.rfind(' '); space != std::string::npos && space + 1 < h.value.size())
        secrets.push_back(h.value.substr(space + 1));
    }
    header_list += (header_list.empty() ? "" : ", ") + h.name + ": " +
                    (secret ? std::string("[redacted]") : h.value);
  }
  const auto& retry = options_.retry;
  auto cancelled = [&](int32_t attempts) {
    call_failure f;
    f.kind = call_error::cancelled;
    f.message = "POST " + post.url + ": cancelled";
    f.attempts = attempts;
    log(f.message, secrets);
    return tl::unexpected(std::move(f));
  };

  log("POST " + post.url + " (" + std::to_string(post.body.size()) + " bytes; " + header_list + ")",
      secrets);
  clock_type::time_point start{};
  for (int32_t attempts = 1;; ++attempts) {
    if (is_cancelled(cancel) || !acquire_slot(cancel)) return cancelled(attempts - 1);
    if (attempts == 1) start = clock_type::now();
    attempt a = perform(post, cancel);
    release_slot();
    if (a.cancelled) return cancelled(attempts);

    call_failure f;
    f.attempts = attempts;
    bool retryable = false;
    const std::string tag = "POST " + post.url + " (attempt " + std::to_string(attempts) + "/" +
                            std::to_string(retry.max_attempts) + "): ";
    if (a.code != CURLE_OK) {
      f.kind = a.code == CURLE_OPERATION_TIMEDOUT ? call_error::timeout : call_error::network;
      f.message = "POST " + post.url + ": " + a.curl_message;
      retryable = retryable_curl(a.code);
      log(tag + a.curl_message, secrets);
    } else if (a.reply.status >= 200 && a.reply.status <= 299) {
      a.reply.attempts = attempts;
      a.reply.seconds = since(start);
      log(tag + "HTTP " + std::to_string(a.reply.status) + " in " + fmt_seconds(a.reply.seconds),
          secrets);
      return std::move(a.reply);
    } else {
      f.kind = kind_of_status(a.reply.status);
      f.http_status = a.reply.status;
      f.message = "HTTP " + std::to_string(a.reply.status) + " from " + post.url + ": " +
                  server_message(a.reply);
      retryable = retryable_status(a.reply.status);
      log(tag + "HTTP " + std::to_string(a.reply.status), secrets);
    }
    if (!retryable || attempts >= retry.max_attempts) {
      if (attempts > 1) f.message += " (after " + std::to_string(attempts) + " attempts)";
      f.message = redact(std::move(f.message), secrets);
      return tl::unexpected(std::move(f));
    }

    // Retry-After (or OpenAI's finer retry-after-ms) replaces the backoff when the server sent it.
    std::optional<double> wait;
    std::string why = "backoff";
    if (const auto* ms = a.reply.header("retry-after-ms"); ms && parse_seconds(*ms)) {
      wait = *parse_seconds(*ms) / 1000.0;
      why = "retry-after-ms";
    } else if (const auto* ra = a.reply.header("retry-after")) {
      wait = parse_retry_after(*ra, std::time(nullptr));
      if (wait) why = "Retry-After";
    }
    if (wait) {
      wait = std::min(*wait, retry.max_retry_after_s);
    } else {
      const double ceiling =
          std::min(retry.max_delay_s, retry.base_delay_s * std::ldexp(1.0, attempts - 1));
      wait = next_jitter() * ceiling;
    }
    log(tag + "retrying in " + fmt_seconds(*wait) + " (" + why + ")", secrets);
    if (!sleep_unless_cancelled(*wait, cancel)) return cancelled(attempts);
  }
}

int64_t usage_count(const nlohmann::json& usage, const char* field) {
  if (!usage.is_object()) return 0;
  auto it = usage.find(field);
  return it != usage.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

}  // namespace lathe::llm
