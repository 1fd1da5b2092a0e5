#include "llm/factory.h"

#include "llm/anthropic.h"
#include "llm/cassette.h"
#include "llm/command.h"
#include "llm/openai.h"

namespace lathe::llm {
namespace {

http_options transport(const config& cfg) {
  http_options h;
  h.connect_timeout_s = cfg.timeout.connect_seconds;
  h.timeout_s = cfg.timeout.total_seconds;
  h.retry.max_attempts = cfg.retry.max_attempts;
  h.retry.base_delay_s = cfg.retry.initial_backoff_seconds;
  h.retry.max_delay_s = cfg.retry.max_backoff_seconds;
  h.max_in_flight = cfg.concurrency;
  return h;
}

}  // namespace

result<std::unique_ptr<provider>> make_provider(const config& cfg) {
  if (cfg.cassettes == cassette_mode::replay)
    return std::unique_ptr<provider>(std::make_unique<replay_provider>(cfg.cassette_dir));
  std::unique_ptr<provider> p;
  switch (cfg.provider) {
    case provider_kind::openai: {
      openai_options o;
      o.model = cfg.model;
      o.base_url = cfg.base_url;
      // No key variable named: a local server (vLLM, llama.cpp, Ollama) that wants none.
      o.key_env = cfg.key_env;
      o.key = cfg.key_env.empty() ? key_policy::none : key_policy::when_remote;
      o.http = transport(cfg);
      p = std::make_unique<openai_provider>(std::move(o));
      break;
    }
    case provider_kind::anthropic: {
      anthropic_options o;
      o.model = cfg.model;
      o.base_url = cfg.base_url;
      if (!cfg.key_env.empty()) o.key_env = cfg.key_env;
      o.http = transport(cfg);
      p = std::make_unique<anthropic_provider>(std::move(o));
      break;
    }
    case provider_kind::command: {
      command_config c;
      c.name = cfg.model.empty() ? "agent" : cfg.model;
      c.argv = cfg.command.argv;
      c.env = cfg.command.env;
      c.timeout_seconds = cfg.command.timeout_seconds;
      if (c.argv.empty())
        return fail(errc::invalid_argument, cfg.file.string() + ": provider \"command\" without [command] argv");
      p = std::make_unique<command_provider>(std::move(c));
      break;
    }
    case provider_kind::replay:
      return std::unique_ptr<provider>(std::make_unique<replay_provider>(cfg.cassette_dir));
  }
  if (cfg.cassettes == cassette_mode::record) {
    record_options r;
    if (!cfg.key_env.empty()) r.secret_variables.push_back(cfg.key_env);
    p = std::make_unique<record_provider>(std::move(p), cfg.cassette_dir, std::move(r));
  }
  return p;
}

}  // namespace lathe::llm
