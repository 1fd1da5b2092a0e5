// lathe task show TASK|PROBLEM.py [--json] (issue 24, item 7): a task's argument layout as a
// kernel sees it — inputs (a KernelBench problem's parameters among them), scalars and outputs in
// ABI order with dtypes and shapes per shape set — and a skeleton to start from in C++, CUDA and
// Python (a launch(), a Triton launch(), a KernelBench ModelNew).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/context.h"
#include "cli/fail.h"
#include "cli/verbs.h"
#include "core/dtype.h"
#include "spec/problem_inputs.h"
#include "spec/task_file.h"

namespace lathe::cli {
namespace {

using nlohmann::json;

struct task_show_options {
  std::string task;
  bool json = false;
};

std::string c_type(dtype d, bool cuda) {
  switch (d) {
    case dtype::f16: return cuda ? "__half" : "uint16_t /* fp16 bits */";
    case dtype::bf16: return cuda ? "__nv_bfloat16" : "uint16_t /* bf16 bits */";
    case dtype::f32: return "float";
    case dtype::f64: return "double";
    case dtype::i8: return "int8_t";
    case dtype::i16: return "int16_t";
    case dtype::i32: return "int32_t";
    case dtype::i64: return "int64_t";
    case dtype::u8: return "uint8_t";
    case dtype::u16: return "uint16_t";
    case dtype::u32: return "uint32_t";
    case dtype::u64: return "uint64_t";
    case dtype::boolean: return "uint8_t /* bool */";
  }
  return "void";
}

std::string symbolic(const tensor_spec& t) {
  std::string s = "[";
  for (size_t i = 0; i < t.shape.size(); ++i)
    s += (i ? ", " : "") + (t.shape[i].symbol.empty() ? std::to_string(t.shape[i].value) : t.shape[i].symbol);
  return s + "]";
}

std::string ident(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

// The layout as JSON (what --json prints; the text view reads it back).
json layout(const task& t) {
  json j = {{"task", t.name}, {"platform", to_string(t.plat)}, {"inputs", json::array()},
            {"scalars", json::array()}, {"outputs", json::array()}, {"shape_sets", json::array()}};
  // A KernelBench problem: the inputs after forward's tensors are the Model's state_dict.
  const problem_input_roles roles = problem_inputs(t);
  const size_t forward_tensors = roles.forward;
  const std::vector<std::string>& state = roles.state;
  const auto tensor = [&](const tensor_spec& s, size_t i, const std::string& role) {
    json x = {{"index", i}, {"name", s.name}, {"dtype", std::string(to_string(s.type))},
              {"shape", symbolic(s)}, {"role", role}};
    for (const auto& set : t.shapes)
      if (auto r = resolve(s, set)) x["shapes"][set.name] = r->shape;
    return x;
  };
  for (size_t i = 0; i < t.inputs.size(); ++i) {
    json x = tensor(t.inputs[i], i, i < forward_tensors ? "input" : "parameter");
    if (i >= forward_tensors && i - forward_tensors < state.size()) x["state_dict"] = state[i - forward_tensors];
    j["inputs"].push_back(x);
  }
  for (size_t i = 0; i < t.outputs.size(); ++i) j["outputs"].push_back(tensor(t.outputs[i], i, "output"));
  for (size_t i = 0; i < t.scalars.size(); ++i)
    j["scalars"].push_back({{"index", i}, {"name", t.scalars[i].name}, {"value", t.scalars[i].value}});
  for (const auto& s : t.shapes) j["shape_sets"].push_back({{"name", s.name}, {"symbols", s.symbols}, {"timed", s.time}});
  return j;
}

std::string cpp_skeleton(const json& l, bool cuda) {
  std::string s = cuda ? "#include <cuda_runtime.h>\n#include <lathe/abi.h>\n\n"
                         "__global__ void kernel(/* the pointers and sizes below */) {}\n\n"
                       : "#include <lathe/abi.h>\n\n";
  s += "extern \"C\" int lathe_launch(const lathe_args* a) {\n";
  for (const auto& x : l["inputs"])
    s += "  const " + c_type(*parse_dtype(x["dtype"].get<std::string>()), cuda) + "* " + ident(x["name"]) +
         " = static_cast<const " + c_type(*parse_dtype(x["dtype"].get<std::string>()), cuda) + "*>(a->inputs[" +
         std::to_string(x["index"].get<int>()) + "].data);  // " + x["shape"].get<std::string>() + "\n";
  for (const auto& x : l["outputs"])
    s += "  " + c_type(*parse_dtype(x["dtype"].get<std::string>()), cuda) + "* " + ident(x["name"]) +
         " = static_cast<" + c_type(*parse_dtype(x["dtype"].get<std::string>()), cuda) + "*>(a->outputs[" +
         std::to_string(x["index"].get<int>()) + "].data);  // " + x["shape"].get<std::string>() +
         ", write every element\n";
  for (const auto& x : l["scalars"])
    s += "  const double " + ident(x["name"]) + " = a->scalars[" + std::to_string(x["index"].get<int>()) + "];\n";
  s += "  // sizes: a->inputs[i].shape[d] (int64_t), contiguous row-major\n";
  s += cuda ? "  kernel<<<1, 256, 0, static_cast<cudaStream_t>(a->stream)>>>();  // only enqueue: no sync, no malloc\n"
              "  return cudaGetLastError() == cudaSuccess ? 0 : 1;\n}\n"
            : "  return 0;\n}\n";
  return s;
}

std::string python_skeleton(const json& l, bool triton) {
  std::string ins, outs;
  for (const auto& x : l["inputs"]) ins += (ins.empty() ? "" : ", ") + ident(x["name"]);
  for (const auto& x : l["outputs"]) outs += (outs.empty() ? "" : ", ") + ident(x["name"]);
  std::string s = triton ? "import torch\nimport triton\nimport triton.language as tl\n\n\n@triton.jit\n"
                           "def kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n"
                           "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
                           "    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)\n\n\n"
                         : "import torch\n\n\n";
  s += "def launch(inputs, outputs, scalars):\n";
  s += "    " + ins + (l["inputs"].size() == 1 ? "," : "") + " = inputs\n";
  s += "    " + outs + (l["outputs"].size() == 1 ? "," : "") + " = outputs  # write into them (out=, copy_)\n";
  for (const auto& x : l["scalars"])
    s += "    " + ident(x["name"]) + " = scalars[" + std::to_string(x["index"].get<int>()) + "]\n";
  s += triton ? "    kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)  # n: elements\n" : "";
  return s;
}

void print_text(const json& l, const task& t) {
  std::printf("task %s (%s)\n\n", l["task"].get<std::string>().c_str(), l["platform"].get<std::string>().c_str());
  for (const auto& s : l["shape_sets"])
    std::printf("shape set %-10s %s%s\n", s["name"].get<std::string>().c_str(), s["symbols"].dump().c_str(),
                s["timed"].get<bool>() ? "  (timed)" : "");
  std::printf("\n%-8s %-4s %-18s %-10s %-16s %s\n", "", "#", "name", "dtype", "shape", "");
  for (const char* part : {"inputs", "outputs"})
    for (const auto& x : l[part]) {
      std::string note = x["role"].get<std::string>();
      if (x.contains("state_dict")) note += " (state_dict " + x["state_dict"].get<std::string>() + ")";
      std::string sizes;
      if (x.contains("shapes"))
        for (const auto& [set, shape] : x["shapes"].items()) sizes += " " + set + "=" + shape.dump();
      std::printf("%-8s %-4d %-18s %-10s %-16s %s%s\n", part, x["index"].get<int>(), x["name"].get<std::string>().c_str(),
                  x["dtype"].get<std::string>().c_str(), x["shape"].get<std::string>().c_str(), note.c_str(), sizes.c_str());
    }
  for (const auto& x : l["scalars"])
    std::printf("%-8s %-4d %-18s double     = %g\n", "scalars", x["index"].get<int>(), x["name"].get<std::string>().c_str(),
                x["value"].get<double>());
  const bool cuda = t.plat == platform::cuda;
  std::printf("\n--- C++ (lathe_launch, a .cpp kernel) ---\n%s", cuda ? "(a CUDA task takes .cu kernels)\n" : cpp_skeleton(l, false).c_str());
  std::printf("\n--- CUDA (a .cu kernel) ---\n%s", cuda ? cpp_skeleton(l, true).c_str() : "(a CPU task takes .cpp and .py kernels)\n");
  std::printf("\n--- Python (a .py kernel on torch tensors; docs/python-kernels.md) ---\n%s",
              cuda ? "(Python kernels run on CPU tasks only, for now)\n" : python_skeleton(l, false).c_str());
  std::printf("\n--- Triton (a .py kernel; runs once Python kernels run on CUDA tasks) ---\n%s",
              python_skeleton(l, true).c_str());
  if (!t.problem_model.empty())
    std::printf("\n--- KernelBench ModelNew (a .py candidate: Model's constructor, its parameter names) ---\n"
                "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
                "    def __init__(self, *init):  # the Model's arguments: %s\n        super().__init__()\n"
                "        # the Model's parameters under the same names, e.g. self.fc = nn.Linear(...)\n\n"
                "    def forward(self, *inputs):\n        ...\n",
                json::parse(t.problem_model).value("init", json::array()).dump().c_str());
}

int run_task_show(const task_show_options& o) {
  auto t = find_task(o.task, locate());
  if (!t) return fail_with(t.error(), 2);
  const json l = layout(*t);
  if (o.json) {
    json j = l;
    j["schema"] = "lathe.task_layout/1";
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    print_text(l, *t);
  }
  return 0;
}

}  // namespace

void add_task(CLI::App& app, const common_options&, int& exit_code) {
  CLI::App* sub = app.add_subcommand("task", "a task's argument layout and kernel skeletons");
  sub->require_subcommand(1);
  auto o = std::make_shared<task_show_options>();
  CLI::App* show = sub->add_subcommand(
      "show", "inputs, parameters, scalars and outputs in ABI order with dtypes and shapes, and a skeleton "
              "kernel in C++, CUDA, Python and Triton (and a ModelNew for a KernelBench problem)");
  show->add_option("task", o->task, "a task directory, a shipped task's name, or a PyTorch problem file")->required();
  show->add_flag("--json", o->json, "print the layout as JSON (lathe.task_layout/1)");
  show->callback([o, &exit_code] { exit_code = run_task_show(*o); });
}

}  // namespace lathe::cli
