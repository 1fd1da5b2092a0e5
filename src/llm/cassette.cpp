// Cassettes: one JSON file per recorded call (docs/prompts.md), replayed byte for byte.
#include "llm/cassette.h"
#include "core/hash.h"
#include "core/text.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <atomic>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "core/hash.h"

namespace lathe::llm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using std::string;

constexpr const char* cassette_schema = "lathe.cassette/1";
constexpr const char* raw_template = "_raw";  // requests that no template rendered

call_failure failure(call_error kind, string message) {
  call_failure f;
  f.kind = kind;
  f.message = std::move(message);
  return f;
}

bool is_id(const string& s) {
  return !s.empty() && s.size() <= 100 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool is_hex(const string& s) {
  return !s.empty() && s.size() <= 128 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}

// ---- base64: reply text that is not UTF-8 (JSON strings must be) travels in this form --------

constexpr char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

string to_base64(const string& in) {
  string out;
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : in) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(b64[(acc >> bits) & 0x3F]);
    }
  }
  if (bits > 0) out.push_back(b64[(acc << (6 - bits)) & 0x3F]);
  while (out.size() % 4) out.push_back('=');
  return out;
}

std::optional<string> from_base64(const string& in) {
  string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    const char* p = std::strchr(b64, c);
    if (c == '\0' || p == nullptr) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(p - b64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

// ---- JSON ------------------------------------------------------------------------------------

finish_reason parse_finish(const string& s) {
  for (auto f : {finish_reason::stop, finish_reason::length, finish_reason::stop_sequence,
                 finish_reason::content_filter, finish_reason::error, finish_reason::other})
    if (s == to_string(f)) return f;
  return finish_reason::other;
}

// What was asked, without the prompt itself (the call record in the store keeps prompts) and
// without anything from the transport (headers, keys).
json request_summary(const request& r) {
  json messages = json::array();
  for (const auto& m : r.messages)
    messages.push_back({{"role", m.role}, {"chars", m.content.size()}});
  json j = {{"prompt_hash", prompt_hash(r)},        {"system_chars", r.system.size()},
            {"messages", std::move(messages)},      {"temperature", r.temperature},
            {"max_tokens", r.max_tokens},           {"stop", r.stop},
            {"json_schema", !r.json_schema.empty()}};
  j["top_p"] = r.top_p ? json(*r.top_p) : json(nullptr);
  return j;
}

string redact(string s, const std::vector<std::pair<string, string>>& secrets) {
  for (const auto& [name, value] : secrets)
    for (size_t pos = s.find(value); pos != string::npos; pos = s.find(value, pos))
      s.replace(pos, value.size(), "[redacted:" + name + "]");
  return s;
}

std::optional<string> read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Why there is no cassette at `k`, naming the nearest recordings: the same key with fewer calls,
// the same template version with other fields, other versions, other templates.
string missing_message(const fs::path& dir, const cassette_key& k) {
  std::error_code ec;
  const fs::path want = cassette_path(dir, k);
  string msg = "no cassette " + want.string() + " (template " + k.template_id + " v" +
               std::to_string(k.template_version) + ", fields " + k.fields_hash + ", call " +
               std::to_string(k.index) + ")";
  const fs::path version_dir = want.parent_path();
  const fs::path template_dir = version_dir.parent_path();
  // Same key, other call indices.
  int32_t calls = 0;
  while (
      fs::exists(cassette_path(dir, {k.template_id, k.template_version, k.fields_hash, calls, k.sampling}), ec))
    ++calls;
  if (calls > 0)
    return msg + "; nearest: this exact prompt was recorded " + std::to_string(calls) +
           " time(s) (" +
           cassette_path(dir, {k.template_id, k.template_version, k.fields_hash, 0, k.sampling}).string() +
           "), and this session asks for it more often: record again";
  // The same prompt at other sampling settings (lathe.toml [sampling] changed).
  for (const auto& e : fs::directory_iterator(version_dir, ec)) {
    const string name = e.path().filename().string();
    if (name.rfind(k.fields_hash + ".", 0) == 0 && name != want.filename().string())
      return msg + "; nearest: this prompt was recorded with other sampling settings (" + name +
             "; this call: " + k.sampling + "): record again, or set lathe.toml's [sampling] back";
  }
  // Same template and version, other fields: most recent first.
  std::vector<std::pair<fs::file_time_type, fs::path>> others;
  for (const auto& e : fs::directory_iterator(version_dir, ec))
    if (e.path().extension() == ".json") others.emplace_back(e.last_write_time(ec), e.path());
  if (!others.empty()) {
    std::sort(others.begin(), others.end(), [](auto& a, auto& b) { return a.first > b.first; });
    msg += "; nearest: the same template version with other fields: ";
    for (size_t i = 0; i < others.size() && i < 3; ++i)
      msg += (i ? ", " : "") + others[i].second.string();
    if (others.size() > 3) msg += " (" + std::to_string(others.size()) + " in all)";
    return msg + " (the prompt's fields changed: its kernel, task or another input; record again)";
  }
  // Same template, other versions.
  string versions;
  for (const auto& e : fs::directory_iterator(template_dir, ec))
    if (e.is_directory(ec))
      versions += (versions.empty() ? "" : ", ") + e.path().filename().string();
  if (!versions.empty())
    return msg + "; nearest: template " + k.template_id + " was recorded at other versions (" +
           versions + ") in " + template_dir.string() + "; this call uses v" +
           std::to_string(k.template_version) + ": record again";
  string templates;
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_directory(ec) && n++ < 10)
      templates += (templates.empty() ? "" : ", ") + e.path().filename().string();
  if (!templates.empty())
    return msg + "; nothing recorded for template " + k.template_id +
           " (recorded templates: " + templates + ")";
  return msg + "; " + dir.string() + " holds no cassettes (record them with a record provider)";
}

}  // namespace

