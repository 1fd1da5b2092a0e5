// lathe-mock-model on v3 prompts of a search that writes KernelBench ModelNew files
// (docs/proposer.md, "The mock model"): the reply's WHOLE file keeps the problem, adds a
// load_inline extension and a ModelNew with the Model's constructor; a forward it cannot fuse is
// refused cleanly; v1/v2 prompts (no `## language`) are answered as before. Untimed: what the
// files compute is the gate's to say (the mock's section of docs/proposer.md gives the runs).
#include <gtest/gtest.h>

#include <cstdlib>

#include "agent/edit.h"
#include "agent/replies.h"
#include "agent/schema.h"
#include "mock_fields.h"

namespace lathe::mock_test {
namespace {

using nlohmann::json;

// The search's start on a bare KernelBench problem (spec/problem.cpp eager_baseline): the
// problem's text, then `class ModelNew(Model): pass`.
kernel_bundle eager_start(const std::string& problem_text) {
  kernel_bundle b;
  b.name = "eager";
  b.manifest.lang = language::python;
  b.manifest.entry = "eager.py";
  b.manifest.files = {"eager.py"};
  b.sources["eager.py"] = problem_text +
                          "\n\n# lathe: the problem's own Model, timed as the eager baseline\n"
                          "class ModelNew(Model):\n    pass\n";
  return b;
}

kernel_bundle eager_start_of(const std::string& rel) {
  return eager_start(test::read_text(source_dir() / rel));
}

// The kernel field as agent/kernel_text.h shows it: the manifest (whose `language: python` line
// is not the `## language` section), then the files.
std::string manifest_and_files(const kernel_bundle& b) {
  return "language: " + std::string(to_string(b.manifest.lang)) + "\nentry: " + b.manifest.entry + "\n" +
         kernel_field(b);
}

field_list v3_fields(const std::string& op, const kernel_bundle& b, const std::string& language) {
  field_list f = {{"task", task_text}, {"target", target_of(b)}, {"kernel", manifest_and_files(b)}};
  if (!language.empty()) f.push_back({"language", language});
  if (op == "repair") {
    f.push_back({"goal", "fuse the elementwise chain"});
    f.push_back({"outcome", "wrong_result"});
    f.push_back({"diagnostics", "output 0: index [0, 1] expected 0.5, got 0.53125"});
  } else if (op == "materialize") {
    f.push_back({"features", ""});
    f.push_back({"cards", "card 1\nintent: fuse\nprovides: omp_parallel\n"});
    f.push_back({"rejected", ""});
  } else {
    f.push_back({"inspirations", ""});
    f.push_back({"direction", ""});
    f.push_back({"rejected", ""});
  }
  return f;
}

const char* modelnew_language = "modelnew\nA KernelBench ModelNew file: keep Model's constructor.\n";

std::string prompt_v(const std::string& op, const field_list& fields, int version) {
  llm::request r = request_for(op, fields);
  std::string& user = r.messages.front().content;
  user.replace(0, user.find('\n'), "lathe-operation: " + op + " v" + std::to_string(version));
  return llm::command_prompt(r);
}

std::string schema_problems(const std::string& op, const json& j) {
  for (auto o : agent::all_operations)
    if (op == agent::to_string(o)) {
      std::string out = agent::describe(agent::validate(agent::reply_schema(o), j));
      if (auto names = agent::unregistered_names(j)) out += (out.empty() ? "" : "; ") + *names;
      return out;
    }
  return "unknown operation " + op;
}

bool refused(const json& j) {
  return j.value("rationale", "").rfind("refused: ", 0) == 0 && j.value("edits", "x").empty();
}

// The reply applied to the bundle: the entry file it leaves.
std::string applied_entry(const kernel_bundle& b, const json& j) {
  auto after = agent::apply_reply(b, j["edits"].get<std::string>());
  if (!after) {
    ADD_FAILURE() << after.error().message;
    return "";
  }
  return after->sources.at(b.manifest.entry);
}

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

// Python's own parser, where an interpreter is installed (the unit test needs none otherwise).
void expect_python_parses(const std::string& text) {
  if (std::system("command -v python3 >/dev/null 2>&1") != 0) return;
  test::temp_dir dir;
  test::write_file(dir / "f.py", text);
  const std::string cmd =
      "python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' " + (dir / "f.py").string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << text;
}

TEST(mock_modelnew, mutate_writes_the_problem_an_extension_and_a_modelnew_with_the_models_constructor) {
  const auto b = eager_start_of("tests/problems/kb_scale_relu.py");
  const std::string prompt = prompt_v("mutate", v3_fields("mutate", b, modelnew_language), 3);
  const auto r = ask({}, prompt, b);
  EXPECT_EQ(schema_problems("mutate", r.value), "") << r.value.dump(1);
  ASSERT_FALSE(refused(r.value)) << r.value.dump(1);
  EXPECT_EQ(r.value["action"], "fuse_elementwise");
  const std::string edits = r.value["edits"];
  EXPECT_TRUE(edits.starts_with("@@@ WHOLE eager.py\n")) << edits;
  EXPECT_EQ(std::count(edits.begin(), edits.end(), '@'), 6) << "one WHOLE block: " << edits;

  const std::string file = applied_entry(b, r.value);
  // The problem as it was: Model, get_inputs, get_init_inputs; the eager ModelNew gone.
  EXPECT_TRUE(has(file, "class Model(nn.Module):\n    def __init__(self, alpha):"));
  EXPECT_TRUE(has(file, "        return torch.relu(x) * self.alpha\n"));
  EXPECT_TRUE(has(file, "def get_inputs():") && has(file, "def get_init_inputs():"));
  EXPECT_FALSE(has(file, "class ModelNew(Model)"));
  EXPECT_FALSE(has(file, "# lathe: the problem's own Model"));
  // The extension and the ModelNew: the Model's constructor, forward through the extension.
  EXPECT_TRUE(has(file, "load_inline(\n    name=\"lathe_mock_"));
  EXPECT_TRUE(has(file, "functions=[\"fused_forward\"]"));
  // Threads for long tensors only; below, no OpenMP team (its setup costs more than the loop).
  EXPECT_TRUE(has(file, "  if (n >= 32768) {\n#pragma omp parallel for simd schedule(static)\n"));
  EXPECT_TRUE(has(file, "  }\n#pragma omp simd\n  for (int64_t i = 0; i < n; ++i) {\n"));
  EXPECT_TRUE(has(file, "dst[i] = (lathe_relu(v) * s_alpha);"));
  EXPECT_TRUE(has(file, "class ModelNew(nn.Module):\n    def __init__(self, alpha):\n"
                        "        super().__init__()\n        self.alpha = alpha\n"));
  EXPECT_TRUE(has(file, "        return _lathe_mock_ext.fused_forward(x, self.alpha)\n"));
  expect_python_parses(file);

  // Deterministic, byte for byte.
  EXPECT_EQ(ask({}, prompt, b).run.out, r.run.out);
}

TEST(mock_modelnew, leaky_relu_and_a_linear_chain) {
  const auto leaky = eager_start_of("tests/problems/kernelbench/level1/1_Leaky_ReLU.py");
  const auto l = ask({}, prompt_v("mutate", v3_fields("mutate", leaky, modelnew_language), 3), leaky);
  ASSERT_FALSE(refused(l.value)) << l.value.dump(1);
  const std::string lf = applied_entry(leaky, l.value);
  EXPECT_TRUE(has(lf, "dst[i] = lathe_leaky_relu(v, s_negative_slope);"));
  EXPECT_TRUE(has(lf, "return _lathe_mock_ext.fused_forward(x, self.negative_slope)"));

  // materialize of a card naming omp_parallel: the same fused file with the card's threads only.
  const auto lin = eager_start_of("tests/problems/kb_linear_gelu.py");
  const auto m =
      ask({}, prompt_v("materialize", v3_fields("materialize", lin, modelnew_language), 3), lin);
  EXPECT_EQ(schema_problems("materialize", m.value), "") << m.value.dump(1);
  ASSERT_FALSE(refused(m.value)) << m.value.dump(1);
  const std::string mf = applied_entry(lin, m.value);
  EXPECT_TRUE(has(mf, "class ModelNew(nn.Module):\n    def __init__(self, in_features, out_features):\n"));
  EXPECT_TRUE(has(mf, "self.fc = nn.Linear(in_features, out_features)"));
  EXPECT_TRUE(has(mf, "std::erf"));
  EXPECT_TRUE(has(mf, "return _lathe_mock_ext.fused_forward(self.fc(x))"));
  EXPECT_EQ(m.value["adds"], json::array({"omp_parallel"}));
  expect_python_parses(mf);

  const auto tanh = eager_start_of("tests/problems/kernelbench/level1/2_Linear_Tanh.py");
  const auto t = ask({}, prompt_v("mutate", v3_fields("mutate", tanh, modelnew_language), 3), tanh);
  ASSERT_FALSE(refused(t.value)) << t.value.dump(1);
  EXPECT_TRUE(has(applied_entry(tanh, t.value), "return _lathe_mock_ext.fused_forward(self.proj(x))"));
}

// On a CUDA problem (the prompt's target is a CUDA device; `lathe solve --platform cuda`, issue
// 48): the chain as one CUDA kernel through load_inline's cuda_sources, a thread per element on
// torch's current stream, the Model's constructor as on the CPU; a card is not carried.
TEST(mock_modelnew, a_cuda_problem_gets_a_cuda_kernel) {
  const auto leaky = eager_start_of("tests/problems/kernelbench/level1/1_Leaky_ReLU.py");
  field_list f = v3_fields("mutate", leaky, modelnew_language);
  for (auto& [name, value] : f)
    if (name == "target") value = "platform: cuda\narch: sm_90a\ndevice: NVIDIA H200\n";
  const auto r = ask({}, prompt_v("mutate", f, 3), leaky);
  EXPECT_EQ(schema_problems("mutate", r.value), "") << r.value.dump(1);
  ASSERT_FALSE(refused(r.value)) << r.value.dump(1);
  const std::string file = applied_entry(leaky, r.value);
  EXPECT_TRUE(has(file, "cuda_sources=_lathe_mock_source,")) << file;
  EXPECT_TRUE(has(file, "cpp_sources=r\"\"\"torch::Tensor fused_forward(torch::Tensor x, double a_negative_slope);"));
  EXPECT_TRUE(has(file, "__device__ __forceinline__ float lathe_leaky_relu(float v, float s)"));
  EXPECT_TRUE(has(file, "__global__ void lathe_mock_fused(const float* __restrict__ src, float* __restrict__ dst, "
                        "int64_t n, float s_negative_slope)"));
  EXPECT_TRUE(has(file, "  dst[i] = lathe_leaky_relu(v, s_negative_slope);\n"));
  EXPECT_TRUE(has(file, "at::cuda::getCurrentCUDAStream()"));
  EXPECT_TRUE(has(file, "x.is_cuda()"));
  EXPECT_FALSE(has(file, "-fopenmp"));
  EXPECT_FALSE(has(file, "#pragma omp"));
  EXPECT_TRUE(has(file, "return _lathe_mock_ext.fused_forward(x, self.negative_slope)"));
  EXPECT_EQ(r.value["adds"], json::array({"restrict"}));
  expect_python_parses(file);

  // gelu's erf on the device: CUDA's erff, not std::erf.
  const auto lin = eager_start_of("tests/problems/kb_linear_gelu.py");
  field_list g = v3_fields("mutate", lin, modelnew_language);
  for (auto& [name, value] : g)
    if (name == "target") value = "platform: cuda\narch: sm_90a\n";
  const auto gr = ask({}, prompt_v("mutate", g, 3), lin);
  ASSERT_FALSE(refused(gr.value)) << gr.value.dump(1);
  const std::string gf = applied_entry(lin, gr.value);
  EXPECT_TRUE(has(gf, "erff(")) << gf;
  EXPECT_FALSE(has(gf, "std::erf"));

  // A card: the mock's cards are CPU loop techniques; on CUDA it says so.
  field_list m = v3_fields("materialize", lin, modelnew_language);
  for (auto& [name, value] : m)
    if (name == "target") value = "platform: cuda\narch: sm_90a\n";
  const auto mr = ask({}, prompt_v("materialize", m, 3), lin);
  ASSERT_TRUE(refused(mr.value)) << mr.value.dump(1);
  EXPECT_NE(mr.value.value("rationale", "").find("runs on CUDA"), std::string::npos) << mr.value.dump(1);
}

// The platform word decides, not the letters "cuda" anywhere in the target (review, 2026-12-07):
// a CPU whose device text holds them still gets the CPU extension.
TEST(mock_modelnew, a_cpu_target_that_mentions_cuda_stays_on_the_cpu) {
  const auto leaky = eager_start_of("tests/problems/kernelbench/level1/1_Leaky_ReLU.py");
  field_list f = v3_fields("mutate", leaky, modelnew_language);
  for (auto& [name, value] : f)
    if (name == "target") value = "platform: cpu\narch: x86-64-v3\ndevice: CUDA-lab Xeon (no sm_90 here)\n";
  const auto r = ask({}, prompt_v("mutate", f, 3), leaky);
  ASSERT_FALSE(refused(r.value)) << r.value.dump(1);
  const std::string file = applied_entry(leaky, r.value);
  EXPECT_FALSE(has(file, "cuda_sources")) << file;
  EXPECT_FALSE(has(file, "__global__")) << file;
  // No platform word: an sm_ architecture still names the device.
  for (auto& [name, value] : f)
    if (name == "target") value = "arch: sm_90a\n";
  const auto g = ask({}, prompt_v("mutate", f, 3), leaky);
  ASSERT_FALSE(refused(g.value)) << g.value.dump(1);
  EXPECT_TRUE(has(applied_entry(leaky, g.value), "cuda_sources=_lathe_mock_source,"));
}

// A C-ABI card applied to a ModelNew (issue 44, item 3): the prompt's cards as lathe writes them
// (llm_proposer.cpp: "--- card N of M (<id>) ---", the card's text; the registry follows in v3).
// The mock carries the techniques the cards' intents name into its extension's loop, and only
// those; a card whose technique the loop cannot have is refused, naming it.
TEST(mock_modelnew, materialize_carries_the_cards_technique_into_the_extension_loop) {
  const auto b = eager_start_of("tests/problems/kb_scale_relu.py");
  auto with_cards = [&](const std::string& cards) {
    field_list f = v3_fields("materialize", b, modelnew_language);
    // The cards, then the registry as v3 orders them (its names are no card's).
    for (size_t i = 0; i < f.size(); ++i)
      if (f[i].first == "cards") {
        f[i].second = cards;
        f.insert(f.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                 {"registry", "- omp_parallel: threads\n- simd: vector lanes\n- restrict: no aliasing\n"});
        break;
      }
    return ask({}, prompt_v("materialize", f, 3), b);
  };
  const auto simd = with_cards(
      "--- card 1 of 1 (3f2a9c1d0b7e4a55) ---\nintent: Add simd: the loop's iterations in vector lanes\n"
      "anchor: lathe_launch/i\ncarrier (cpp/cpu):\n#pragma omp parallel for simd\nfor (int64_t i = 0; i < n; ++i)\n"
      "carried into a modelnew: apply its technique inside the C++ of the kernel's inline extension");
  EXPECT_EQ(schema_problems("materialize", simd.value), "") << simd.value.dump(1);
  ASSERT_FALSE(refused(simd.value)) << simd.value.dump(1);
  EXPECT_EQ(simd.value["adds"], json::array({"simd"}));
  EXPECT_TRUE(has(simd.value["rationale"], "Carries card 3f2a9c1d0b7e4a55 into the extension's loop: simd only."))
      << simd.value.dump(1);
  const std::string file = applied_entry(b, simd.value);
  EXPECT_TRUE(has(file, "// Carries card 3f2a9c1d0b7e4a55 (simd) into this extension's loop.\n")) << file;
  EXPECT_TRUE(has(file, "  const int64_t n = in.numel();\n  const float s_alpha = static_cast<float>(a_alpha);\n"
                        "#pragma omp simd\n  for (int64_t i = 0; i < n; ++i) {\n"))
      << file;
  // Not the carrier's threads (its intent names simd only), nor the mock's other techniques.
  EXPECT_FALSE(has(file, "omp parallel")) << file;
  EXPECT_FALSE(has(file, "__restrict__")) << file;
  EXPECT_TRUE(has(file, "dst[i] = (lathe_relu(v) * s_alpha);"));
  expect_python_parses(file);
  // Two cards: both techniques, in the loop's order; the mutate answer (all three) differs.
  const auto both = with_cards(
      "--- card 1 of 2 (c-restrict) ---\nintent: Add restrict: pointers that do not alias\n\n"
      "--- card 2 of 2 (c-omp) ---\nintent: Add omp_parallel: the loop across threads\n");
  ASSERT_FALSE(refused(both.value)) << both.value.dump(1);
  EXPECT_EQ(both.value["adds"], json::array({"omp_parallel", "restrict"}));
  const std::string two = applied_entry(b, both.value);
  EXPECT_TRUE(has(two, "(omp_parallel, restrict)") && has(two, "card c-restrict, c-omp")) << two;
  EXPECT_TRUE(has(two, "#pragma omp parallel for schedule(static)\n")) << two;
  EXPECT_TRUE(has(two, "const float* __restrict__ src")) << two;
  EXPECT_NE(two, applied_entry(b, ask({}, prompt_v("mutate", v3_fields("mutate", b, modelnew_language), 3), b).value));
  // A card the loop cannot carry (shared-memory tiles): refused, its feature named.
  const auto smem = with_cards("--- card 1 of 1 (c-smem) ---\nintent: Add smem_tiling: tiles in shared memory\n");
  EXPECT_TRUE(refused(smem.value)) << smem.value.dump(1);
  EXPECT_TRUE(has(smem.value["rationale"], "the cards name smem_tiling")) << smem.value.dump(1);
  EXPECT_EQ(schema_problems("materialize", smem.value), "") << smem.value.dump(1);
}

// KernelBench's own style: docstrings, annotations, super(Model, self), F, statements before the
// return, method calls, another indentation.
TEST(mock_modelnew, reads_kernelbench_style_forwards) {
  const auto b = eager_start(
      "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
      "class Model(nn.Module):\n"
      "  \"\"\"A model.\"\"\"\n"
      "  def __init__(self, scale: float = 2.0):\n"
      "    super(Model, self).__init__()\n"
      "    self.scale = scale\n\n"
      "  def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
      "    \"\"\"\n    Applies a chain.\n    \"\"\"\n"
      "    y = F.relu(x)  # first\n"
      "    y = (y * self.scale +\n         1.0)\n"
      "    return torch.sigmoid(-y).tanh() / 2\n\n\n"
      "def get_inputs():\n  return [torch.randn(4, 4)]\n\n\n"
      "def get_init_inputs():\n  return [2.0]\n");
  const auto r = ask({}, prompt_v("mutate", v3_fields("mutate", b, modelnew_language), 3), b);
  ASSERT_FALSE(refused(r.value)) << r.value.dump(1);
  const std::string file = applied_entry(b, r.value);
  EXPECT_TRUE(has(file, "dst[i] = (lathe_tanh(lathe_sigmoid((-((lathe_relu(v) * s_scale) + "
                        "static_cast<float>(1.0))))) / static_cast<float>(2));"))
      << file;
  EXPECT_TRUE(has(file, "class ModelNew(nn.Module):\n  def __init__(self, scale: float = 2.0):\n"
                        "    super(ModelNew, self).__init__()\n"));
  EXPECT_TRUE(has(file, "  def forward(self, x):\n    return _lathe_mock_ext.fused_forward(x, self.scale)\n"));
  expect_python_parses(file);
}

TEST(mock_modelnew, a_forward_it_cannot_fuse_is_refused_cleanly) {
  const auto b = eager_start(
      "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
      "    def __init__(self):\n        super().__init__()\n\n"
      "    def forward(self, x):\n        return torch.softmax(x, dim=1)\n\n\n"
      "def get_inputs():\n    return [torch.randn(4, 8)]\n\n\ndef get_init_inputs():\n    return []\n");
  for (const char* op : {"mutate", "materialize", "repair"}) {
    const auto r = ask({}, prompt_v(op, v3_fields(op, b, modelnew_language), 3), b);
    EXPECT_EQ(schema_problems(op, r.value), "") << r.value.dump(1);
    EXPECT_TRUE(refused(r.value)) << r.value.dump(1);
    EXPECT_TRUE(has(r.value["rationale"], "softmax")) << r.value.dump(1);
    if (std::string(op) != "repair") {
      EXPECT_EQ(r.value["action"], "none");
    }
  }
}

// A repair of the mock's own ModelNew made wrong (--wrong-rate 1: every output scaled) writes it
// again correctly; a repair of the correct file has nothing to fix and says so.
TEST(mock_modelnew, repair_writes_the_fused_modelnew_again) {
  const auto b = eager_start_of("tests/problems/kb_scale_relu.py");
  const auto wrong =
      ask({"--wrong-rate", "1"}, prompt_v("mutate", v3_fields("mutate", b, modelnew_language), 3), b);
  ASSERT_FALSE(refused(wrong.value));
  kernel_bundle bad = b;
  bad.sources["eager.py"] = applied_entry(b, wrong.value);
  ASSERT_TRUE(has(bad.sources["eager.py"], "* 1.0625f;"));

  const auto fixed = ask({}, prompt_v("repair", v3_fields("repair", bad, modelnew_language), 3), bad);
  EXPECT_EQ(schema_problems("repair", fixed.value), "") << fixed.value.dump(1);
  ASSERT_FALSE(refused(fixed.value)) << fixed.value.dump(1);
  kernel_bundle good = bad;
  good.sources["eager.py"] = applied_entry(bad, fixed.value);
  EXPECT_FALSE(has(good.sources["eager.py"], "1.0625"));
  EXPECT_EQ(good.sources["eager.py"],
            applied_entry(b, ask({}, prompt_v("mutate", v3_fields("mutate", b, modelnew_language), 3), b).value));

  const auto again = ask({}, prompt_v("repair", v3_fields("repair", good, modelnew_language), 3), good);
  EXPECT_TRUE(refused(again.value)) << again.value.dump(1);
  const auto mutated = ask({}, prompt_v("mutate", v3_fields("mutate", good, modelnew_language), 3), good);
  EXPECT_TRUE(refused(mutated.value)) << mutated.value.dump(1);
}

// No `## language` (v1, v2), or `c-abi`: the catalog's answers, as before; the manifest's
// `language: python` line is not the section.
TEST(mock_modelnew, v2_and_c_abi_prompts_are_answered_as_before) {
  const auto k = bundle("tasks/softmax/kernels/naive");
  for (int version : {2, 3}) {
    const auto r = ask({}, prompt_v("mutate", v3_fields("mutate", k, version == 3 ? "c-abi\n" : ""), version), k);
    EXPECT_EQ(schema_problems("mutate", r.value), "") << r.value.dump(1);
    ASSERT_FALSE(refused(r.value)) << r.value.dump(1);
    EXPECT_NE(r.value["action"], "fuse_elementwise");
    EXPECT_TRUE(agent::apply_reply(k, r.value["edits"].get<std::string>()));
  }
  const auto eager = eager_start_of("tests/problems/kb_scale_relu.py");
  const auto r = ask({}, prompt_v("mutate", v3_fields("mutate", eager, ""), 2), eager);
  EXPECT_NE(r.value["action"], "fuse_elementwise") << r.value.dump(1);
}

}  // namespace
}  // namespace lathe::mock_test
