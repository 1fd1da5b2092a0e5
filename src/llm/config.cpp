// lathe.toml (docs/config.md). Strict like task.toml: a misspelt key or a wrong type is an error
// naming the file, the line and the field, because a limit that is silently ignored spends money.
#include "llm/config.h"

#if __has_include(<toml++/toml.hpp>)
#include <toml++/toml.hpp>
#else
#include <toml++/toml.h>  // Debian's libtomlplusplus-dev 3.3 ships only toml.h
#endif

#include <algorithm>
#include <cctype>
#include <cmath>
#include <initializer_list>
#include <set>
#include <sstream>

namespace lathe::llm {

namespace fs = std::filesystem;

namespace {

bool is_env_name(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    c = c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Field names that can only mean "a credential is written here". `tokens` (a limit) and
// `key_env` (the variable's name) are not among them.
bool is_secret_field(std::string_view name) {
  static const std::set<std::string> names = {
      "key",          "api_key",       "apikey", "secret",       "secret_key", "client_secret",
      "password",     "passwd",        "token",  "access_token", "auth_token", "bearer",
      "bearer_token", "authorization", "auth",   "credentials",  "x_api_key"};
  const std::string n = lower(name);
  if (names.count(n)) return true;
  for (const char* suffix : {"_key", "_token", "_secret", "_password"}) {
    const std::string_view sv(suffix);
    if (n.size() > sv.size() && n.compare(n.size() - sv.size(), sv.size(), sv) == 0) return true;
  }
  return false;
}

bool key_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
}

// The vendor prefixes of API keys (OpenAI and Anthropic "sk-", Groq, xAI, GitHub, Hugging Face,
// Google, Perplexity) and a bearer header, each followed by at least 16 key characters with a
// digit among them (random keys have digits; names such as "hf_cassettes_of_the_week" do not).
// Only at the start of a word, so that "task-…" or "mask-…" are not keys.
std::optional<std::string> key_like(std::string_view text) {
  static constexpr std::string_view prefixes[] = {"sk-",         "sk_", "gsk_", "xai-",  "ghp_",
                                                  "github_pat_", "hf_", "AIza", "pplx-", "Bearer "};
  for (size_t i = 0; i < text.size(); ++i) {
    if (i > 0 && std::isalnum(static_cast<unsigned char>(text[i - 1]))) continue;
    for (std::string_view p : prefixes) {
      if (text.compare(i, p.size(), p) != 0) continue;
      size_t n = 0;
      bool digit = false;
      for (char c; i + p.size() + n < text.size() && key_char(c = text[i + p.size() + n]); ++n)
        digit = digit || std::isdigit(static_cast<unsigned char>(c));
      if (n >= 16 && digit) return std::string(p);
    }
  }
  return std::nullopt;
}

const char* type_name(const toml::node& n) {
  if (n.is_string()) return "a string";
  if (n.is_integer()) return "an integer";
  if (n.is_floating_point()) return "a float";
  if (n.is_boolean()) return "a boolean";
  if (n.is_array()) return "an array";
  if (n.is_table()) return "a table";
  return "a date/time";
}

uint32_t line_of(const toml::node& n) {
  return n.source().begin.line > 0 ? n.source().begin.line : 1;  // the root table reports 0
}

std::string join(std::initializer_list<std::string_view> items) {
  std::string out;
  for (auto i : items) out += (out.empty() ? "" : ", ") + std::string(i);
  return out;
}

// Reads one lathe.toml; every error is "file:line: field: what".
class reader {
 public:
  explicit reader(std::string file) : file_(std::move(file)) {}

  tl::unexpected<error> err(uint32_t line, const std::string& field,
                            const std::string& what) const {
    std::string m = file_ + ":" + std::to_string(line) + ": ";
    if (!field.empty()) m += field + ": ";
    return fail(errc::parse_error, m + what);
  }

  static std::string path(const std::string& table, std::string_view key) {
    return table.empty() ? std::string(key) : table + "." + std::string(key);
  }

