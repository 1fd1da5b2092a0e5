// `lathe doctor`'s model section, run as a user runs it: which lathe.toml was found (or none:
// rules engine only), its settings, whether the key variable is set (never its value), and a
// broken file reported with its file, line and field.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace {

struct run_result {
  int code = -1;
  std::string out;  // stdout and stderr together: a key must appear in neither
};

class doctor_model : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lathe-doctor-model-XXXXXX";
    dir_ = mkdtemp(tmpl);
    fs::create_directories(project() / ".lathe");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path project() const { return dir_ / "project"; }

  // The machine's own configuration and keys must not leak in: HOME and XDG_CONFIG_HOME point
  // into the test's directory, and the vendor variables are unset.
  run_result doctor(const std::string& args, const std::string& env = "",
                    bool with_stderr = true) const {
    const std::string cmd = "cd '" + project().string() +
                            "' && env -u OPENAI_API_KEY -u "
                            "ANTHROPIC_API_KEY -u OPENAI_BASE_URL HOME='" +
                            (dir_ / "home").string() + "' XDG_CONFIG_HOME='" +
                            (dir_ / "xdg").string() + "' LATHE_LOCK_DIR='" +
                            (dir_ / "locks").string() + "' " + env +
                            " '" + LATHE_BINARY_DIR + "/lathe' --workspace . doctor --no-measure " +
                            args + (with_stderr ? " 2>&1" : " 2>/dev/null");
    run_result r;
    FILE* p = popen(cmd.c_str(), "r");
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
    const int st = pclose(p);
    r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
  }

  nlohmann::json model_json(const std::string& env = "") const {
    auto r = doctor("--json", env, false);
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j.is_discarded() ? nlohmann::json() : j["model"];
  }

  void write_config(const fs::path& where, const std::string& text) const {
    fs::create_directories(where.parent_path());
    std::ofstream(where) << text;
  }

  fs::path dir_;
};

const std::string key_value = "sk-doctor-test-QwErTyUiOp0123456789";

TEST_F(doctor_model, without_a_lathe_toml_it_is_the_rules_engine_only) {
  auto text = doctor("");
  EXPECT_NE(
      text.out.find("model      none: rules engine only (offline); lathe.toml looked for in " +
                    (project() / ".lathe/lathe.toml").string() + ", " +
                    (project() / "lathe.toml").string() + ", " +
                    (dir_ / "xdg/lathe/lathe.toml").string()),
      std::string::npos)
      << text.out;
  auto m = model_json();
  EXPECT_TRUE(m["offline"].get<bool>());
  EXPECT_TRUE(m["config"].is_null());
  EXPECT_TRUE(m["error"].is_null());
  ASSERT_EQ(m["searched"].size(), 3u);
  EXPECT_EQ(m["searched"][0], (project() / ".lathe/lathe.toml").string());
  EXPECT_FALSE(m.contains("provider"));
}

