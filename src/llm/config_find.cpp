// Where lathe.toml is found (config.h: the workspace, beside it, the user's directory), and the
// key values a configuration may touch, for scrubbing what is stored.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

#if __has_include(<toml++/toml.hpp>)
#include <toml++/toml.hpp>
#else
#include <toml++/toml.h>  // Debian's libtomlplusplus-dev 3.3 ships only toml.h
#endif

#include "llm/config.h"

namespace lathe::llm {

namespace fs = std::filesystem;

env_lookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

std::vector<fs::path> config_candidates(const fs::path& workspace_root, const env_lookup& env) {
  std::vector<fs::path> out;
  if (!workspace_root.empty()) {
    out.push_back(workspace_root / "lathe.toml");
    out.push_back(workspace_root.parent_path() / "lathe.toml");
  }
  // XDG Base Directory: a relative $XDG_CONFIG_HOME is invalid and is ignored.
  auto xdg = env("XDG_CONFIG_HOME");
  if (xdg && !xdg->empty() && fs::path(*xdg).is_absolute())
    out.push_back(fs::path(*xdg) / "lathe" / "lathe.toml");
  else if (auto home = env("HOME"); home && !home->empty())
    out.push_back(fs::path(*home) / ".config" / "lathe" / "lathe.toml");
  return out;
}

namespace {

// A lathe.toml with an [executor] table and nothing else (no provider): it configures where
// evaluations run (cli/executor_slurm.h), and no model, as a missing file would not.
bool executor_only(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  toml::parse_result parsed = toml::parse(ss.str(), file.string());
  return parsed && parsed.table().size() == 1 && parsed.table().contains("executor");
}

}  // namespace

result<found_config> find_config(const fs::path& workspace_root, const env_lookup& env) {
  found_config f;
  f.searched = config_candidates(workspace_root, env);
  for (const auto& p : f.searched) {
    std::error_code ec;
    if (!fs::exists(p, ec)) continue;
    if (executor_only(p)) break;  // the first file found says everything: here, no model
    auto c = load_config(p, env);
    if (!c) return tl::unexpected(c.error());
    f.cfg = std::move(*c);
    break;
  }
  return f;
}

result<config> load_config(const fs::path& file, const env_lookup& env) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return fail(errc::not_found, file.string() + ": not a file");
  std::ifstream in(file, std::ios::binary);
  if (!in) return fail(errc::io_error, file.string() + ": cannot read the file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_config(ss.str(), file, env);
}

std::vector<std::string> secret_values(const config* cfg, const env_lookup& env) {
  std::vector<std::string> names = {"OPENAI_API_KEY", "ANTHROPIC_API_KEY"};
  if (cfg) {
    if (!cfg->key_env.empty()) names.push_back(cfg->key_env);
    for (const auto& n : cfg->command.env) {
      std::string up = n;
      for (char& ch : up) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      for (const char* word : {"KEY", "TOKEN", "SECRET", "PASSWORD"})
        if (up.find(word) != std::string::npos) {
          names.push_back(n);
          break;
        }
    }
  }
  std::vector<std::string> out;
  for (const auto& n : names) {
    auto v = env(n);
    if (v && v->size() >= 8 && std::find(out.begin(), out.end(), *v) == out.end())
      out.push_back(*v);
  }
  return out;
}

}  // namespace lathe::llm