  result<void> check_keys(const toml::table& t, std::initializer_list<std::string_view> allowed,
                          const std::string& table) const {
    for (const auto& [k, v] : t) {
      if (std::find(allowed.begin(), allowed.end(), k.str()) == allowed.end())
        return err(line_of(v), path(table, k.str()),
                   "unknown key (expected one of: " + join(allowed) + ")");
    }
    return {};
  }

  result<std::optional<std::string>> str(const toml::table& t, std::string_view key,
                                         const std::string& table) const {
    const toml::node* n = t.get(key);
    if (!n) return std::optional<std::string>{};
    if (!n->is_string())
      return err(line_of(*n), path(table, key),
                 std::string("must be a string, not ") + type_name(*n));
    return std::optional<std::string>{n->as_string()->get()};
  }

  result<std::optional<int64_t>> integer(const toml::table& t, std::string_view key,
                                         const std::string& table, int64_t lo, int64_t hi) const {
    const toml::node* n = t.get(key);
    if (!n) return std::optional<int64_t>{};
    if (!n->is_integer())
      return err(line_of(*n), path(table, key),
                 std::string("must be a whole number, not ") + type_name(*n));
    const int64_t v = n->as_integer()->get();
    if (v < lo || v > hi)
      return err(line_of(*n), path(table, key),
                 "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
    return std::optional<int64_t>{v};
  }

  // A finite number >= lo (> lo when `strict`).
  result<std::optional<double>> number(const toml::table& t, std::string_view key,
                                       const std::string& table, double lo, bool strict) const {
    const toml::node* n = t.get(key);
    if (!n) return std::optional<double>{};
    double v;
    if (n->is_integer())
      v = static_cast<double>(n->as_integer()->get());
    else if (n->is_floating_point())
      v = n->as_floating_point()->get();
    else
      return err(line_of(*n), path(table, key),
                 std::string("must be a number, not ") + type_name(*n));
    std::ostringstream bound;
    bound << lo;
    if (!std::isfinite(v) || v < lo || (strict && v == lo))
      return err(line_of(*n), path(table, key),
                 std::string("must be a finite number ") + (strict ? "> " : ">= ") + bound.str());
    return std::optional<double>{v};
  }

  result<std::vector<std::string>> strings(const toml::table& t, std::string_view key,
                                           const std::string& table) const {
    std::vector<std::string> out;
    const toml::node* n = t.get(key);
    if (!n) return out;
    if (!n->is_array())
      return err(line_of(*n), path(table, key),
                 std::string("must be an array of strings, not ") + type_name(*n));
    for (const toml::node& e : *n->as_array()) {
      if (!e.is_string())
        return err(line_of(e), path(table, key),
                   std::string("must hold strings, not ") + type_name(e));
      out.push_back(e.as_string()->get());
    }
    return out;
  }

  // A sub-table; absent -> nullptr.
  result<const toml::table*> table(const toml::table& t, std::string_view key) const {
    const toml::node* n = t.get(key);
    if (!n) return static_cast<const toml::table*>(nullptr);
    if (!n->is_table())
      return err(line_of(*n), std::string(key),
                 std::string("must be a table ([") + std::string(key) + "]), not " + type_name(*n));
    return n->as_table();
  }

  // Anywhere in the document: a field whose name says it holds a credential.
  result<void> refuse_secret_fields(const toml::node& n, const std::string& where) const {
    if (const toml::table* t = n.as_table()) {
      for (const auto& [k, v] : *t) {
        const std::string field = path(where, k.str());
        // The keys of [prices] are model names, chosen by vendors, not by this file's schema.
        if (where != "prices" && is_secret_field(k.str()))
          return err(line_of(v), field,
                     "lathe.toml may not hold a key or other credential (keys come from the "
                     "environment only): remove this field and set key_env = \"NAME\" to the "
                     "environment variable that holds the key");
        if (auto r = refuse_secret_fields(v, field); !r) return r;
      }
    } else if (const toml::array* a = n.as_array()) {
      for (const toml::node& e : *a)
        if (auto r = refuse_secret_fields(e, where); !r) return r;
    }
    return {};
  }

  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

#define LATHE_TRY(var, expr) \
  auto var = (expr);         \
  if (!var) return tl::unexpected(var.error())

// Before parsing, line by line, comments included: a key pasted anywhere in the file is refused
// (and a syntax error's message, which may quote the line, never gets to show it).
result<void> refuse_key_text(const reader& r, std::string_view text) {
  uint32_t line = 1;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    if (auto prefix = key_like(text.substr(start, end - start)))
      return r.err(line, "",
                   "this line holds what looks like an API key ('" + *prefix +
                       "…'); keys may not be written in lathe.toml, not even in a comment: remove "
                       "it and name the environment variable that holds it with key_env");
    start = end + 1;
    ++line;
  }
  return {};
}

result<provider_kind> provider_of(const reader& r, const toml::table& root) {
  const toml::node* n = root.get("provider");
  if (!n) return r.err(1, "provider", "missing (one of: openai, anthropic, command, replay)");
  LATHE_TRY(s, r.str(root, "provider", ""));
  for (auto p : {provider_kind::openai, provider_kind::anthropic, provider_kind::command,
                 provider_kind::replay})
    if (**s == to_string(p)) return p;
  return r.err(line_of(*n), "provider",
               "'" + **s + "' is not a provider (one of: openai, anthropic, command, replay)");
}

// Credentials inside a URL are credentials in the file.
result<void> check_base_url(const reader& r, const toml::node& n, const std::string& url) {
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0)
    return r.err(line_of(n), "base_url", "must start with http:// or https://");
  const size_t authority = url.find("://") + 3;
  const size_t slash = url.find_first_of("/?#", authority);
  const std::string host =
      url.substr(authority, slash == std::string::npos ? std::string::npos : slash - authority);
  if (host.find('@') != std::string::npos)
    return r.err(line_of(n), "base_url",
                 "holds credentials (user:password@host); lathe.toml may not hold any: put the "
                 "key in an environment variable and name it with key_env");
  if (const size_t q = url.find('?'); q != std::string::npos) {
    const std::string query = lower(url.substr(q + 1));
    for (const char* p : {"key=", "api_key=", "apikey=", "token=", "access_token="})
      if (query.rfind(p, 0) == 0 || query.find(std::string("&") + p) != std::string::npos)
        return r.err(line_of(n), "base_url",
                     "carries a key in its query string; lathe.toml may not hold one: name the "
                     "environment variable that holds it with key_env");
  }
  return {};
}

result<void> read_prices(const reader& r, const toml::table& root, config& c) {
  LATHE_TRY(t, r.table(root, "prices"));
  if (!*t) return {};
  for (const auto& [model, v] : **t) {
    const std::string field = "prices." + std::string(model.str());
    if (!v.is_table())
      return r.err(
          line_of(v), field,
          "must be a table: [prices.\"" + std::string(model.str()) +
              "\"] input_per_million = …, output_per_million = … (USD per million tokens)");
    const toml::table& pt = *v.as_table();
    LATHE_TRY(keys, r.check_keys(pt, {"input_per_million", "output_per_million"}, field));
    LATHE_TRY(in, r.number(pt, "input_per_million", field, 0, false));
    LATHE_TRY(out, r.number(pt, "output_per_million", field, 0, false));
    if (!*in || !*out)
      return r.err(line_of(v), field,
                   std::string("needs both input_per_million and output_per_million (USD per "
                               "million tokens); missing ") +
                       (!*in ? "input_per_million" : "output_per_million"));
    c.prices[std::string(model.str())] = price{**in, **out};
  }
  return {};
}

result<void> read_limits(const reader& r, const toml::table& root, config& c) {
  LATHE_TRY(t, r.table(root, "limits"));
  if (!*t) return {};
  const toml::table& lt = **t;
  LATHE_TRY(keys,
            r.check_keys(lt, {"steps", "evals", "calls", "tokens", "usd", "seconds"}, "limits"));
  constexpr int64_t big = int64_t{1} << 50;
  LATHE_TRY(steps, r.integer(lt, "steps", "limits", 0, big));
  LATHE_TRY(evals, r.integer(lt, "evals", "limits", 0, big));
  LATHE_TRY(calls, r.integer(lt, "calls", "limits", 0, big));
  LATHE_TRY(tokens, r.integer(lt, "tokens", "limits", 0, big));
  LATHE_TRY(usd, r.number(lt, "usd", "limits", 0, false));
  LATHE_TRY(seconds, r.number(lt, "seconds", "limits", 0, false));
  c.caps.run.steps = *steps;
  c.caps.run.evals = *evals;
  c.caps.calls = *calls;
  c.caps.run.tokens = *tokens;
  c.caps.run.usd = *usd;
  c.caps.run.seconds = *seconds;
  return {};
}

result<void> read_transport(const reader& r, const toml::table& root, config& c) {
  LATHE_TRY(tt, r.table(root, "timeouts"));
  if (*tt) {
    LATHE_TRY(keys, r.check_keys(**tt, {"connect_seconds", "total_seconds"}, "timeouts"));
    LATHE_TRY(connect, r.number(**tt, "connect_seconds", "timeouts", 0, true));
    LATHE_TRY(total, r.number(**tt, "total_seconds", "timeouts", 0, true));
    if (*connect) c.timeout.connect_seconds = **connect;
    if (*total) c.timeout.total_seconds = **total;
    if (c.timeout.total_seconds < c.timeout.connect_seconds)
      return r.err(line_of(**tt), "timeouts",
                   "total_seconds (a whole attempt) must be at least connect_seconds");
  }
  LATHE_TRY(rt, r.table(root, "retries"));
  if (*rt) {
    LATHE_TRY(keys,
              r.check_keys(**rt, {"max_attempts", "initial_backoff_seconds", "max_backoff_seconds"},
                           "retries"));
    LATHE_TRY(attempts, r.integer(**rt, "max_attempts", "retries", 1, 10));
    LATHE_TRY(initial, r.number(**rt, "initial_backoff_seconds", "retries", 0, false));
    LATHE_TRY(most, r.number(**rt, "max_backoff_seconds", "retries", 0, false));
    if (*attempts) c.retry.max_attempts = static_cast<int32_t>(**attempts);
    if (*initial) c.retry.initial_backoff_seconds = **initial;
    if (*most) c.retry.max_backoff_seconds = **most;
    if (c.retry.max_backoff_seconds < c.retry.initial_backoff_seconds)
      return r.err(line_of(**rt), "retries",
                   "max_backoff_seconds must be at least initial_backoff_seconds");
  }
  return {};
}

result<void> read_command(const reader& r, const toml::table& root, config& c) {
  LATHE_TRY(t, r.table(root, "command"));
  if (c.provider != provider_kind::command) {
    if (*t)
      return r.err(line_of(**t), "command",
                   "is read only with provider = \"command\" (this file says provider = \"" +
                       std::string(to_string(c.provider)) + "\")");
    return {};
  }
  if (!*t)
    return r.err(1, "command",
                 "provider = \"command\" needs a [command] table with argv = [\"program\", …]");
  const toml::table& ct = **t;
  LATHE_TRY(keys, r.check_keys(ct, {"argv", "env", "timeout_seconds"}, "command"));
  LATHE_TRY(argv, r.strings(ct, "argv", "command"));
  if (argv->empty() || (*argv)[0].empty())
    return r.err(line_of(ct), "command.argv",
                 "must name the program to run, e.g. argv = [\"codex\", \"exec\"]");
  LATHE_TRY(env, r.strings(ct, "env", "command"));
  for (const auto& name : *env)
    if (!is_env_name(name))
      return r.err(line_of(*ct.get("env")), "command.env",
                   "'" + name + "' is not an environment variable name (letters, digits, _)");
  LATHE_TRY(timeout, r.number(ct, "timeout_seconds", "command", 0, true));
  c.command.argv = *argv;
  c.command.env = *env;
  if (*timeout) c.command.timeout_seconds = **timeout;
  return {};
}

result<void> read_cassettes(const reader& r, const toml::table& root, config& c) {
  LATHE_TRY(t, r.table(root, "cassettes"));
  if (!*t) {
    if (c.provider == provider_kind::replay)
      return r.err(1, "cassettes",
                   "provider = \"replay\" needs a [cassettes] table with dir = \"…\"");
    return {};
  }
  const toml::table& ct = **t;
  LATHE_TRY(keys, r.check_keys(ct, {"dir", "mode"}, "cassettes"));
  LATHE_TRY(dir, r.str(ct, "dir", "cassettes"));
  LATHE_TRY(mode, r.str(ct, "mode", "cassettes"));
  if (!*dir || (*dir)->empty())
    return r.err(line_of(ct), "cassettes.dir", "missing: the directory that holds the cassettes");
  const uint32_t mode_line = ct.get("mode") ? line_of(*ct.get("mode")) : line_of(ct);
  const std::string m = *mode ? **mode : (c.provider == provider_kind::replay ? "replay" : "");
  if (m == "replay") {
    if (c.provider != provider_kind::replay)
      return r.err(mode_line, "cassettes.mode",
                   "\"replay\" answers from cassettes only: say provider = \"replay\" (and keep "
                   "model to name what recorded them), or use mode = \"record\"");
    c.cassettes = cassette_mode::replay;
  } else if (m == "record") {
    if (c.provider == provider_kind::replay)
      return r.err(mode_line, "cassettes.mode",
                   "\"record\" needs a provider to call (openai, anthropic or command), not "
                   "replay");
    c.cassettes = cassette_mode::record;
  } else {
    return r.err(mode_line, "cassettes.mode",
                 m.empty() ? std::string("missing: \"record\" (call the provider and write "
                                         "cassettes)")
                           : "'" + m + "' is not a mode (one of: replay, record)");
  }
  fs::path d(**dir);
  if (d.is_relative()) d = fs::path(r.file()).parent_path() / d;
  std::error_code ec;
  fs::path abs = fs::absolute(d, ec);
  c.cassette_dir = (ec ? d : abs).lexically_normal();
  return {};
}

}  // namespace

const char* to_string(provider_kind p) {
  switch (p) {
    case provider_kind::openai:
      return "openai";
    case provider_kind::anthropic:
      return "anthropic";
    case provider_kind::command:
      return "command";
    case provider_kind::replay:
      return "replay";
  }
  return "openai";
}

const char* to_string(cassette_mode m) {
  switch (m) {
    case cassette_mode::off:
      return "off";
    case cassette_mode::replay:
      return "replay";
    case cassette_mode::record:
      return "record";
  }
  return "off";
}

std::optional<price> config::model_price() const {
  auto it = prices.find(model);
  if (it == prices.end()) return std::nullopt;
  return it->second;
}

std::string config::provenance_detail() const {
  return std::string(to_string(provider)) + "/" + model;
}

double config::call_seconds_bound() const {
  if (provider == provider_kind::command) return command.timeout_seconds;
  const double attempts = retry.max_attempts;
  return attempts * timeout.total_seconds + (attempts - 1) * retry.max_backoff_seconds;
}

result<config> parse_config(std::string_view text, const fs::path& file_name,
                            const env_lookup& env) {
  const reader r(file_name.string());
  LATHE_TRY(clean, refuse_key_text(r, text));
  toml::parse_result parsed = toml::parse(text, file_name.string());
  if (!parsed) {
    const auto& e = parsed.error();
    return r.err(e.source().begin.line > 0 ? e.source().begin.line : 1, "",
                 "TOML syntax: " + std::string(e.description()));
  }
  const toml::table& root = parsed.table();
  LATHE_TRY(secrets, r.refuse_secret_fields(root, ""));
  LATHE_TRY(keys, r.check_keys(root,
                               {"provider", "model", "base_url", "key_env", "concurrency", "prices",
                                "limits", "timeouts", "retries", "command", "cassettes"},
                               ""));
  config c;
  c.file = file_name;
  LATHE_TRY(provider, provider_of(r, root));
  c.provider = *provider;
  const bool http = c.provider == provider_kind::openai || c.provider == provider_kind::anthropic;

  LATHE_TRY(model, r.str(root, "model", ""));
  if (*model) c.model = **model;
  if (http && c.model.empty())
    return r.err(root.get("model") ? line_of(*root.get("model")) : 1, "model",
                 std::string("missing: provider = \"") + to_string(c.provider) +
                     "\" needs the model to ask for, e.g. model = \"" +
                     (c.provider == provider_kind::openai ? "gpt-4o" : "claude-sonnet-4-5") + "\"");

  LATHE_TRY(base_url, r.str(root, "base_url", ""));
  LATHE_TRY(key_env, r.str(root, "key_env", ""));
  if (!http) {
    for (const char* k : {"base_url", "key_env"})
      if (const toml::node* n = root.get(k))
        return r.err(line_of(*n), k,
                     std::string("is read only with provider = \"openai\" or \"anthropic\"") +
                         (c.provider == provider_kind::command
                              ? " (a command sees the variables named in [command] env)"
                              : ""));
  } else {
    const bool openai = c.provider == provider_kind::openai;
    if (*base_url) {
      LATHE_TRY(ok, check_base_url(r, *root.get("base_url"), **base_url));
      c.base_url = **base_url;
    } else if (auto v = env(openai ? "OPENAI_BASE_URL" : "ANTHROPIC_BASE_URL"); v && !v->empty()) {
      c.base_url = *v;
    } else {
      c.base_url = openai ? "https://api.openai.com/v1" : "https://api.anthropic.com";
    }
    if (*key_env) {
      // "" is allowed: a local server (vLLM, Ollama, llama.cpp) that wants no key.
      if (!(*key_env)->empty() && !is_env_name(**key_env))
        return r.err(line_of(*root.get("key_env")), "key_env",
                     "must be the NAME of the environment variable that holds the key (letters, "
                     "digits, _), not the key itself; \"\" for a server that wants none");
      c.key_env = **key_env;
    } else {
      c.key_env = openai ? "OPENAI_API_KEY" : "ANTHROPIC_API_KEY";
    }
  }

  LATHE_TRY(concurrency, r.integer(root, "concurrency", "", 1, 256));
  if (*concurrency) c.concurrency = static_cast<int32_t>(**concurrency);
  LATHE_TRY(prices, read_prices(r, root, c));
  LATHE_TRY(lim, read_limits(r, root, c));
  LATHE_TRY(transport, read_transport(r, root, c));
  LATHE_TRY(command, read_command(r, root, c));
  if (c.provider == provider_kind::command && c.model.empty())
    c.model = fs::path(c.command.argv[0]).filename().string();
  LATHE_TRY(cassettes, read_cassettes(r, root, c));

  // A money limit the ledger could not enforce is an error now, not a refusal mid-run.
  if (c.caps.run.usd) {
    const uint32_t line = line_of(*root.get("limits")->as_table()->get("usd"));
    if (c.provider == provider_kind::command)
      return r.err(line, "limits.usd",
                   "cannot be enforced for provider = \"command\" (an agent CLI reports no tokens "
                   "or cost); bound it with limits.calls and limits.seconds");
    if (http && !c.model_price())
      return r.err(line, "limits.usd",
                   "needs the price of model '" + c.model + "': add [prices.\"" + c.model +
                       "\"] with input_per_million and output_per_million (USD per million "
                       "tokens), or remove limits.usd");
  }
  return c;
}

}  // namespace lathe::llm