tl::expected<cassette_key, call_failure> key_of(const request& r, int32_t index) {
  cassette_key k;
  k.index = index;
  if (r.template_id.empty()) {
    k.template_id = raw_template;
    k.fields_hash = prompt_hash(r);
    k.sampling = sampling_tag(r);
    return k;
  }
  // A repair round (agent/ask.cpp) asks again under "<id>/repair" with "<hash>:<attempt>": its
  // cassette lives beside the template's as "<id>_repair", keyed by a hash of hash and attempt.
  std::string id = r.template_id, fields = r.fields_hash;
  constexpr std::string_view repair = "/repair";
  if (id.size() > repair.size() && id.ends_with(repair)) {
    id = id.substr(0, id.size() - repair.size()) + "_repair";
    const auto colon = fields.find(':');
    const bool attempt_ok = colon != std::string::npos && colon + 1 < fields.size() &&
                            std::all_of(fields.begin() + colon + 1, fields.end(),
                                        [](char c) { return c >= '0' && c <= '9'; });
    if (attempt_ok && is_hex(fields.substr(0, colon))) fields = content_hash(fields);
  }
  if (!is_id(id))
    return tl::unexpected(
        failure(call_error::bad_request,
                "template id '" + r.template_id + "' cannot name a cassette (a-z 0-9 _ only)"));
  if (!is_hex(fields))
    return tl::unexpected(
        failure(call_error::bad_request,
                "template " + r.template_id + ": fields hash '" + r.fields_hash + "' is not hex"));
  k.template_id = id;
  k.template_version = r.template_version;
  k.fields_hash = fields;
  k.sampling = sampling_tag(r);
  return k;
}

std::string sampling_tag(const request& r) {
  char buf[96];
  char top[32] = "none";
  if (r.top_p) std::snprintf(top, sizeof top, "%g", *r.top_p);
  std::snprintf(buf, sizeof buf, "t%g-p%s-m%lld", r.temperature, top, static_cast<long long>(r.max_tokens));
  return buf;
}

