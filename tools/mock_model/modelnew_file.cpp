#include "modelnew_file.h"

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <set>
#include <string_view>

#include "choice.h"

namespace lathe::mock {
namespace {

// One inline function per activation, in float as the Model computes it in fp32. Comparisons
// are written so that NaN propagates as torch's do (NaN < 0 is false: the NaN is returned).
// leaky_relu as max(v, 0) + s * min(v, 0): written `v < 0 ? v * s : v`, GCC 12 at -O3 keeps a
// branch (the multiply may trap, so it is not if-converted) and the loop is not vectorized:
// 5 ns an element on random signs, slower than torch's own kernel.
const char* helper(const std::string& fn) {
  if (fn == "relu") return "static inline float lathe_relu(float v) { return v < 0.0f ? 0.0f : v; }\n";
  if (fn == "leaky_relu")
    return "static inline float lathe_leaky_relu(float v, float s) {\n"
           "  return (v < 0.0f ? 0.0f : v) + s * (v < 0.0f ? v : 0.0f);\n}\n";
  if (fn == "tanh") return "static inline float lathe_tanh(float v) { return std::tanh(v); }\n";
  if (fn == "sigmoid")
    return "static inline float lathe_sigmoid(float v) { return 1.0f / (1.0f + std::exp(-v)); }\n";
  if (fn == "gelu")  // F.gelu's default: the erf form
    return "static inline float lathe_gelu(float v) {\n"
           "  return 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f));\n}\n";
  if (fn == "gelu_tanh")
    return "static inline float lathe_gelu_tanh(float v) {\n"
           "  return 0.5f * v * (1.0f + std::tanh(0.79788456080286536f * (v + 0.044715f * v * v * v)));\n}\n";
  return "";
}

// The same functions on the device: CUDA's float math (tanhf, expf, erff), inlined.
std::string device_helper(const std::string& fn) {
  std::string h = helper(fn);
  for (size_t at = h.find("static inline"); at != std::string::npos; at = h.find("static inline", at))
    h.replace(at, 13, "__device__ __forceinline__");
  for (const auto& [from, to] : {std::pair<const char*, const char*>{"std::tanh(", "tanhf("},
                                 {"std::exp(", "expf("}, {"std::erf(", "erff("}})
    for (size_t at = h.find(from); at != std::string::npos; at = h.find(from, at)) h.replace(at, std::string(from).size(), to);
  return h;
}

void functions_used(const chain_node& n, std::set<std::string>& out) {
  if (n.k == chain_node::kind::call) out.insert(n.text);
  for (const auto& a : n.args) functions_used(a, out);
}

// Parts appended in order. Not `"(" + render(…)`: GCC 12 warns (-Wrestrict) on a literal put
// before a temporary string, wrongly.
std::string cat(std::initializer_list<std::string_view> parts) {
  std::string s;
  for (auto p : parts) s.append(p);
  return s;
}

std::string render(const chain_node& n) {
  switch (n.k) {
    case chain_node::kind::base: return "v";
    case chain_node::kind::number: return cat({"static_cast<float>(", n.text, ")"});
    case chain_node::kind::attribute: return cat({"s_", n.text});
    case chain_node::kind::negate: return cat({"(-", render(n.args[0]), ")"});
    case chain_node::kind::binary:
      return cat({"(", render(n.args[0]), " ", n.text, " ", render(n.args[1]), ")"});
    case chain_node::kind::call: {
      std::string s = cat({"lathe_", n.text, "(", render(n.args[0])});
      for (size_t i = 1; i < n.args.size(); ++i) s += cat({", ", render(n.args[i])});
      return s + ")";
    }
  }
  return "";
}

std::string hex(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// The extension's entry point, as the CPU and CUDA sources define it and cpp_sources declares it.
std::string fused_signature(const fused_chain& c) {
  std::string d = "torch::Tensor fused_forward(torch::Tensor x";
  for (const auto& a : c.scalars) d += ", double a_" + a;
  return d + ")";
}

// The source's first line: what the chain computes.
std::string written_by(const fused_chain& c) {
  return "// Written by lathe-mock-model: " + describe(c.expr, c.linear.empty() ? "x" : "self." + c.linear + "(x)");
}

// The activations the chain calls, each once, through `write` (the host or the device form).
std::string helpers_of(const fused_chain& c, std::string (*write)(const std::string&)) {
  std::set<std::string> used;
  functions_used(c.expr, used);
  std::string s;
  for (const auto& fn : used) s += write(fn);
  return s;
}

std::string host_helper(const std::string& fn) { return helper(fn); }

}  // namespace

std::string fused_source(const fused_chain& c, const modelnew_options& o) {
  const auto uses = [&](const std::string& t) {
    return o.techniques.empty() || std::find(o.techniques.begin(), o.techniques.end(), t) != o.techniques.end();
  };
  const bool threads = uses("omp_parallel"), simd = uses("simd");
  const std::string restrict_ = uses("restrict") ? " __restrict__" : "";
  std::string s = written_by(c) + ",\n// one pass over the elements.\n";
  if (!o.cards.empty()) {
    std::string ids, names;
    for (const auto& id : o.cards) ids += (ids.empty() ? "" : ", ") + id;
    for (const auto& t : o.techniques) names += (names.empty() ? "" : ", ") + t;
    s += "// Carries card " + ids + " (" + names + ") into this extension's loop.\n";
  }
  s += "#include <torch/extension.h>\n\n#include <cmath>\n#include <cstdint>\n\n";
  s += helpers_of(c, host_helper);
  s += "\n" + fused_signature(c) + " {\n"
       "  TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == torch::kFloat32,\n"
       "              \"fused_forward: a float32 CPU tensor expected, got \", x.scalar_type());\n"
       "  const torch::Tensor in = x.contiguous();\n"
       "  torch::Tensor out = torch::empty_like(in);\n"
       "  const float*" + restrict_ + " src = in.data_ptr<float>();\n"
       "  float*" + restrict_ + " dst = out.data_ptr<float>();\n"
       "  const int64_t n = in.numel();\n";
  for (const auto& a : c.scalars) s += "  const float s_" + a + " = static_cast<float>(a_" + a + ");\n";
  const std::string value = render(c.expr) + (o.wrong ? " * 1.0625f" : "");
  const auto loop = [&](const std::string& in) {
    return cat({in, "for (int64_t i = 0; i < n; ++i) {\n", in, "  const float v = src[i];\n", in,
                "  dst[i] = ", value, ";\n", in, "}\n"});
  };
  // Threads only where the loop is long enough to pay for waking them (torch's own grain size
  // for elementwise ops, 32768). Below it no OpenMP team at all: `parallel … if(false)` still
  // costs libgomp's team setup, 2.4 us a call here, more than a 5120-element leaky_relu takes.
  if (threads)
    s += std::string("  if (n >= 32768) {\n#pragma omp parallel for") + (simd ? " simd" : "") +
         " schedule(static)\n" + loop("    ") + "    return out;\n  }\n";
  if (simd) s += "#pragma omp simd\n";
  s += loop("  ");
  s += "  return out;\n}\n";
  return s;
}

std::string fused_cuda_declaration(const fused_chain& c) { return fused_signature(c) + ";\n"; }

std::string fused_cuda_source(const fused_chain& c, const modelnew_options& o) {
  std::string s = written_by(c) +
                  ",\n// one CUDA thread per element, on torch's current stream.\n"
                  "#include <torch/extension.h>\n#include <ATen/cuda/CUDAContext.h>\n\n#include <cstdint>\n\n";
  s += helpers_of(c, device_helper);
  s += "\n__global__ void lathe_mock_fused(const float* __restrict__ src, float* __restrict__ dst, int64_t n";
  for (const auto& a : c.scalars) s += ", float s_" + a;
  s += ") {\n"
       "  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;\n"
       "  if (i >= n) return;\n"
       "  const float v = src[i];\n"
       "  dst[i] = " + render(c.expr) + (o.wrong ? " * 1.0625f" : "") + ";\n}\n\n";
  s += fused_signature(c) + " {\n";
  s += "  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32,\n"
       "              \"fused_forward: a float32 CUDA tensor expected, got \", x.scalar_type());\n"
       "  const torch::Tensor in = x.contiguous();\n"
       "  torch::Tensor out = torch::empty_like(in);\n"
       "  const int64_t n = in.numel();\n"
       "  if (n == 0) return out;\n"
       "  const int threads = 256;\n"
       "  const int64_t blocks = (n + threads - 1) / threads;\n"
       "  lathe_mock_fused<<<static_cast<unsigned>(blocks), threads, 0, at::cuda::getCurrentCUDAStream()>>>(\n"
       "      in.data_ptr<float>(), out.data_ptr<float>(), n";
  for (const auto& a : c.scalars) s += ", static_cast<float>(a_" + a + ")";
  s += ");\n"
       "  const cudaError_t e = cudaGetLastError();\n"
       "  TORCH_CHECK(e == cudaSuccess, \"fused_forward: launch failed: \", cudaGetErrorString(e));\n"
       "  return out;\n}\n";
  return s;
}

std::string modelnew_file(const py_problem& p, const fused_chain& c, const modelnew_options& o) {
  const std::string source = o.cuda ? fused_cuda_source(c, o) : fused_source(c, o);
  const std::string name = "lathe_mock_" + hex(fnv1a(source));
  std::string f = p.code;
  f += "\n\n";
  f += std::string(modelnew_marker) +
       " (written mechanically, docs/proposer.md):\n"
       "# forward's elementwise chain in one " + std::string(o.cuda ? "CUDA kernel" : "C++ loop") +
       ", built by load_inline.\n"
       "import torch.nn as nn\n"
       "from torch.utils.cpp_extension import load_inline as _lathe_mock_load_inline\n\n"
       "_lathe_mock_source = r\"\"\"\n" +
       source +
       "\"\"\"\n\n"
       "_lathe_mock_ext = _lathe_mock_load_inline(\n"
       "    name=\"" + name + "\",\n" +
       (o.cuda ? "    cpp_sources=r\"\"\"" + fused_cuda_declaration(c) + "\"\"\",\n"
                 "    cuda_sources=_lathe_mock_source,\n"
                 "    functions=[\"fused_forward\"],\n"
                 "    extra_cuda_cflags=[\"-O3\"],\n"
               : "    cpp_sources=_lathe_mock_source,\n"
                 "    functions=[\"fused_forward\"],\n"
                 "    extra_cflags=[\"-O3\", \"-fopenmp\"],\n"
                 "    extra_ldflags=[\"-fopenmp\"],\n") +
       ")\n\n\n"
       "class ModelNew(nn.Module):\n";
  // The Model's constructor as written: the same attributes and submodules, created in the same
  // order under the same seed, so the Model's parameters bind to these by name.
  std::string init = p.init_text;
  for (size_t at = init.find("super(Model,"); at != std::string::npos; at = init.find("super(Model,", at))
    init.replace(at, 12, "super(ModelNew,");
  if (!init.empty()) f += init + "\n";
  // The class body's indentation is the constructor's (a forward indented otherwise would not
  // parse); its body one level deeper.
  const std::string ind = init.empty() ? "    " : init.substr(0, init.find_first_not_of(" \t"));
  const std::string body = ind + ind;
  const std::string arg = c.linear.empty() ? p.input : "self." + c.linear + "(" + p.input + ")";
  f += ind + "def forward(self, " + p.input + "):\n";
  if (!c.linear.empty()) f += body + "# The Linear stays torch's; what follows it is fused.\n";
  f += body + "return _lathe_mock_ext.fused_forward(" + arg;
  for (const auto& a : c.scalars) f += ", self." + a;
  f += ")\n";
  if (!p.after.empty()) f += "\n\n" + p.after;
  return f;
}

}  // namespace lathe::mock
