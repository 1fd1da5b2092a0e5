// lathe.toml's tables (docs/config.md): prices, limits, timeouts and retries, command,
// cassettes, sampling. Strict: an unknown key or a wrong type is an error naming file, line, field.
#include <filesystem>

#include "llm/config_reader.h"

namespace lathe::llm::detail {

namespace fs = std::filesystem;

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

result<void> read_sampling(const reader& r, const toml::table& root, config& c) {
  LATHE_TRY(t, r.table(root, "sampling"));
  if (!*t) return {};
  for (const auto& [name, v] : **t) {
    const std::string field = "sampling." + std::string(name.str());
    if (std::find(sampling_tables.begin(), sampling_tables.end(), name.str()) == sampling_tables.end()) {
      std::string names;
      for (auto n : sampling_tables) names += (names.empty() ? "" : ", ") + std::string(n);
      return r.err(line_of(v), field, "not an operation (one of: " + names + ")");
    }
    if (!v.is_table())
      return r.err(line_of(v), field,
                   "must be a table: [" + field + "] temperature = …, top_p = …, max_tokens = …");
    const toml::table& st = *v.as_table();
    LATHE_TRY(keys, r.check_keys(st, {"temperature", "top_p", "max_tokens"}, field));
    LATHE_TRY(temperature, r.number(st, "temperature", field, 0, false));
    LATHE_TRY(top_p, r.number(st, "top_p", field, 0, true));
    LATHE_TRY(max_tokens, r.integer(st, "max_tokens", field, 1, int64_t{1} << 24));
    if (*temperature && **temperature > 2)
      return r.err(line_of(*st.get("temperature")), field + ".temperature", "must be at most 2");
    if (*top_p && **top_p > 1)
      return r.err(line_of(*st.get("top_p")), field + ".top_p", "must be at most 1");
    c.sampling_by[std::string(name.str())] = sampling{*temperature, *top_p, *max_tokens};
  }
  return {};
}

}  // namespace lathe::llm::detail