fs::path cassette_path(const fs::path& dir, const cassette_key& k) {
  return dir / k.template_id / ("v" + std::to_string(k.template_version)) /
         (k.fields_hash + (k.sampling.empty() ? "" : "." + k.sampling) + "." + std::to_string(k.index) + ".json");
}

std::string prompt_hash(const request& r) {
  hasher h;
  if (!r.prompt_key.empty()) {  // the first message keyed without its context; repair turns as they are
    h.add("lathe.prompt/2").add(r.prompt_key).add(std::to_string(r.messages.size()));
    for (size_t i = 1; i < r.messages.size(); ++i) h.add(r.messages[i].role).add(r.messages[i].content);
    h.add(r.json_schema);
    return h.hex();
  }
  h.add("lathe.prompt/1").add(r.system).add(std::to_string(r.messages.size()));
  for (const auto& m : r.messages) h.add(m.role).add(m.content);
  h.add(r.json_schema);
  return h.hex();
}

int32_t call_counter::next(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_[key]++;
}

// ---- replay ----------------------------------------------------------------------------------

replay_provider::replay_provider(fs::path dir) : dir_(std::move(dir)) {}

std::string replay_provider::name() const {
  return "replay/" + dir_.string();
}

call_result replay_provider::call_in(const request& r, const kernel_bundle&,
                                     const cancel_token* cancel) {
  return call(r, cancel);
}

call_result replay_provider::call(const request& r, const cancel_token* cancel) {
  if (cancel && cancel->cancelled.load())
    return tl::unexpected(failure(call_error::cancelled, "cancelled"));
  call_result res = lookup(r);
  if (!res && res.error().kind == call_error::missing_cassette)
    std::fprintf(stderr, "lathe: replay: %s\n", res.error().message.c_str());
  return res;
}

call_result replay_provider::lookup(const request& r) {
  auto k = key_of(r);
  if (!k) return tl::unexpected(k.error());
  k->index = counter_.next(k->template_id + "/" + std::to_string(k->template_version) + "/" +
                           k->fields_hash + "/" + k->sampling);
  fs::path p = cassette_path(dir_, *k);
  auto text = read_text(p);
  if (!text) {
    // Recorded before the sampling settings were in the key: good only when they were the same.
    cassette_key legacy = *k;
    legacy.sampling.clear();
    const fs::path old = cassette_path(dir_, legacy);
    if (auto old_text = read_text(old)) {
      const json o = json::parse(*old_text, nullptr, false);
      const json want = request_summary(r);
      const json got = o.is_object() ? o.value("request", json::object()) : json::object();
      for (const char* f : {"temperature", "top_p", "max_tokens"})
        if (got.value(f, json()) != want[f])
          return tl::unexpected(failure(
              call_error::missing_cassette,
              "stale cassette " + old.string() + ": recorded with " + f + " " + got.value(f, json()).dump() +
                  ", this call asks with " + want[f].dump() + " (lathe.toml [sampling]): record again"));
      p = old;
      text = std::move(old_text);
    }
  }
  if (!text)
    return tl::unexpected(failure(call_error::missing_cassette, missing_message(dir_, *k)));
  const auto bad = [&](const string& why) {
    return tl::unexpected(failure(call_error::malformed, p.string() + ": " + why));
  };
  json j = json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  if (j.value("schema", "") != cassette_schema)
    return bad("schema is not " + string(cassette_schema));
  try {
    const string recorded = j.at("request").at("prompt_hash").get<string>();
    if (recorded != prompt_hash(r))
      return tl::unexpected(failure(
          call_error::missing_cassette,
          "stale cassette " + p.string() +
              ": it was recorded for another prompt than this "
              "call's, with the same template id, version and fields (the template's text changed "
              "without a new version?): bump the template's version or record again"));
    const json& o = j.at("response");
    response resp;
    if (o.contains("text_base64")) {
      auto t = from_base64(o.at("text_base64").get<string>());
      if (!t) return bad("response.text_base64 is not base64");
      resp.text = std::move(*t);
    } else {
      resp.text = o.at("text").get<string>();
    }
    resp.tokens_in = o.value("tokens_in", int64_t{0});
    resp.tokens_out = o.value("tokens_out", int64_t{0});
    resp.finish = parse_finish(o.value("finish", string("stop")));
    resp.latency_seconds = o.value("latency_seconds", 0.0);
    resp.request_id = o.value("request_id", string());
    resp.model = o.value("model", string());
    resp.attempts = o.value("attempts", int32_t{1});
    return resp;
  } catch (const json::exception& e) {
    return bad(e.what());
  }
}

