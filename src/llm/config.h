// lathe.toml: which model lathe talks to and within which limits (docs/config.md).
//
// Looked up, first found wins (the files are not merged, so that one file says everything):
//   1. <workspace>/.lathe/lathe.toml   this workspace only, private (the directory is 0700)
//   2. <workspace>/lathe.toml          beside the project (the directory that holds .lathe/); it
//                                      holds no key, so it can be committed with the project
//   3. $XDG_CONFIG_HOME/lathe/lathe.toml, or ~/.config/lathe/lathe.toml when XDG_CONFIG_HOME is
//      unset or not absolute           this user, every workspace
// None found: no model, the rule engine only (offline).
//
// The file names the environment variable that holds a key (key_env), never a key: a file with
// a key-like field name (key, api_key, token…) or a key-like value (sk-…, even in a comment) is
// refused, and the message never repeats the value. Errors are "file:line: field: what".
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "llm/budget.h"

namespace lathe::llm {

enum class provider_kind : uint8_t { openai, anthropic, command, replay };
const char* to_string(provider_kind p);

// replay: answer from cassettes only; record: call the provider and write cassettes.
enum class cassette_mode : uint8_t { off, replay, record };
const char* to_string(cassette_mode m);

struct timeouts {
  double connect_seconds = 10;  // TCP + TLS
  double total_seconds = 300;   // one attempt, whole: connecting, sending, the last byte read
};

struct retries {
  int32_t max_attempts = 4;              // attempts per call, the first included
  double initial_backoff_seconds = 1.0;  // doubled each retry, with jitter; Retry-After wins
  double max_backoff_seconds = 60.0;
};

// An agent CLI (`codex exec`, `claude -p`): the prompt on stdin, the reply on stdout.
struct command_settings {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // names of the variables it may see; all others are removed
  double timeout_seconds = 600;
};

// One operation's sampling settings, [sampling.<operation>] (docs/config.md). An unset field
// keeps [sampling.default]'s, else the operation's own default (agent/llm_proposer.h
// default_sampling: deterministic, but mutate at Kernel-Smith's 0.6 / 0.95).
struct sampling {
  std::optional<double> temperature;  // 0..2
  std::optional<double> top_p;        // (0, 1]
  std::optional<int64_t> max_tokens;  // the reply's bound
};

// The names a [sampling.<name>] table may have: every operation of the proposer
// (agent/replies.h operation, by its to_string), and "default" for all of them.
inline constexpr std::array<std::string_view, 10> sampling_tables = {
    "default",  "propose_backward", "rederive_forward", "audit_features", "abstract_card",
    "materialize", "repair",        "seed_baseline",    "rank_paths",     "mutate"};

struct config {
  std::filesystem::path file;  // where it was read from
  provider_kind provider = provider_kind::openai;
  std::string model;
  std::string base_url;  // openai / anthropic only: the file's, else $OPENAI_BASE_URL or
                         // $ANTHROPIC_BASE_URL, else the vendor's
  std::string key_env;   // the variable that holds the key; empty: no key (a local server)
  std::map<std::string, price> prices;  // by model name
  limits caps;                          // [limits]; a run's --budget overrides per field
  int32_t concurrency = 1;              // model calls in flight at once
  timeouts timeout;
  retries retry;
  command_settings command;  // provider = "command" only (llm/command.h runs it)
  cassette_mode cassettes = cassette_mode::off;
  std::filesystem::path cassette_dir;  // absolute; relative in the file = from its directory
  std::map<std::string, sampling> sampling_by;  // [sampling.<name>], by name (sampling_tables)
  // The newest prompt template version to render (0: the newest shipped). 1 keeps the v1
  // templates, whose recorded calls (cassettes, call logs) then replay.
  int32_t prompt_version = 0;

  // The price of the configured model, if the file gives one.
  std::optional<price> model_price() const;
  // The provenance detail, "openai/gpt-4o" (DESIGN.md: llm:<provider>/<model>).
  std::string provenance_detail() const;
  // The worst-case wall time of one call, what a budget reserves: for `command`, its timeout;
  // else max_attempts x total_seconds + (max_attempts - 1) x max_backoff_seconds (a transport
  // that honours a longer Retry-After must cap it there, or the bound is not one).
  double call_seconds_bound() const;
};

// Reads an environment variable (tests pass their own); nullopt when unset.
using env_lookup = std::function<std::optional<std::string>(const std::string&)>;
env_lookup process_env();

// Where lathe.toml is looked for, in order. `workspace_root` is the .lathe directory (it may be
// empty: then only the user's file).
std::vector<std::filesystem::path> config_candidates(const std::filesystem::path& workspace_root,
                                                     const env_lookup& env);

struct found_config {
  std::vector<std::filesystem::path> searched;  // every candidate, in order
  std::optional<config> cfg;                    // nullopt: none exists (rules engine only)
};

// The first candidate that exists, read; an error when that file is wrong (a broken file is not
// skipped for the next one: the user meant it).
result<found_config> find_config(const std::filesystem::path& workspace_root,
                                 const env_lookup& env);

result<config> load_config(const std::filesystem::path& file, const env_lookup& env);
// `file_name` is used in messages and to resolve a relative cassette dir.
result<config> parse_config(std::string_view text, const std::filesystem::path& file_name,
                            const env_lookup& env);

// The values of the key variables this configuration may touch ($key_env, OPENAI_API_KEY,
// ANTHROPIC_API_KEY, and the key-like names the command may see), for scrubbing anything that is
// stored or logged. Values shorter than 8 characters are left out (placeholders such as
// "ollama", which scrubbing would wrongly remove from prompts).
std::vector<std::string> secret_values(const config* cfg, const env_lookup& env);

}  // namespace lathe::llm
