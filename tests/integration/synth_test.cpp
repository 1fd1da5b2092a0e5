// lathe synth (issue 47) on a small fixture tree (tests/data/synth): a module kept with its in-file
// base, helper and constants inlined and nothing else; a module importing torchvision refused with
// the reason; one whose input has no determinable shape refused without trials; a relative import
// refused; links out of the tree and an oversized file not read; `lathe task show` reads the
// problems it writes. With trials (guessed.py): a module kept by trial in the sandbox, one whose
// forward raises refused, one that tries to leave the sandbox neither writes outside its folder
// nor sees the environment; the filters refuse a nondeterministic, a non-finite and a constant
// module (filtered.py); a renamed copy and a module that computes the same another way are dropped
// as duplicates (vendored.py); families, FLOPs and bytes in the manifest; two kept problems come
// out `ok` through `lathe eval` with their own Model as the candidate. Nothing is timed (`unit`).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <tuple>

#include "lathe_cli_run.h"

namespace fs = std::filesystem;
using lathe::testing::run_lathe;
using nlohmann::json;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class synth : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lathe-synth-test-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    const fs::path data = fs::path(LATHE_SOURCE_DIR) / "tests/data/synth";
    fs::copy(data / "tree", dir_ / "tree", fs::copy_options::recursive);
    // Planted links: a file and a folder outside the tree, each holding a module that would be
    // kept.
    fs::create_symlink(data / "outside/secret_module.py", dir_ / "tree/linked.py");
    fs::create_directory_symlink(data / "outside", dir_ / "tree/linked_dir");
    std::ofstream(dir_ / "tree/big.py") << std::string((1 << 20) + 16, '#');
  }
  void TearDown() override { fs::remove_all(dir_); }

  const json* module(const json& manifest, const std::string& cls) {
    for (const auto& m : manifest["modules"])
      if (m["class"] == cls) return &m;
    return nullptr;
  }

  fs::path dir_;
};