TEST_F(doctor_model, reports_the_file_found_and_whether_the_key_is_set_never_its_value) {
  const int baseline_code = doctor("").code;  // what the rest of the machine says
  write_config(dir_ / "xdg/lathe/lathe.toml", "provider = \"anthropic\"\nmodel = \"ignored\"\n");
  write_config(project() / ".lathe/lathe.toml", R"(provider = "openai"
model = "gpt-4o"
base_url = "http://127.0.0.1:9/v1"
key_env = "LATHE_DOCTOR_TEST_KEY"
concurrency = 3
[prices."gpt-4o"]
input_per_million = 2.5
output_per_million = 10
[limits]
tokens = 100000
usd = 2.5
)");
  const std::string with_key = "LATHE_DOCTOR_TEST_KEY='" + key_value + "'";
  auto m = model_json(with_key);
  EXPECT_FALSE(m["offline"].get<bool>());
  EXPECT_EQ(m["config"], (project() / ".lathe/lathe.toml").string());  // the workspace's wins
  EXPECT_EQ(m["provider"], "openai");
  EXPECT_EQ(m["model"], "gpt-4o");
  EXPECT_EQ(m["base_url"], "http://127.0.0.1:9/v1");
  EXPECT_EQ(m["key_env"], "LATHE_DOCTOR_TEST_KEY");
  EXPECT_TRUE(m["key_set"].get<bool>());
  EXPECT_EQ(m["price"]["output_per_million"], 10.0);
  EXPECT_EQ(m["limits"]["tokens"], 100000);
  EXPECT_EQ(m["limits"]["usd"], 2.5);
  EXPECT_TRUE(m["limits"]["steps"].is_null());
  EXPECT_EQ(m["concurrency"], 3);

  auto text = doctor("", with_key);
  EXPECT_EQ(text.code, baseline_code) << text.out;
  EXPECT_NE(
      text.out.find("model      openai/gpt-4o from " + (project() / ".lathe/lathe.toml").string()),
      std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("key $LATHE_DOCTOR_TEST_KEY is set (not shown)"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("limits tokens 100000, usd $2.5"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find(key_value), std::string::npos) << "the doctor printed the key";
  EXPECT_EQ(doctor("--json", with_key).out.find(key_value), std::string::npos);

  // The same file without the variable: said plainly, and something to fix.
  auto unset = doctor("");
  EXPECT_EQ(unset.code, 1);
  EXPECT_NE(unset.out.find("key $LATHE_DOCTOR_TEST_KEY is NOT SET"), std::string::npos)
      << unset.out;
  EXPECT_FALSE(model_json()["key_set"].get<bool>());
}

TEST_F(doctor_model, a_broken_lathe_toml_is_reported_with_file_line_and_field) {
  write_config(project() / "lathe.toml",
               "provider = \"openai\"\nmodel = \"gpt-4o\"\n[limits]\nusd = 3\n");
  const std::string where = (project() / "lathe.toml").string() + ":4: limits.usd: ";
  auto text = doctor("");
  EXPECT_EQ(text.code, 1);
  EXPECT_NE(text.out.find("model      lathe.toml has an error, so no model is used: " + where),
            std::string::npos)
      << text.out;
  auto m = model_json();
  ASSERT_TRUE(m["error"].is_string()) << m.dump();
  EXPECT_EQ(m["error"].get<std::string>().rfind(where, 0), 0u) << m["error"];
  EXPECT_TRUE(m["config"].is_null());

  // A key pasted into the file: refused, and not repeated.
  write_config(project() / "lathe.toml",
               "provider = \"openai\"\nmodel = \"gpt-4o\"\n# " + key_value + "\n");
  auto pasted = doctor("");
  EXPECT_EQ(pasted.code, 1);
  EXPECT_NE(pasted.out.find("looks like an API key"), std::string::npos) << pasted.out;
  EXPECT_EQ(pasted.out.find(key_value), std::string::npos) << pasted.out;
}

}  // namespace

TEST_F(doctor_model, llm_ping_makes_one_tiny_call_and_reports_what_came_back) {
  // An agent CLI that answers "pong" after reading its prompt: the ping goes through the same
  // provider a run would use.
  const fs::path agent = dir_ / "agent.sh";
  std::ofstream(agent) << "#!/bin/sh\ncat > /dev/null\necho pong\n";
  fs::permissions(agent, fs::perms::owner_all);
  write_config(project() / ".lathe/lathe.toml",
               "provider = \"command\"\nmodel = \"shell\"\n[command]\nargv = [\"" + agent.string() +
                   "\"]\n");
  auto ok = doctor("--llm-ping");
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_NE(ok.out.find("ping       ok in"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("\"pong\""), std::string::npos) << ok.out;
  auto j = nlohmann::json::parse(doctor("--llm-ping --json", "", false).out, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["ping"]["ok"], true);
  EXPECT_EQ(j["ping"]["reply"], "pong");

  // A server that is not there: the ping fails, says why, and the doctor exits 1.
  write_config(project() / ".lathe/lathe.toml",
               "provider = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\n"
               "key_env = \"\"\n[retries]\nmax_attempts = 1\n");
  auto down = doctor("--llm-ping");
  EXPECT_EQ(down.code, 1) << down.out;
  EXPECT_NE(down.out.find("ping       FAILED: network"), std::string::npos) << down.out;

  // Without a model there is nothing to ping, and nothing fails.
  fs::remove(project() / ".lathe/lathe.toml");
  auto none = doctor("--llm-ping");
  EXPECT_EQ(none.code, 0) << none.out;
  EXPECT_NE(none.out.find("ping       nothing to ping"), std::string::npos) << none.out;
}