// ---- record ----------------------------------------------------------------------------------

record_provider::record_provider(std::unique_ptr<provider> inner, fs::path dir,
                                 record_options options)
    : inner_(std::move(inner)), dir_(std::move(dir)), options_(std::move(options)) {}

std::string record_provider::name() const {
  return inner_->name();
}

call_result record_provider::call(const request& r, const cancel_token* cancel) {
  return keep(r, inner_->call(r, cancel));
}

call_result record_provider::call_in(const request& r, const kernel_bundle& bundle,
                                     const cancel_token* cancel) {
  if (auto* w = dynamic_cast<workspace_provider*>(inner_.get()))
    return keep(r, w->call_in(r, bundle, cancel));
  return keep(r, inner_->call(r, cancel));
}

call_result record_provider::keep(const request& r, call_result got) {
  auto k = key_of(r);
  if (!k) return tl::unexpected(k.error());
  // Counted whether or not the call succeeded, so that indices match a replay of the same
  // session only when every call succeeded; a failed call is not recorded.
  k->index = counter_.next(k->template_id + "/" + std::to_string(k->template_version) + "/" +
                           k->fields_hash + "/" + k->sampling);
  if (!got) return got;
  std::vector<std::pair<string, string>> secrets;
  for (const auto& var : options_.secret_variables) {
    const char* v = getenv(var.c_str());
    if (v && std::strlen(v) >= 8) secrets.emplace_back(var, v);  // shorter: not a key
  }
  const response& resp = *got;
  json o = {{"tokens_in", resp.tokens_in},
            {"tokens_out", resp.tokens_out},
            {"finish", to_string(resp.finish)},
            {"latency_seconds", resp.latency_seconds},
            {"request_id", redact(resp.request_id, secrets)},
            {"model", redact(resp.model, secrets)},
            {"attempts", resp.attempts}};
  const string text = redact(resp.text, secrets);
  if (is_utf8_text(text))
    o["text"] = text;
  else
    o["text_base64"] = to_base64(text);
  const json j = {{"schema", cassette_schema},
                  {"template_id", k->template_id},
                  {"template_version", k->template_version},
                  {"fields_hash", k->fields_hash},
                  {"call_index", k->index},
                  {"provider", redact(inner_->name(), secrets)},
                  {"recorded_at", utc_now()},
                  {"request", request_summary(r)},
                  {"response", std::move(o)}};
  const fs::path p = cassette_path(dir_, *k);
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  static std::atomic<uint64_t> serial{0};
  const fs::path tmp =
      p.string() + ".tmp." + std::to_string(getpid()) + "." + std::to_string(serial++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << j.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    if (!out) ec = std::make_error_code(std::errc::io_error);
  }
  if (!ec) fs::rename(tmp, p, ec);
  if (ec) {
    const string why = ec.message();
    fs::remove(tmp, ec);
    // A recording session that silently loses a call would replay wrong later: fail now.
    return tl::unexpected(
        failure(call_error::missing_cassette, "cannot write cassette " + p.string() + ": " + why));
  }
  return got;
}

}  // namespace lathe::llm
