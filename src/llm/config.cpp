// lathe.toml (docs/config.md). Strict like task.toml: a misspelt key or a wrong type is an error
// naming the file, the line and the field, because a limit that is silently ignored spends money.
#include "llm/config.h"
#include "llm/config_reader.h"
#include "core/lines.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <initializer_list>
#include <set>
#include <sstream>

namespace lathe::llm {

namespace fs = std::filesystem;
using namespace detail;

namespace {

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

// Anywhere in the document: a field whose name says it holds a credential.
result<void> refuse_secret_fields(const reader& r, const toml::node& n, const std::string& where) {
  if (const toml::table* t = n.as_table()) {
    for (const auto& [k, v] : *t) {
      const std::string field = reader::path(where, k.str());
      // The keys of [prices] are model names, chosen by vendors, not by this file's schema.
      if (where != "prices" && is_secret_field(k.str()))
        return r.err(line_of(v), field,
                   "lathe.toml may not hold a key or other credential (keys come from the "
                   "environment only): remove this field and set key_env = \"NAME\" to the "
                   "environment variable that holds the key");
      if (auto bad = refuse_secret_fields(r, v, field); !bad) return bad;
    }
  } else if (const toml::array* a = n.as_array()) {
    for (const toml::node& e : *a)
      if (auto bad = refuse_secret_fields(r, e, where); !bad) return bad;
  }
  return {};
}

// Before parsing, line by line, comments included: a key pasted anywhere in the file is refused
// (and a syntax error's message, which may quote the line, never gets to show it).
result<void> refuse_key_text(const reader& r, std::string_view text) {
  uint32_t line = 0;
  for (std::string_view l : split_lines(text)) {
    ++line;
    if (auto prefix = key_like(l))
      return r.err(line, "",
                   "this line holds what looks like an API key ('" + *prefix +
                       "…'); keys may not be written in lathe.toml, not even in a comment: remove "
                       "it and name the environment variable that holds it with key_env");
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
  LATHE_TRY(secrets, refuse_secret_fields(r, root, ""));
  LATHE_TRY(keys, r.check_keys(root,
                               {"provider", "model", "base_url", "key_env", "concurrency", "prices",
                                "limits", "timeouts", "retries", "command", "cassettes", "sampling",
                                "prompt_version", "executor"},
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

  LATHE_TRY(prompt_version, r.integer(root, "prompt_version", "", 1, 1000));
  if (*prompt_version) c.prompt_version = static_cast<int32_t>(**prompt_version);
  LATHE_TRY(concurrency, r.integer(root, "concurrency", "", 1, 256));
  if (*concurrency) c.concurrency = static_cast<int32_t>(**concurrency);
  LATHE_TRY(prices, read_prices(r, root, c));
  LATHE_TRY(lim, read_limits(r, root, c));
  LATHE_TRY(transport, read_transport(r, root, c));
  LATHE_TRY(command, read_command(r, root, c));
  if (c.provider == provider_kind::command && c.model.empty())
    c.model = fs::path(c.command.argv[0]).filename().string();
  LATHE_TRY(cassettes, read_cassettes(r, root, c));
  LATHE_TRY(sampled, read_sampling(r, root, c));

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
