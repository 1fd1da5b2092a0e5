// lathe.toml (llm/config.h): every field read, defaults per provider, errors that name the
// file, line and field, refusal of anything that looks like a key (without repeating it), and
// where the file is looked for.
#include "llm/config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "store/temp_dir.h"

namespace lathe::llm {
namespace {

namespace fs = std::filesystem;
using lathe::testing::temp_dir;

// An environment the test controls, so that the machine's own variables do not leak in.
env_lookup fake_env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// Parses `text` as <dir>/lathe.toml and expects an error; returns its message.
std::string error_of(const std::string& text, const env_lookup& env = fake_env({})) {
  auto c = parse_config(text, "/cfg/lathe.toml", env);
  EXPECT_FALSE(c.has_value()) << text;
  if (c) return {};
  EXPECT_EQ(c.error().code, errc::parse_error);
  return c.error().message;
}

constexpr const char* full = R"(# every field
provider = "openai"
model = "gpt-4o"
base_url = "http://127.0.0.1:8000/v1"
key_env = "MY_LLM_KEY"
concurrency = 4

[prices."gpt-4o"]
input_per_million = 2.5
output_per_million = 10

[prices."gpt-4o-mini"]
input_per_million = 0.15
output_per_million = 0.6

[limits]
steps = 40
evals = 120
calls = 200
tokens = 2000000
usd = 5.0
seconds = 3600

[timeouts]
connect_seconds = 5
total_seconds = 120.5

[retries]
max_attempts = 3
initial_backoff_seconds = 0.5
max_backoff_seconds = 30

[cassettes]
dir = "cassettes/run1"
mode = "record"
)";

TEST(config, reads_every_field) {
  temp_dir dir;
  write(dir / "lathe.toml", full);
  auto c = load_config(dir / "lathe.toml", fake_env({}));
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_EQ(c->file, dir / "lathe.toml");
  EXPECT_EQ(c->provider, provider_kind::openai);
  EXPECT_EQ(c->model, "gpt-4o");
  EXPECT_EQ(c->base_url, "http://127.0.0.1:8000/v1");
  EXPECT_EQ(c->key_env, "MY_LLM_KEY");
  EXPECT_EQ(c->concurrency, 4);
  ASSERT_EQ(c->prices.size(), 2u);
  EXPECT_DOUBLE_EQ(c->prices.at("gpt-4o-mini").input_per_million, 0.15);
  ASSERT_TRUE(c->model_price().has_value());
  EXPECT_DOUBLE_EQ(c->model_price()->input_per_million, 2.5);
  EXPECT_DOUBLE_EQ(c->model_price()->output_per_million, 10.0);
  EXPECT_EQ(c->caps.run.steps, 40);
  EXPECT_EQ(c->caps.run.evals, 120);
  EXPECT_EQ(c->caps.calls, 200);
  EXPECT_EQ(c->caps.run.tokens, 2000000);
  EXPECT_EQ(c->caps.run.usd, 5.0);
  EXPECT_EQ(c->caps.run.seconds, 3600.0);
  EXPECT_EQ(c->timeout.connect_seconds, 5.0);
  EXPECT_EQ(c->timeout.total_seconds, 120.5);
  EXPECT_EQ(c->retry.max_attempts, 3);
  EXPECT_EQ(c->retry.initial_backoff_seconds, 0.5);
  EXPECT_EQ(c->retry.max_backoff_seconds, 30.0);
  EXPECT_EQ(c->cassettes, cassette_mode::record);
  EXPECT_EQ(c->cassette_dir, dir / "cassettes/run1");  // relative to the file's directory
  EXPECT_EQ(c->provenance_detail(), "openai/gpt-4o");
  // 3 attempts of 120.5 s and 2 backoffs of at most 30 s.
  EXPECT_DOUBLE_EQ(c->call_seconds_bound(), 3 * 120.5 + 2 * 30.0);
}

TEST(config, defaults_per_provider_and_the_vendor_variables) {
  auto openai =
      parse_config("provider = \"openai\"\nmodel = \"gpt-4o\"\n", "/x/lathe.toml", fake_env({}));
  ASSERT_TRUE(openai.has_value()) << openai.error().message;
  EXPECT_EQ(openai->base_url, "https://api.openai.com/v1");
  EXPECT_EQ(openai->key_env, "OPENAI_API_KEY");
  EXPECT_EQ(openai->concurrency, 1);
  EXPECT_FALSE(openai->caps.run.tokens.has_value());
  EXPECT_FALSE(openai->model_price().has_value());
  EXPECT_EQ(openai->cassettes, cassette_mode::off);
  EXPECT_EQ(openai->timeout.total_seconds, 300.0);
  EXPECT_EQ(openai->retry.max_attempts, 4);

  // OPENAI_BASE_URL is honoured when the file names no base_url; the file wins over it.
  auto env = fake_env({{"OPENAI_BASE_URL", "http://localhost:11434/v1"}});
  auto local = parse_config("provider = \"openai\"\nmodel = \"qwen2.5-coder\"\nkey_env = \"\"\n",
                            "/x/lathe.toml", env);
  ASSERT_TRUE(local.has_value()) << local.error().message;
  EXPECT_EQ(local->base_url, "http://localhost:11434/v1");
  EXPECT_EQ(local->key_env, "");  // a local server that wants no key
  auto file_wins =
      parse_config("provider = \"openai\"\nmodel = \"m\"\nbase_url = \"https://example.org/v1\"\n",
                   "/x/lathe.toml", env);
  EXPECT_EQ(file_wins->base_url, "https://example.org/v1");

  auto anthropic = parse_config("provider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\n",
                                "/x/lathe.toml", fake_env({}));
  ASSERT_TRUE(anthropic.has_value()) << anthropic.error().message;
  EXPECT_EQ(anthropic->base_url, "https://api.anthropic.com");
  EXPECT_EQ(anthropic->key_env, "ANTHROPIC_API_KEY");

  auto cmd = parse_config(
      "provider = \"command\"\n[command]\nargv = [\"/usr/bin/codex\", \"exec\"]\n"
      "env = [\"PATH\", \"HOME\", \"OPENAI_API_KEY\"]\ntimeout_seconds = 900\n",
      "/x/lathe.toml", fake_env({}));
  ASSERT_TRUE(cmd.has_value()) << cmd.error().message;
  EXPECT_EQ(cmd->model, "codex");  // named after its program
  EXPECT_EQ(cmd->command.argv, (std::vector<std::string>{"/usr/bin/codex", "exec"}));
  EXPECT_EQ(cmd->command.env.size(), 3u);
  EXPECT_EQ(cmd->command.timeout_seconds, 900.0);
  EXPECT_EQ(cmd->call_seconds_bound(), 900.0);
  EXPECT_EQ(cmd->key_env, "");
  EXPECT_EQ(cmd->base_url, "");

  auto replay = parse_config("provider = \"replay\"\n[cassettes]\ndir = \"/abs/cassettes\"\n",
                             "/x/lathe.toml", fake_env({}));
  ASSERT_TRUE(replay.has_value()) << replay.error().message;
  EXPECT_EQ(replay->cassettes, cassette_mode::replay);
  EXPECT_EQ(replay->cassette_dir, fs::path("/abs/cassettes"));
}

TEST(config, a_key_in_a_field_is_refused_without_repeating_it) {
  const std::string secret_value = "do-not-print-me-0123456789";
  const std::string m =
      error_of("provider = \"openai\"\nmodel = \"gpt-4o\"\napi_key = \"" + secret_value + "\"\n");
  EXPECT_EQ(m.rfind("/cfg/lathe.toml:3: api_key: ", 0), 0u) << m;
  EXPECT_NE(m.find("key_env"), std::string::npos) << m;
  EXPECT_EQ(m.find(secret_value), std::string::npos) << m;

  // Nested, and other spellings.
  const std::string nested = error_of(
      "provider = \"command\"\n[command]\nargv = [\"x\"]\ntoken = \"" + secret_value + "\"\n");
  EXPECT_EQ(nested.rfind("/cfg/lathe.toml:4: command.token: ", 0), 0u) << nested;
  for (const char* field : {"key", "API-Key", "openai_key", "password", "auth_token"}) {
    const std::string e =
        error_of(std::string("provider = \"openai\"\nmodel = \"m\"\n") + field + " = \"x\"\n");
    EXPECT_NE(e.find(std::string(":3: ") + field + ": "), std::string::npos) << e;
  }
}

TEST(config, a_key_like_value_is_refused_anywhere_even_in_a_comment) {
  const std::string key = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123456789";
  const std::string tail = key.substr(3);
  const std::string in_model = error_of("provider = \"openai\"\nmodel = \"" + key + "\"\n");
  EXPECT_EQ(in_model.rfind("/cfg/lathe.toml:2: ", 0), 0u) << in_model;
  EXPECT_NE(in_model.find("'sk-"), std::string::npos) << in_model;
  EXPECT_EQ(in_model.find(tail), std::string::npos) << in_model;

  const std::string in_comment =
      error_of("provider = \"openai\"\nmodel = \"gpt-4o\"\n\n# my key: " + key + "\n");
  EXPECT_EQ(in_comment.rfind("/cfg/lathe.toml:4: ", 0), 0u) << in_comment;
  EXPECT_EQ(in_comment.find(tail), std::string::npos) << in_comment;

  // The key pasted where its variable's name belongs; and one without a vendor prefix.
  const std::string in_key_env = error_of(
      "provider = \"anthropic\"\nmodel = \"m\"\nkey_env = \"sk-ant-api03-" + tail + "\"\n");
  EXPECT_EQ(in_key_env.rfind("/cfg/lathe.toml:3: ", 0), 0u) << in_key_env;
  EXPECT_EQ(in_key_env.find(tail), std::string::npos) << in_key_env;
  const std::string raw_key_env =
      error_of("provider = \"openai\"\nmodel = \"m\"\nkey_env = \"a1b2-c3d4-e5f6\"\n");
  EXPECT_NE(raw_key_env.find(":3: key_env: must be the NAME"), std::string::npos) << raw_key_env;

  // Even a syntax error's message cannot show it: the line is refused before parsing.
  const std::string broken = error_of("provider = \"openai\nmodel = " + key + "\n");
  EXPECT_EQ(broken.find(tail), std::string::npos) << broken;

  // Credentials in the URL.
  const std::string userinfo =
      error_of("provider = \"openai\"\nmodel = \"m\"\nbase_url = \"https://me:pw@host/v1\"\n");
  EXPECT_NE(userinfo.find(":3: base_url: holds credentials"), std::string::npos) << userinfo;
  EXPECT_EQ(userinfo.find("me:pw"), std::string::npos) << userinfo;
  const std::string query =
      error_of("provider = \"openai\"\nmodel = \"m\"\nbase_url = \"https://h/v1?api_key=abc\"\n");
  EXPECT_NE(query.find(":3: base_url: carries a key"), std::string::npos) << query;

  // Words that merely contain a prefix, or start with one but read like a name, are not keys.
  auto name =
      parse_config("provider = \"replay\"\n[cassettes]\ndir = \"hf_cassettes_of_the_long_week\"\n",
                   "/cfg/lathe.toml", fake_env({}));
  EXPECT_TRUE(name.has_value()) << name.error().message;
  auto fine = parse_config(
      "provider = \"openai\"\nmodel = \"my-task-abcdefghijklmnopqrstuvwxyz\"\n"
      "[prices.\"my-task-abcdefghijklmnopqrstuvwxyz\"]\ninput_per_million = 1\n"
      "output_per_million = 2\n[limits]\ntokens = 5\n",
      "/cfg/lathe.toml", fake_env({}));
  EXPECT_TRUE(fine.has_value()) << fine.error().message;
}

TEST(config, errors_name_the_file_the_line_and_the_field) {
  struct bad {
    std::string text;
    std::string expected;  // a part of the message after "/cfg/lathe.toml:"
  };
  const std::string head = "provider = \"openai\"\nmodel = \"gpt-4o\"\n";
  const bad cases[] = {
      {"model = \"m\"\n", "1: provider: missing"},
      {"provider = \"gemini\"\n", "1: provider: 'gemini' is not a provider"},
      {"provider = \"openai\"\n", "1: model: missing"},
      {head + "temperature = 0.2\n", "3: temperature: unknown key"},
      {head + "concurrency = \"4\"\n", "3: concurrency: must be a whole number, not a string"},
      {head + "concurrency = 0\n", "3: concurrency: must be between 1 and 256"},
      {head + "[limits]\nstepz = 3\n", "4: limits.stepz: unknown key"},
      {head + "[limits]\nsteps = 2.5\n", "4: limits.steps: must be a whole number, not a float"},
      {head + "[limits]\ntokens = -1\n", "4: limits.tokens: must be between 0"},
      {head + "[limits]\nusd = 2\n", "4: limits.usd: needs the price of model 'gpt-4o'"},
      {head + "[prices.\"gpt-4o\"]\ninput_per_million = 2\n", "3: prices.gpt-4o: needs both"},
      {head + "[prices.\"gpt-4o\"]\ninput_per_million = -2\noutput_per_million = 1\n",
       "4: prices.gpt-4o.input_per_million: must be a finite number >= 0"},
      {head + "[timeouts]\ntotal_seconds = 0\n",
       "4: timeouts.total_seconds: must be a finite number > 0"},
      {head + "[retries]\nmax_attempts = 50\n",
       "4: retries.max_attempts: must be between 1 and 10"},
      {head + "base_url = \"ftp://h\"\n", "3: base_url: must start with http"},
      {head + "[command]\nargv = [\"x\"]\n",
       "3: command: is read only with provider = \"command\""},
      {"provider = \"command\"\n", "1: command: provider = \"command\" needs a [command] table"},
      {"provider = \"command\"\n[command]\nargv = []\n", "2: command.argv: must name the program"},
      {"provider = \"command\"\nbase_url = \"http://h\"\n[command]\nargv = [\"x\"]\n",
       "2: base_url: is read only with provider"},
      {"provider = \"command\"\n[command]\nargv = [\"x\"]\nenv = [\"A-B\"]\n",
       "4: command.env: 'A-B' is not an environment variable name"},
      {"provider = \"command\"\n[command]\nargv = [\"x\"]\n[limits]\nusd = 1\n",
       "5: limits.usd: cannot be enforced for provider = \"command\""},
      {"provider = \"replay\"\n", "1: cassettes: provider = \"replay\" needs"},
      {"provider = \"replay\"\n[cassettes]\ndir = \"c\"\nmode = \"record\"\n",
       "4: cassettes.mode: \"record\" needs a provider"},
      {head + "[cassettes]\ndir = \"c\"\nmode = \"replay\"\n",
       "5: cassettes.mode: \"replay\" answers from cassettes only"},
      {head + "[cassettes]\ndir = \"c\"\n", "3: cassettes.mode: missing"},
      {head + "[cassettes]\ndir = \"c\"\nmode = \"rewind\"\n",
       "5: cassettes.mode: 'rewind' is not a mode"},
      {head + "limits = 5\n", "3: limits: must be a table"},
      {head + "[sampling.mutant]\ntemperature = 1\n", "3: sampling.mutant: not an operation (one of: default, "},
      {head + "[sampling.mutate]\ntemprature = 1\n", "4: sampling.mutate.temprature: unknown key"},
      {head + "[sampling.mutate]\ntemperature = 2.5\n", "4: sampling.mutate.temperature: must be at most 2"},
      {head + "[sampling.mutate]\ntemperature = -1\n", "4: sampling.mutate.temperature: must be a finite number >= 0"},
      {head + "[sampling.repair]\ntop_p = 0\n", "4: sampling.repair.top_p: must be a finite number > 0"},
      {head + "[sampling.repair]\ntop_p = 1.5\n", "4: sampling.repair.top_p: must be at most 1"},
      {head + "[sampling.repair]\nmax_tokens = 0\n", "4: sampling.repair.max_tokens: must be between 1"},
      {head + "[sampling]\nmutate = 0.6\n", "4: sampling.mutate: must be a table"},
      {head + "model = \"twice\"\n", "3: TOML syntax"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    const std::string m = error_of(c.text);
    EXPECT_EQ(m.rfind("/cfg/lathe.toml:" + c.expected, 0), 0u) << m;
  }
}

TEST(config, looked_up_in_the_workspace_then_the_user_config_first_found_wins) {
  temp_dir dir;
  const fs::path project = dir / "project";
  const fs::path ws = project / ".lathe";
  fs::create_directories(ws);
  const fs::path home = dir / "home";
  const fs::path xdg = dir / "xdg";
  auto env = fake_env({{"HOME", home.string()}, {"XDG_CONFIG_HOME", xdg.string()}});
  auto cfg = [](const std::string& model) {
    return "provider = \"openai\"\nmodel = \"" + model + "\"\n";
  };

  // Nothing anywhere: no model (rules engine only), and where it looked.
  auto none = find_config(ws, env);
  ASSERT_TRUE(none.has_value()) << none.error().message;
  EXPECT_FALSE(none->cfg.has_value());
  EXPECT_EQ(none->searched, (std::vector<fs::path>{ws / "lathe.toml", project / "lathe.toml",
                                                   xdg / "lathe" / "lathe.toml"}));

  write(home / ".config" / "lathe" / "lathe.toml", cfg("from-home"));
  EXPECT_FALSE(find_config(ws, env)->cfg.has_value());  // XDG_CONFIG_HOME replaces ~/.config
  auto no_xdg = fake_env({{"HOME", home.string()}, {"XDG_CONFIG_HOME", "relative/dir"}});
  EXPECT_EQ(find_config(ws, no_xdg)->cfg->model, "from-home");  // a relative one is invalid
  write(xdg / "lathe" / "lathe.toml", cfg("from-xdg"));
  EXPECT_EQ(find_config(ws, env)->cfg->model, "from-xdg");
  write(project / "lathe.toml", cfg("from-project"));
  EXPECT_EQ(find_config(ws, env)->cfg->model, "from-project");
  write(ws / "lathe.toml", cfg("from-workspace"));
  auto found = find_config(ws, env);
  EXPECT_EQ(found->cfg->model, "from-workspace");
  EXPECT_EQ(found->cfg->file, ws / "lathe.toml");

  // A broken file is reported, not skipped for the next one.
  write(ws / "lathe.toml", "provider = \"openai\"\n");
  auto broken = find_config(ws, env);
  ASSERT_FALSE(broken.has_value());
  EXPECT_EQ(broken.error().message.rfind((ws / "lathe.toml").string() + ":1: model", 0), 0u)
      << broken.error().message;

  // Without a workspace, only the user's file.
  EXPECT_EQ(config_candidates({}, env), (std::vector<fs::path>{xdg / "lathe" / "lathe.toml"}));
}

TEST(config, secret_values_are_the_keys_it_may_touch) {
  auto env = fake_env({{"OPENAI_API_KEY", "sk-openai-000000000000"},
                       {"ANTHROPIC_API_KEY", "sk-ant-11111111111111"},
                       {"MY_LLM_KEY", "my-own-key-2222222222"},
                       {"GITHUB_TOKEN", "ghp_3333333333333333"},
                       {"SHORT_KEY", "ollama"},
                       {"PATH", "/usr/bin:/bin:/usr/local/bin"}});
  auto c = parse_config("provider = \"openai\"\nmodel = \"m\"\nkey_env = \"MY_LLM_KEY\"\n",
                        "/x/lathe.toml", env);
  ASSERT_TRUE(c.has_value());
  auto s = secret_values(&*c, env);
  EXPECT_EQ(s, (std::vector<std::string>{"sk-openai-000000000000", "sk-ant-11111111111111",
                                         "my-own-key-2222222222"}));
  auto cmd = parse_config(
      "provider = \"command\"\n[command]\nargv = [\"x\"]\n"
      "env = [\"PATH\", \"GITHUB_TOKEN\", \"SHORT_KEY\"]\n",
      "/x/lathe.toml", env);
  ASSERT_TRUE(cmd.has_value()) << cmd.error().message;
  auto sc = secret_values(&*cmd, env);
  EXPECT_EQ(sc.size(), 3u);
  EXPECT_NE(std::find(sc.begin(), sc.end(), "ghp_3333333333333333"), sc.end());
  EXPECT_EQ(std::find(sc.begin(), sc.end(), "/usr/bin:/bin:/usr/local/bin"), sc.end());
  EXPECT_EQ(std::find(sc.begin(), sc.end(), "ollama"), sc.end());  // too short to scrub
  EXPECT_EQ(secret_values(nullptr, env).size(), 2u);
}

TEST(config, sampling_per_operation) {
  auto c = parse_config("provider = \"openai\"\nmodel = \"m\"\n[sampling.default]\ntemperature = 0.2\n"
                        "[sampling.mutate]\ntop_p = 0.9\nmax_tokens = 8000\n",
                        "/cfg/lathe.toml", fake_env({}));
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->sampling_by.size(), 2u);
  EXPECT_EQ(c->sampling_by.at("default").temperature, 0.2);
  EXPECT_FALSE(c->sampling_by.at("default").top_p);
  EXPECT_FALSE(c->sampling_by.at("mutate").temperature);
  EXPECT_EQ(c->sampling_by.at("mutate").top_p, 0.9);
  EXPECT_EQ(c->sampling_by.at("mutate").max_tokens, 8000);
}

}  // namespace
}  // namespace lathe::llm
