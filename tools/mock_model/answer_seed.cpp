// seed_baseline: a first CPU kernel written generically from the task's reference. The
// reference (include/lathe/abi.h) computes float64 outputs from the real inputs; the seed keeps
// its code as a static function, points float64 views of the outputs into the workspace
// (lathe_workspace_bytes asks for it), runs it, and converts into each output's dtype. Slow, but
// correct by construction, and only what the screen allows (no lathe_reference symbol, no
// allocation, no I/O). CUDA seeds need a device kernel the reference cannot give: refused.
#include <regex>

#include "answers.h"
#include "source.h"

namespace lathe::mock {
namespace {

std::string field_or_empty(const prompt& p, std::string_view name) {
  auto v = field(p.user, name, p.operation);
  return v ? *v : std::string();
}

// The reference's source in the `reference` field: a FILE section, a fenced block, or the text.
std::string reference_source(const prompt& p) {
  const std::string value = field_or_empty(p, "reference");
  const kernel_text k = read_kernel(value.empty() ? p.user : value);
  for (const auto& f : k.files)
    if (f.text.find("lathe_reference") != std::string::npos) return f.text;
  const auto lines = split_lines(value);
  std::string fenced;
  bool inside = false, seen = false;
  for (const auto& l : lines) {
    if (l.starts_with("```")) {
      if (inside) break;
      inside = seen = true;
      continue;
    }
    if (inside) fenced += l + "\n";
  }
  if (seen && fenced.find("lathe_reference") != std::string::npos) return fenced;
  return value.find("lathe_reference") != std::string::npos ? value + "\n" : std::string();
}

const char* launcher = R"(
// ---- seed launcher (written by lathe-mock-model) ----
// The reference above computes float64 outputs; this launcher gives it float64 views of the
// outputs in the workspace, then converts each into its real dtype.
namespace {

constexpr int mock_max_outputs = 16;

int64_t mock_elements(const DLTensor& t) {
  int64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

size_t mock_bytes(const lathe_args* args) {
  size_t total = 0;
  for (int32_t o = 0; o < args->num_outputs; ++o)
    total += (static_cast<size_t>(mock_elements(args->outputs[o])) * sizeof(double) + 63) / 64 * 64;
  return total;
}

void mock_error(const lathe_args* a, const char* msg) {
  if (a->error == nullptr || a->error_bytes == 0) return;
  size_t i = 0;
  for (; msg[i] != '\0' && i + 1 < a->error_bytes; ++i) a->error[i] = msg[i];
  a->error[i] = '\0';
}

template <class T>
void mock_store(const double* from, const DLTensor& to, int64_t n) {
  T* out = reinterpret_cast<T*>(static_cast<char*>(to.data) + to.byte_offset);
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(from[i]);
}

// Float64 views of the outputs, packed into the workspace.
void mock_views(const lathe_args* args, DLTensor* views) {
  char* scratch = static_cast<char*>(args->workspace);
  for (int32_t o = 0; o < args->num_outputs; ++o) {
    views[o] = args->outputs[o];
    views[o].data = scratch;
    views[o].byte_offset = 0;
    views[o].strides = nullptr;
    views[o].dtype = DLDataType{kDLFloat, 64, 1};
    scratch += (static_cast<size_t>(mock_elements(args->outputs[o])) * sizeof(double) + 63) / 64 * 64;
  }
}

// One output from its float64 view; false for a dtype the seed cannot write.
bool mock_convert(const DLTensor& view, const DLTensor& out) {
  const double* from = static_cast<const double*>(view.data);
  const int64_t n = mock_elements(out);
  const DLDataType t = out.dtype;
  if (t.code == kDLFloat && t.bits == 32) mock_store<float>(from, out, n);
  else if (t.code == kDLFloat && t.bits == 64) mock_store<double>(from, out, n);
  else if (t.code == kDLInt && t.bits == 32) mock_store<int32_t>(from, out, n);
  else if (t.code == kDLInt && t.bits == 64) mock_store<int64_t>(from, out, n);
  else if (t.code == kDLUInt && t.bits == 8) mock_store<uint8_t>(from, out, n);
  else return false;
  return true;
}

}  // namespace

extern "C" size_t lathe_workspace_bytes(const lathe_args* args) {
  return mock_bytes(args);
}

extern "C" int lathe_launch(const lathe_args* args) {
  if (args->num_outputs > mock_max_outputs) {
    mock_error(args, "seed: too many outputs");
    return 1;
  }
  if (args->workspace_bytes < mock_bytes(args)) {
    mock_error(args, "seed: the workspace is smaller than lathe_workspace_bytes asked");
    return 1;
  }
  DLTensor views[mock_max_outputs];
  mock_views(args, views);
  lathe_args wide = *args;
  wide.outputs = views;
  wide.workspace = nullptr;
  wide.workspace_bytes = 0;
  if (int rc = mock_seed_reference(&wide); rc != 0) return rc;
  for (int32_t o = 0; o < args->num_outputs; ++o) {
    const DLTensor& out = args->outputs[o];
    if (out.dtype.code == kDLFloat && out.dtype.bits == 32) {
      // The common case inline: float32 outputs.
      const double* from = static_cast<const double*>(views[o].data);
      float* to = reinterpret_cast<float*>(static_cast<char*>(out.data) + out.byte_offset);
      const int64_t n = mock_elements(out);
      for (int64_t i = 0; i < n; ++i) to[i] = static_cast<float>(from[i]);
    } else if (!mock_convert(views[o], out)) {
      mock_error(args, "seed: an output dtype the seed cannot convert to");
      return 1;
    }
  }
  return 0;
}
)";

}  // namespace

answer_result answer_seed(const context& c) {
  const std::string target = field_or_empty(c.p, "target");
  // The entry file: the seed bundle in the working directory (llm_proposer's seed_bundle), else
  // the `entry_file` field, else the template's `@@@ WHOLE <file>`, else by platform.
  mock_bundle start;
  if (auto d = bundle_from_dir(c.dir)) start = *d;
  std::string entry = start.entry;
  if (entry.empty()) entry = split_lines(trim(field_or_empty(c.p, "entry_file")) + "\n").front();
  if (entry.empty() || entry == "(none)") {
    std::smatch m;
    static const std::regex whole(R"(@@@ WHOLE ([^\s]+))");
    if (std::regex_search(c.p.user, m, whole)) entry = m[1];
  }
  const bool cuda_target = target_is_cuda(target);
  if (entry.empty()) entry = cuda_target ? "kernel.cu" : "kernel.cpp";
  const bool cuda = entry.ends_with(".cu") || start.cuda || cuda_target;
  if (cuda)
    return refusal(c.p,
                   "the mock writes CPU seeds only: a CUDA seed needs a device kernel, which "
                   "the reference does not give",
                   {});
  std::string ref = reference_source(c.p);
  static const std::regex entry_point(R"(extern\s+"C"\s+int\s+lathe_reference\s*\()");
  if (ref.empty() || !std::regex_search(ref, entry_point))
    return refusal(
        c.p, "no reference source with `extern \"C\" int lathe_reference(` in the prompt", {});
  // The screen refuses the name lathe_reference anywhere in a candidate (it would call the oracle).
  ref = std::regex_replace(ref, entry_point, "static int mock_seed_reference(");
  ref = std::regex_replace(ref, std::regex(R"(\blathe_reference\b)"), "mock_seed_reference");
  std::string text =
      "// Seed kernel from the task's reference (lathe-mock-model): the reference's own loops in\n"
      "// float64, converted to the outputs' dtypes.\n" +
      ref + launcher;
  answer a;
  a.has_edits = true;
  a.whole = true;
  a.before = start;
  a.after = start;
  a.after.files[entry] = text;
  a.after.entry = entry;
  a.notes.push_back("seed written into " + entry + " from the reference");
  if (c.f.wrong) {
    auto ws = c.choose.for_purpose("wrong_kind");
    if (auto w = make_wrong(a.after, "lathe_launch", c.opt.only_kind, ws)) {
      a.after.files[w->path] = w->text;
      a.notes.push_back(std::string("wrong answer (") + to_string(w->kind) + ") at " + w->where +
                        ": " + w->what);
    }
  }
  a.body["rationale"] =
      "The reference's computation kept as a static function, run on float64 views of the outputs "
      "in the workspace, then converted to the outputs' dtypes. A correct, slow starting point.";
  return a;
}

}  // namespace lathe::mock