TEST_F(synth, keeps_refuses_and_writes_problems_task_show_reads) {
  const auto r = run_lathe("synth '" + (dir_ / "tree").string() + "' --out '" +
                           (dir_ / "out").string() + "' --trials 0 --json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const json s = json::parse(r.out);
  EXPECT_EQ(s["found"], 23) << r.out;
  EXPECT_EQ(s["kept"], 6) << r.out;  // GeluBlock, Flip and filtered.py's 4: no filter ran
  EXPECT_EQ(s["kept_declared"], 6) << r.out;
  EXPECT_EQ(s["refused"], 16) << r.out;  // usage.py's 8 among them: nothing tried
  EXPECT_EQ(s["duplicates"], 1) << r.out;  // vendored.py's GeluCopy, by its code alone
  EXPECT_EQ(s["trials"]["modules"], 0) << r.out;
  EXPECT_EQ(s["without_forward"], 2) << r.out;  // Base, Parent: no forward of their own
  EXPECT_EQ(s["links_not_followed"], 2) << r.out;
  EXPECT_EQ(s["files_refused"], 1) << r.out;  // big.py

  const json m = json::parse(slurp(dir_ / "out/manifest.json"));
  EXPECT_EQ(m["schema"], "lathe.synth_manifest/1");
  const json* boxes = module(m, "Boxes");
  ASSERT_NE(boxes, nullptr);
  EXPECT_EQ((*boxes)["status"], "refused");
  EXPECT_EQ((*boxes)["reason"],
            "imports torchvision.ops (not torch, math or the standard library)");
  const json* untyped = module(m, "Untyped");
  ASSERT_NE(untyped, nullptr);
  EXPECT_EQ((*untyped)["status"], "refused");
  EXPECT_NE((*untyped)["reason"].get<std::string>().find(
                "forward argument x has neither an annotation nor a default"
                "; no trial ran: --trials 0"),
            std::string::npos)
      << (*untyped)["reason"];
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out/plan.json"));
  const json* doubled = module(m, "Doubled");
  ASSERT_NE(doubled, nullptr);
  EXPECT_EQ((*doubled)["kind"], "relative import");
  // The links were not followed: nothing from outside the tree, and both are listed.
  EXPECT_EQ(module(m, "Outside"), nullptr);
  EXPECT_EQ(m["sources"][0]["links"].size(), 2u);
  EXPECT_EQ(m["sources"][0]["unreadable"][0]["file"], "big.py");

  const json* gelu = module(m, "GeluBlock");
  ASSERT_NE(gelu, nullptr);
  EXPECT_EQ((*gelu)["status"], "kept");
  EXPECT_EQ((*gelu)["file"], "layers.py");
  EXPECT_EQ((*gelu)["license"], "SPDX-License-Identifier: MIT");
  EXPECT_EQ((*gelu)["filters"], "not run (--trials 0)");
  const fs::path problem = dir_ / "out" / (*gelu)["problem"].get<std::string>();
  const std::string text = slurp(problem);
  for (const char* want : {"def scaled_gelu(", "HIDDEN = 64", "SCALE = ", "class Base(nn.Module)",
                           "class Model(GeluBlock)", "torch.randn(8, 64)", "def get_init_inputs()"})
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  EXPECT_EQ(text.find("unused_helper"), std::string::npos) << text;  // not needed, not inlined
  EXPECT_EQ(text.find("class Untyped"), std::string::npos) << text;

  const auto show = run_lathe("task show '" + problem.string() + "' --json");
  ASSERT_EQ(show.code, 0) << show.out << show.err;
  const json layout = json::parse(show.out);
  ASSERT_EQ(layout["inputs"].size(), 3u) << show.out;  // x, proj.weight, proj.bias
  EXPECT_EQ(layout["inputs"][0]["name"], "x");
  EXPECT_EQ(layout["inputs"][0]["shapes"]["problem"], json::array({8, 64}));
  EXPECT_EQ(layout["inputs"][1]["state_dict"], "proj.weight");
}

// One run with trials: each spawns the sandbox's Python, which imports torch once (~2-10 s here).
TEST_F(synth, finds_inputs_by_trial_in_the_sandbox) {
  fs::remove("/tmp/lathe-synth-escaped.txt");
  ::setenv("LATHE_SYNTH_TEST_SECRET", "hunter2", 1);
  // --target-ms 0: the guessed sizes as planned (scales_the_batch_* scales them).
  const auto r = run_lathe("synth '" + (dir_ / "tree").string() + "' --out '" +
                           (dir_ / "out").string() + "' --target-ms 0 --json");
  ::unsetenv("LATHE_SYNTH_TEST_SECRET");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const json s = json::parse(r.out);
  EXPECT_EQ(s["kept"], 12) << r.out;  // GeluBlock, Flip declared; Scaled, Untyped, usage.py's 8
  EXPECT_EQ(s["kept_by_trial"], 10) << r.out;  // by trial
  EXPECT_EQ(s["refused_by_kind"]["trials failed"]["count"], 2) << r.out;
  EXPECT_EQ(s["filters"]["passed"], 14) << r.out;  // the 12 kept and their 2 duplicates
  const json m = json::parse(slurp(dir_ / "out/manifest.json"));
  const json* gelu = module(m, "GeluBlock");  // declared, and filtered in the sandbox too
  ASSERT_NE(gelu, nullptr);
  EXPECT_EQ((*gelu)["status"], "kept") << gelu->dump();
  EXPECT_EQ((*gelu)["filters"], "passed") << gelu->dump();

  // The dedup: vendored.py's GeluCopy is GeluBlock renamed (class, base, helper, constants,
  // arguments, attribute), the same code and the same outputs; Summed (x + x) is Untyped (x * 2)
  // by behaviour only. Each dropped, its problem file gone, the original kept.
  EXPECT_EQ(s["duplicates"], 2) << r.out;
  EXPECT_EQ(s["clusters"], 2) << r.out;
  const json* copy = module(m, "GeluCopy");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ((*copy)["status"], "duplicate") << copy->dump();
  EXPECT_EQ((*copy)["duplicate_of"], "tree/layers.py:GeluBlock") << copy->dump();
  EXPECT_EQ((*copy)["cluster"], "tree/layers.py:GeluBlock") << copy->dump();
  EXPECT_EQ((*copy)["duplicate_by"], json::array({"behaviour", "code"})) << copy->dump();
  EXPECT_EQ((*copy)["code_hash"], (*gelu)["code_hash"]);
  EXPECT_FALSE(copy->contains("problem")) << copy->dump();
  EXPECT_FALSE(fs::exists(dir_ / "out/problems/tree_vendored_GeluCopy.py"));
  EXPECT_TRUE(fs::exists(dir_ / "out/extracted/tree_vendored_GeluCopy.py"));
  EXPECT_EQ((*gelu)["cluster"], "tree/layers.py:GeluBlock") << gelu->dump();
  const json* summed = module(m, "Summed");
  ASSERT_NE(summed, nullptr);
  EXPECT_EQ((*summed)["status"], "duplicate") << summed->dump();
  EXPECT_EQ((*summed)["duplicate_of"], "tree/layers.py:Untyped") << summed->dump();
  EXPECT_EQ((*summed)["duplicate_by"], json::array({"behaviour"})) << summed->dump();
  EXPECT_NE((*summed)["code_hash"], (*module(m, "Untyped"))["code_hash"]);
  // Scaled, with a Linear of the same shape as Untyped's input, is not Untyped.
  EXPECT_EQ((*module(m, "Scaled"))["status"], "kept");

  // Families, from the ops each ran in the sandbox (and the classes of its modules).
  EXPECT_EQ((*gelu)["ops"], json::array({"addmm", "gelu", "mul"})) << gelu->dump();
  EXPECT_EQ((*gelu)["family"], "linear") << gelu->dump();
  EXPECT_EQ((*module(m, "Untyped"))["family"], "elementwise");
  EXPECT_EQ((*module(m, "Flip"))["family"], "other");  // a flip moves data only
  EXPECT_EQ((*module(m, "PickedLoss"))["family"], "loss");  // nll_loss_forward
  EXPECT_EQ((*module(m, "Lookup"))["family"], "embedding");
  EXPECT_EQ(s["families"], json({{"elementwise", 3},
                                 {"embedding", 1},
                                 {"linear", 5},
                                 {"loss", 2},
                                 {"other", 1}}))
      << r.out;

  // Measured cost: x (8, 64) through a 64x64 Linear: 2 * 8 * 64 * 64 FLOPs; bytes of x, of the
  // weight and bias, of the output.
  EXPECT_EQ((*gelu)["flops"], 2 * 8 * 64 * 64) << gelu->dump();
  EXPECT_EQ((*gelu)["bytes"], json({{"inputs", 8 * 64 * 4},
                                    {"parameters", (64 * 64 + 64) * 4},
                                    {"outputs", 8 * 64 * 4}}))
      << gelu->dump();
  EXPECT_EQ((*module(m, "Untyped"))["flops"], 0);  // no matmul or convolution: not counted

  // A kept problem is one lathe evaluates: its own Model as a ModelNew candidate comes out ok
  // (one declared, one kept by trial; bench/synth_eval.py does every kept problem,
  // synth_default_eval_test a sample of the default run's, int64 indices among them).
  for (const char* cls : {"GeluBlock", "Scaled"}) {
    const fs::path problem = dir_ / "out" / (*module(m, cls))["problem"].get<std::string>();
    const fs::path candidate = dir_ / (std::string("own_") + cls + ".py");
    std::ofstream(candidate) << slurp(problem) << "\n\nclass ModelNew(Model):\n    pass\n";
    const auto e = run_lathe("--workspace '" + (dir_ / "ws").string() + "' eval '" +
                             problem.string() + "' '" + candidate.string() + "' --no-time --json");
    const json ej = json::parse(e.out, nullptr, false);
    ASSERT_TRUE(ej.is_object()) << cls << ": " << e.out << e.err;
    EXPECT_EQ(ej["outcome"], "ok") << cls << ": " << e.out << e.err;
  }

  // The filters: each module ran, and each is refused with its kind and why.
  for (const auto& [cls, kind, why] :
       {std::tuple{"Noisy", "nondeterministic",
                   "two runs on the same inputs gave different outputs"},
        std::tuple{"Overflows", "not finite", "output 0 holds NaN or inf"},
        std::tuple{"Ignores", "constant", "two different input draws gave the same outputs"},
        std::tuple{"Passthrough", "returns its input", "output 0 is an input or a view of one"},
        std::tuple{"Wide", "too many tensors",
                   "17 inputs and parameters and 1 outputs: lathe's gate passes 16 tensors"}}) {
    const json* f = module(m, cls);
    ASSERT_NE(f, nullptr) << cls;
    EXPECT_EQ((*f)["status"], "refused") << f->dump();
    EXPECT_EQ((*f)["kind"], kind) << f->dump();
    EXPECT_NE((*f)["reason"].get<std::string>().find(why), std::string::npos) << f->dump();
    EXPECT_EQ(s["refused_by_kind"][kind]["count"], 1) << r.out;
    EXPECT_FALSE(f->contains("problem")) << f->dump();
  }

  const json* scaled = module(m, "Scaled");  // `features` without default, x without shape
  ASSERT_NE(scaled, nullptr);
  ASSERT_EQ((*scaled)["status"], "kept") << scaled->dump();
  EXPECT_EQ((*scaled)["inputs_found"], "trial 1 of 8");
  EXPECT_EQ((*scaled)["init_inputs"], json::array({16}));
  const fs::path problem = dir_ / "out" / (*scaled)["problem"].get<std::string>();
  const auto show = run_lathe("task show '" + problem.string() + "' --json");
  ASSERT_EQ(show.code, 0) << show.out << show.err;
  const json layout = json::parse(show.out);
  ASSERT_EQ(layout["inputs"].size(), 3u) << show.out;  // x, proj.weight, proj.bias
  EXPECT_EQ(layout["inputs"][0]["shapes"]["problem"], json::array({2, 16}));

  // Inputs by usage (usage.py): forward's tensors that index an embedding or name a class per
  // row are drawn as int64 indices below their bound; a constructor argument defaulting to None
  // is set by keyword when the defaults do not run, and so is a keyword-only one; a number forward
  // takes is passed as one; probabilities are drawn in [0, 1); a constructor inherited from
  // torch.nn, or one taking only *args, gets one size, then two.
  for (const auto& [cls, want] :
       {std::pair{"Lookup", "return [torch.randint(0, 16, (batch_size, 16))]"},
        std::pair{"PickedLoss",
                  "return [torch.randn(batch_size, 16), torch.randint(0, 16, (batch_size,))]"},
        std::pair{"Resized", "super().__init__(scale_factor=scale_factor)"},
        std::pair{"KeywordOnly", "super().__init__(channels=channels)"},
        std::pair{"Windows", "return [torch.randn(batch_size, 16, 8, 8), 2]"},
        std::pair{"Inherited", "return [16, 16]"},
        std::pair{"Probabilities", "return [torch.rand(batch_size, 16), torch.rand(batch_size, 16)]"},
        std::pair{"Forwarded", "return [16, 16]"}}) {
    const json* u = module(m, cls);
    ASSERT_NE(u, nullptr) << cls;
    ASSERT_EQ((*u)["status"], "kept") << u->dump();
    const std::string text = slurp(dir_ / "out" / (*u)["problem"].get<std::string>());
    EXPECT_NE(text.find(want), std::string::npos) << cls << "\n" << text;
    EXPECT_NE(text.find("\nbatch_size = 2  # the leading dimension"), std::string::npos) << text;
    EXPECT_FALSE(u->contains("sizes")) << u->dump();  // --target-ms 0: not scaled
  }
  EXPECT_EQ((*module(m, "Lookup"))["inputs"][0],
            json({{"shape", {2, 16}}, {"dtype", "int64"}, {"below", 16}}));
  EXPECT_EQ((*module(m, "Resized"))["init_inputs"], json::array({2.0}));
  EXPECT_EQ((*module(m, "Resized"))["init_keywords"], json::array({"scale_factor"}));
  EXPECT_EQ((*module(m, "Windows"))["inputs"][1], json({{"value", 2}}));
  EXPECT_EQ((*module(m, "Probabilities"))["inputs"][0],
            json({{"shape", {2, 16}}, {"dtype", "float32"}, {"range", {0, 1}}}));
  for (const char* cls : {"Lookup", "Resized"}) {  // int64 inputs; a constructor by keyword
    const fs::path problem = dir_ / "out" / (*module(m, cls))["problem"].get<std::string>();
    const auto shown = run_lathe("task show '" + problem.string() + "' --json");
    ASSERT_EQ(shown.code, 0) << cls << ": " << shown.out << shown.err;
    const json layout = json::parse(shown.out);
    EXPECT_EQ(layout["inputs"][0]["dtype"], std::string(cls) == "Lookup" ? "int64" : "float32")
        << shown.out;
  }

  const json* raises = module(m, "AlwaysRaises");
  ASSERT_NE(raises, nullptr);
  EXPECT_EQ((*raises)["status"], "refused");
  EXPECT_EQ((*raises)["kind"], "trials failed");
  EXPECT_NE((*raises)["reason"].get<std::string>().find(
                "trials failed (8 of 8 tried): ValueError: this module never runs"),
            std::string::npos)
      << (*raises)["reason"];

  // The sandbox: the module's writes outside its folder landed nowhere, and it saw no environment.
  const json* escapes = module(m, "Escapes");
  ASSERT_NE(escapes, nullptr);
  EXPECT_EQ((*escapes)["status"], "refused");
  EXPECT_NE(
      (*escapes)["reason"].get<std::string>().find("RuntimeError: saw secret None, home None"),
      std::string::npos)
      << (*escapes)["reason"];
  EXPECT_FALSE(fs::exists(dir_ / "out/escaped.txt"));
  EXPECT_FALSE(fs::exists("/tmp/lathe-synth-escaped.txt"));
  EXPECT_EQ(slurp(dir_ / "out/manifest.json").find("hunter2"), std::string::npos);
}

// Sizes for a target run time: a kept module whose inputs all share the guessed shape has its
// leading dimension (batch_size) scaled by powers of two toward --target-ms, measured in the
// sandbox; a declared shape is kept. 50 ms is far above what these tiny modules take at batch 2
// (microseconds), so each grows however loaded the machine; no time is asserted.
TEST_F(synth, scales_the_batch_toward_a_target_forward_time) {
  const auto r = run_lathe("synth '" + (dir_ / "tree/usage.py").string() + "' '" +
                           (dir_ / "tree/layers.py").string() + "' --out '" +
                           (dir_ / "out").string() + "' --target-ms 50 --json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const json m = json::parse(slurp(dir_ / "out/manifest.json"));
  for (const char* cls : {"Lookup", "PickedLoss", "Probabilities"}) {
    const json* u = module(m, cls);
    ASSERT_NE(u, nullptr) << cls;
    ASSERT_EQ((*u)["status"], "kept") << u->dump();
    ASSERT_TRUE(u->contains("sizes")) << u->dump();
    const json& sz = (*u)["sizes"];
    const int batch = sz["batch"].get<int>();
    EXPECT_GT(batch, 2) << u->dump();
    EXPECT_LE(batch, 65536) << u->dump();
    EXPECT_EQ(batch & (batch - 1), 0) << u->dump();  // a power of two
    EXPECT_EQ(sz["planned"], 2) << u->dump();
    EXPECT_EQ(sz["target_ms"], 50.0) << u->dump();
    EXPECT_GT(sz["forward_ms"].get<double>(), 0.0) << u->dump();
    EXPECT_EQ(sz["tried"][0][0], 2) << u->dump();  // the planned size, timed first
    bool tried = false;  // the batch chosen is one of those tried
    for (const auto& t : sz["tried"]) tried = tried || t[0] == batch;
    EXPECT_TRUE(tried) << u->dump();
    EXPECT_EQ((*u)["inputs"][0]["shape"][0], batch) << u->dump();
    const fs::path problem = dir_ / "out" / (*u)["problem"].get<std::string>();
    const std::string text = slurp(problem);
    EXPECT_NE(text.find("\nbatch_size = " + std::to_string(batch) + "  #"), std::string::npos)
        << text;
    const auto show = run_lathe("task show '" + problem.string() + "' --json");
    ASSERT_EQ(show.code, 0) << show.out << show.err;
    EXPECT_EQ(json::parse(show.out)["inputs"][0]["shapes"]["problem"][0], batch) << show.out;
  }
  EXPECT_EQ((*module(m, "PickedLoss"))["inputs"][1]["shape"],
            json::array({(*module(m, "PickedLoss"))["sizes"]["batch"]}));  // a class per row
  const json* gelu = module(m, "GeluBlock");  // declared (8, 64): kept as declared
  ASSERT_NE(gelu, nullptr);
  EXPECT_EQ((*gelu)["status"], "kept") << gelu->dump();
  EXPECT_FALSE(gelu->contains("sizes")) << gelu->dump();
  EXPECT_EQ((*gelu)["inputs"][0]["shape"], json::array({8, 64})) << gelu->dump();
  // The scaled problem is one lathe evaluates: its own Model as the candidate comes out ok.
  const fs::path problem = dir_ / "out" / (*module(m, "Lookup"))["problem"].get<std::string>();
  const fs::path candidate = dir_ / "own_Lookup.py";
  std::ofstream(candidate) << slurp(problem) << "\n\nclass ModelNew(Model):\n    pass\n";
  const auto e = run_lathe("--workspace '" + (dir_ / "ws").string() + "' eval '" +
                           problem.string() + "' '" + candidate.string() + "' --no-time --json");
  const json ej = json::parse(e.out, nullptr, false);
  ASSERT_TRUE(ej.is_object()) << e.out << e.err;
  EXPECT_EQ(ej["outcome"], "ok") << e.out << e.err;
}

TEST_F(synth, refuses_an_output_folder_inside_the_tree_or_holding_other_files) {
  auto r = run_lathe("synth '" + (dir_ / "tree").string() + "' --out '" +
                     (dir_ / "tree/out").string() + "'");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("lies inside"), std::string::npos) << r.err;
  fs::create_directories(dir_ / "busy");
  std::ofstream(dir_ / "busy/notes.txt") << "mine";
  r = run_lathe("synth '" + (dir_ / "tree").string() + "' --out '" + (dir_ / "busy").string() +
                "'");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_TRUE(fs::exists(dir_ / "busy/notes.txt"));
}

}  // namespace
