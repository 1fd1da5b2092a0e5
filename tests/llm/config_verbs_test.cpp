// Every verb finds lathe.toml the same way (issue 23: `lathe optimize` once missed the
// .lathe/lathe.toml that `lathe doctor` read). For each documented location a broken file is put
// there alone, and doctor, decompose, optimize and evolve must each refuse it by its path: a verb
// that looked elsewhere would run on with the rules engine. Then two files at once: the earlier
// location wins for every verb. Run as a user runs lathe, with HOME and XDG_CONFIG_HOME inside
// the test's directory.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "lathe_cli_run.h"

namespace fs = std::filesystem;
using lathe::testing::run_result;

namespace {

class config_verbs : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lathe-config-verbs-XXXXXX";
    dir_ = mkdtemp(tmpl);
    fs::create_directories(project() / ".lathe");
    fs::create_directories(dir_ / "home");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path project() const { return dir_ / "project"; }

  // Each documented location (docs/config.md), in the order lathe reads them. `xdg`: whether
  // XDG_CONFIG_HOME is set (it replaces ~/.config when it is).
  struct location {
    std::string name;
    fs::path file;
    bool xdg;
  };
  std::vector<location> locations() const {
    return {{"the workspace", project() / ".lathe/lathe.toml", true},
            {"beside the workspace", project() / "lathe.toml", true},
            {"XDG_CONFIG_HOME", dir_ / "xdg/lathe/lathe.toml", true},
            {"~/.config", dir_ / "home/.config/lathe/lathe.toml", false}};
  }

  run_result lathe(const std::string& args, bool xdg) const {
    const std::string env = std::string("env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY ") +
                            (xdg ? "XDG_CONFIG_HOME='" + (dir_ / "xdg").string() + "' " : "-u XDG_CONFIG_HOME ") +
                            "HOME='" + (dir_ / "home").string() + "' LATHE_LOCK_DIR='" +
                            (dir_ / "locks").string() + "' ";
    const fs::path err = dir_ / "stderr";
    return lathe::testing::run_shell("cd '" + project().string() + "' && " + env + "'" + LATHE_BINARY_DIR + "/lathe' --workspace . " + args,
                                     err);
  }

  // A file that does not load, named by its provider so that each location's is told apart.
  static void write_broken(const fs::path& file, const std::string& tag) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << "provider = \"broken-" << tag << "\"\nmodel = \"m\"\n";
  }

  fs::path dir_;
};

// The verbs that read lathe.toml, each with arguments that reach the proposer at once.
const std::vector<std::string> verbs = {
    "doctor --no-measure",
    "decompose silu --no-time --max-steps 1",
    "optimize silu naive --budget steps=1 --no-expert",
    "evolve silu --budget evals=1",
};

}  // namespace

TEST_F(config_verbs, every_verb_reads_each_documented_location) {
  for (const auto& loc : locations()) {
    write_broken(loc.file, "x");
    for (const auto& verb : verbs) {
      run_result r = lathe(verb, loc.xdg);
      const std::string all = r.out + r.err;
      EXPECT_NE(all.find(loc.file.string()), std::string::npos)
          << "lathe " << verb << " did not read " << loc.name << " (" << loc.file << "):\n" << all;
      EXPECT_NE(all.find("broken-x"), std::string::npos) << verb << ":\n" << all;
      if (verb.rfind("doctor", 0) != 0) EXPECT_NE(r.code, 0) << verb << " ran on past a broken lathe.toml";
    }
    fs::remove(loc.file);
  }
}

TEST_F(config_verbs, the_earlier_location_wins_for_every_verb) {
  const auto locs = locations();
  for (size_t i = 0; i + 1 < locs.size(); ++i) {
    if (!locs[i + 1].xdg && locs[i].xdg) continue;  // ~/.config is read only without XDG_CONFIG_HOME
    write_broken(locs[i].file, "first");
    write_broken(locs[i + 1].file, "second");
    for (const auto& verb : verbs) {
      run_result r = lathe(verb, locs[i].xdg);
      const std::string all = r.out + r.err;
      EXPECT_NE(all.find("broken-first"), std::string::npos) << verb << " with " << locs[i].name << ":\n" << all;
      EXPECT_EQ(all.find("broken-second"), std::string::npos) << verb << " read " << locs[i + 1].name << ":\n" << all;
    }
    fs::remove(locs[i].file);
    fs::remove(locs[i + 1].file);
  }
}
