// lathe synth's default run over the installed torchvision and torch.nn (issue 47, must show): at
// least 100 problems kept, each one `lathe task show` reads and `lathe eval` checks with its own
// Model as the candidate. Two tests over one output folder in the build tree, so that neither
// passes the 2-core VM's 120 s: synth_default_run (fixture synth_default: the run itself, ~110 s,
// and the manifest's promises) and synth_default_eval (a sample of its kept problems, chosen by
// what they exercise, through task show and eval). Both `slow` (cmake/lathe_test.cmake): the full
// suite and CI run them, scripts/check only with --slow. Nothing is timed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "lathe_cli_run.h"

namespace fs = std::filesystem;
using lathe::testing::run_lathe;
using lathe::testing::run_shell;
using nlohmann::json;

namespace {

const fs::path out_dir() { return fs::path(LATHE_BINARY_DIR) / "synth-default"; }

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The installed trees as docs/synth.md names them: Debian's python3-torchvision and python3-torch
// (scripts/install-deps installs both). The first interpreter that finds both, by importlib's
// finder (which reads paths and imports neither); empty when none does.
std::vector<std::string> installed_trees() {
  for (const char* python : {"/usr/bin/python3", "python3"}) {
    const auto r = run_shell(
        std::string(python) +
            " -I -c \"import importlib.util as u, os; t = u.find_spec('torchvision'); "
            "n = u.find_spec('torch'); print(t.submodule_search_locations[0]); "
            "print(os.path.join(n.submodule_search_locations[0], 'nn'))\"",
        fs::temp_directory_path() / ("lathe-synth-default-" + std::to_string(getpid())));
    std::istringstream lines(r.out);
    std::string vision, nn;
    if (r.code == 0 && std::getline(lines, vision) && std::getline(lines, nn) &&
        fs::is_directory(vision) && fs::is_directory(nn))
      return {vision, nn};
  }
  return {};
}

TEST(synth_default, keeps_at_least_100_problems_from_torchvision_and_torch_nn) {
  const auto trees = installed_trees();
  ASSERT_EQ(trees.size(), 2u) << "no python3 finds torchvision and torch (scripts/install-deps "
                                 "installs python3-torchvision)";
  fs::remove_all(out_dir());
  const auto r = run_lathe("synth '" + trees[0] + "' '" + trees[1] + "' --out '" +
                           out_dir().string() + "' --json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const json s = json::parse(r.out);
  std::cout << "found " << s["found"] << ", kept " << s["kept"] << ", duplicates "
            << s["duplicates"] << ", refused " << s["refused"] << ", wall "
            << s["wall_seconds"] << " s\n";
  EXPECT_GE(s["kept"].get<int>(), 100) << r.out;
  EXPECT_EQ(s["trials"]["pending"], 0) << r.out;  // every planned trial came back

  // The manifest keeps its promises: one problem file per kept module, none for the others; a
  // reason for every refusal; every kept module passed the filters.
  const json m = json::parse(slurp(out_dir() / "manifest.json"));
  int kept = 0, files = 0, sized = 0;
  for (const auto& mod : m["modules"]) {
    if (mod["status"] == "kept") {
      ++kept;
      EXPECT_EQ(mod["filters"], "passed") << mod.dump();
      EXPECT_TRUE(fs::is_regular_file(out_dir() / mod["problem"].get<std::string>()))
          << mod.dump();
      // Sizes for the target run time: where the batch was scaled, every tensor input leads
      // with it and the problem file sets it.
      if (mod.contains("sizes")) {
        const json batch = mod["sizes"]["batch"];
        for (const auto& in : mod["inputs"])
          if (in.contains("shape")) EXPECT_EQ(in["shape"][0], batch) << mod.dump();
        EXPECT_NE(slurp(out_dir() / mod["problem"].get<std::string>())
                      .find("\nbatch_size = " + batch.dump() + "  #"),
                  std::string::npos)
            << mod.dump();
        ++sized;
      }
    } else {
      EXPECT_FALSE(mod.contains("problem")) << mod.dump();
    }
    if (mod["status"] == "refused") {
      EXPECT_FALSE(mod["reason"].get<std::string>().empty()) << mod.dump();
    }
  }
  for (const auto& f : fs::directory_iterator(out_dir() / "problems")) files += f.is_regular_file();
  EXPECT_EQ(kept, s["kept"].get<int>());
  EXPECT_EQ(files, kept);
  EXPECT_EQ(sized, s["sized"].get<int>());
  EXPECT_GE(sized, kept / 2) << r.out;  // torch.nn's and torchvision's shapes are all guessed
}

// The sample: the first kept problem of each kind of input or constructor the run produces — from
// torchvision, on int64 indices, with a constructor set by keyword, with a number among forward's
// inputs, a convolution, on values drawn in [0, 1), one whose inlined source names torch.cuda
// (torch.nn's RNN: a CPU problem all the same, evaluated with --platform cpu) — and the first kept
// in manifest order: 4 to 8 evaluations.
std::vector<json> sample(const json& manifest) {
  std::vector<json> kept, out;
  for (const auto& mod : manifest["modules"])
    if (mod["status"] == "kept") kept.push_back(mod);
  if (kept.empty()) return out;
  std::set<std::string> taken;
  auto take = [&](const json& mod) {
    if (taken.insert(mod["problem"].get<std::string>()).second) out.push_back(mod);
  };
  auto first = [&](auto&& pred) {
    for (const auto& mod : kept)
      if (pred(mod)) return take(mod);
  };
  // Whether one of x's inputs in the manifest holds `key` (as `value`, where given).
  auto input_has = [](const json& x, const char* key, const char* value = nullptr) {
    for (const auto& in : x.value("inputs", json::array()))
      if (in.contains(key) && (!value || in[key] == value)) return true;
    return false;
  };
  first([](const json& x) { return x["tree"] == "torchvision"; });
  first([&](const json& x) { return input_has(x, "dtype", "int64"); });
  first([](const json& x) { return x.contains("init_keywords"); });
  first([&](const json& x) { return input_has(x, "value"); });
  first([](const json& x) { return x.value("family", "") == "convolution"; });
  first([&](const json& x) { return input_has(x, "range"); });
  first([](const json& x) {
    return slurp(out_dir() / x["problem"].get<std::string>()).find("torch.cuda.") !=
           std::string::npos;
  });
  take(kept.front());
  return out;
}

TEST(synth_default, a_sample_of_the_kept_problems_is_read_and_checked_ok) {
  ASSERT_TRUE(fs::exists(out_dir() / "manifest.json"))
      << "synth_default_run writes " << out_dir() << " first (fixture synth_default)";
  const json m = json::parse(slurp(out_dir() / "manifest.json"));
  const std::vector<json> picked = sample(m);
  ASSERT_GE(picked.size(), 4u);
  const fs::path work = fs::temp_directory_path() / ("lathe-synth-eval-" + std::to_string(getpid()));
  fs::remove_all(work);
  fs::create_directories(work);
  for (const auto& mod : picked) {
    const fs::path problem = out_dir() / mod["problem"].get<std::string>();
    const auto show = run_lathe("task show '" + problem.string() + "' --json");
    ASSERT_EQ(show.code, 0) << problem << ": " << show.out << show.err;
    EXPECT_FALSE(json::parse(show.out)["inputs"].empty()) << show.out;
    const fs::path candidate = work / ("own_" + problem.filename().string());
    std::ofstream(candidate) << slurp(problem) << "\n\nclass ModelNew(Model):\n    pass\n";
    const auto e = run_lathe("--workspace '" + (work / "ws").string() + "' eval '" +
                             problem.string() + "' '" + candidate.string() +
                             "' --platform cpu --no-time --json");
    const json ej = json::parse(e.out, nullptr, false);
    ASSERT_TRUE(ej.is_object()) << problem << ": " << e.out << e.err;
    EXPECT_EQ(ej["outcome"], "ok") << problem << ": " << e.out << e.err;
  }
  fs::remove_all(work);
}

}  // namespace
