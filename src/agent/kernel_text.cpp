// Prompt field text (agent/kernel_text.h).
#include "agent/kernel_text.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/dtype.h"
#include "core/feature_registry.h"
#include "core/text.h"
#include "spec/problem_inputs.h"

namespace lathe::agent {
namespace {

std::string number(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

std::string shape_text(const std::vector<dim>& shape) {
  std::vector<std::string> dims;
  for (const auto& d : shape) dims.push_back(d.symbol.empty() ? std::to_string(d.value) : d.symbol);
  return "[" + join(dims, ", ") + "]";
}

std::string distribution_text(const distribution& d) {
  switch (d.kind) {
    case distribution_kind::uniform:
      return "uniform in [" + number(d.low) + ", " + number(d.high) + ")";
    case distribution_kind::normal:
      return "normal(mean " + number(d.mean) + ", stddev " + number(d.stddev) + ")";
    case distribution_kind::integers:
      return "integers in [" + number(d.low) + ", " + number(d.high) + "]";
    case distribution_kind::constant:
      return "constant " + number(d.value);
  }
  return "?";
}

std::string tensor_text(const tensor_spec& t, bool input, const std::string& values = {}) {
  std::string s = "- " + t.name + ": " + std::string(to_string(t.type)) + " " + shape_text(t.shape);
  if (input) s += ", values " + (values.empty() ? distribution_text(t.dist) : values);
  return s;
}

// A PyTorch problem's inputs are drawn by its own code, not by the task's distributions (which
// stay at their defaults): forward's tensors by get_inputs, the Model's parameters and buffers
// by its constructor under torch.manual_seed(0) (docs/problems.md). What each input's values are,
// in the task's input order; empty for a task without a problem.
std::vector<std::string> problem_values(const task& t) {
  if (t.problem.empty()) return {};
  const problem_input_roles roles = problem_inputs(t);
  std::vector<std::string> v;
  for (size_t i = 0; i < t.inputs.size(); ++i) {
    if (i < roles.forward) v.push_back("drawn by the problem file's own code (a KernelBench problem's get_inputs())");
    else if (i - roles.forward < roles.state.size())
      v.push_back("the Model's state_dict tensor `" + roles.state[i - roles.forward] +
                  "` as its constructor initializes it (torch.manual_seed(0))");
    else v.push_back("the Model's state, as its constructor initializes it");
  }
  return v;
}

}  // namespace

std::string task_text(const task& t) {
  std::string s = "name: " + t.name + "\noperator: " + t.op + "\nplatform: " + to_string(t.plat) +
                  "\ndescription: " + (t.description.empty() ? none_text : t.description) +
                  "\ninputs (in this order; ABI inputs[i]):\n";
  if (t.inputs.empty()) s += std::string(none_text) + "\n";
  const auto values = problem_values(t);
  for (size_t i = 0; i < t.inputs.size(); ++i)
    s += tensor_text(t.inputs[i], true, i < values.size() ? values[i] : std::string()) + "\n";
  s += "outputs (ABI outputs[i]; write every element):\n";
  if (t.outputs.empty()) s += std::string(none_text) + "\n";
  for (const auto& out : t.outputs) s += tensor_text(out, false) + "\n";
  s += "scalars (ABI scalars[i], doubles):";
  if (t.scalars.empty()) s += std::string(" ") + none_text;
  for (const auto& sc : t.scalars) s += "\n- " + sc.name + " = " + number(sc.value);
  s += "\nshape sets:";
  if (t.shapes.empty()) s += std::string(" ") + none_text;
  for (const auto& set : t.shapes) {
    std::vector<std::string> binds;
    for (const auto& [k, v] : set.symbols) binds.push_back(k + "=" + std::to_string(v));
    s += "\n- " + set.name + ": " + join(binds, ", ") + (set.time ? " (timed)" : "");
  }
  s += "\ncomparison: " + std::string(to_string(t.compare.kind));
  if (t.compare.tol.rtol) s += ", rtol " + number(*t.compare.tol.rtol);
  if (t.compare.tol.atol) s += ", atol " + number(*t.compare.tol.atol);
  s += "\nvendor libraries allowed: " +
       (t.allow_libraries.empty() ? std::string(none_text) : join(t.allow_libraries, ", "));
  s += std::string("\nfast math allowed: ") + (t.allow_fast_math ? "yes" : "no");
  return s;
}

std::string target_text(const target& t) {
  std::string s = std::string("platform: ") + to_string(t.plat) +
                  "\narchitecture: " + (t.arch.empty() ? none_text : t.arch) +
                  "\ndevice: " + (t.device.empty() ? none_text : t.device);
  if (t.plat == platform::cuda) {
    s += "\ncompute capability: " + std::to_string(t.cc_major) + "." + std::to_string(t.cc_minor);
    if (t.smem_optin_bytes)
      s += "\nshared memory per block (opt-in): " + std::to_string(t.smem_optin_bytes) + " bytes";
  } else {
    s += "\ncores: " + std::to_string(t.cores);
  }
  s += "\ncapabilities: " +
       (t.capabilities.empty() ? std::string(none_text) : join(t.capabilities, ", "));
  return s;
}

std::string kernel_text(const kernel_bundle& k, bool numbered) {
  const kernel_manifest& m = k.manifest;
  std::string s = std::string("language: ") + to_string(m.lang) + "\nentry: " + m.entry +
                  "\nflags: " + (m.flags.empty() ? none_text : join(m.flags, " "));
  if (!m.defines.empty()) {
    std::vector<std::string> defs;
    for (const auto& [key, v] : m.defines) defs.push_back(key + "=" + v);
    s += "\ndefines: " + join(defs, " ");
  }
  if (!m.libraries.empty()) s += "\nlibraries: " + join(m.libraries, " ");
  if (!m.isa.empty()) s += "\nisa: " + m.isa;
  for (const auto& [path, text] : k.sources) {
    s += "\n=== FILE " + path + " ===\n";
    if (!numbered) {
      s += text;
      if (!text.empty() && text.back() != '\n') s += '\n';
      continue;
    }
    std::istringstream in(text);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      char no[16];
      std::snprintf(no, sizeof no, "%5d| ", n);
      s += no + line + "\n";
    }
  }
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

std::string feature_text(const feature& f) {
  std::string s = f.name + " @ " + (f.locus.empty() ? std::string("(whole kernel)") : f.locus);
  if (!f.params.empty()) {
    std::vector<std::string> ps;
    for (const auto& [k, v] : f.params) ps.push_back(k + "=" + v);
    s += " (" + join(ps, ", ") + ")";
  }
  return s;
}

std::string features_text(const std::vector<feature>& fs) {
  if (fs.empty()) return none_text;
  std::vector<std::string> lines;
  for (const auto& f : fs) lines.push_back(feature_text(f));
  return join(lines, "\n");
}

std::string definition_text(const std::string& name) {
  const feature_definition* d = find_feature(name);
  if (!d) return name;
  std::string s = name + ": " + std::string(d->definition);
  if (!d->params.empty()) s += " (parameters: " + std::string(d->params) + ")";
  return s;
}

std::string registry_text(platform plat) {
  std::vector<std::string> items;
  const std::string_view want = to_string(plat);
  for (const auto& d : feature_registry()) {
    // "cuda,cpu": a comma-separated list of platforms.
    bool applies = false;
    for (size_t at = 0; at <= d.platforms.size();) {
      size_t comma = d.platforms.find(',', at);
      if (comma == std::string_view::npos) comma = d.platforms.size();
      if (d.platforms.substr(at, comma - at) == want) applies = true;
      at = comma + 1;
    }
    if (applies) items.push_back(definition_text(std::string(d.name)));
  }
  return list_text(items);
}

std::string list_text(const std::vector<std::string>& items) {
  if (items.empty()) return none_text;
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "- " : "\n- ") + i;
  return s;
}

std::string notes_text(const std::vector<attempt_note>& notes) {
  std::vector<std::string> items;
  for (const auto& n : notes) items.push_back(n.summary);
  return list_text(items);
}

std::string card_text(const skill_card& c, language lang) {
  std::string s = "intent: " + c.intent + "\nanchor: " + c.anchor;
  const std::string prefix = std::string(to_string(lang)) + "/";
  bool matched = false;
  for (const auto& [key, carrier] : c.carriers)
    if (key.rfind(prefix, 0) == 0) {
      s += "\ncarrier (" + key + "):\n" + carrier;
      matched = true;
    }
  if (!matched)
    for (const auto& [key, carrier] : c.carriers) s += "\ncarrier (" + key + "):\n" + carrier;
  if (c.carriers.empty()) s += std::string("\ncarrier: ") + none_text;
  s += "\npreconditions:\n" + list_text(c.preconditions);
  if (!c.constraints.empty()) {
    std::vector<std::string> cs;
    for (const auto& k : c.constraints) cs.push_back(k.what + ": " + k.value);
    s += "\nconstraints:\n" + list_text(cs);
  }
  s += "\nrisk: " + (c.risk.empty() ? std::string(none_text) : c.risk);
  return s;
}

std::string step_text(const transition& st) {
  auto names = [](const std::vector<feature>& fs) {
    std::vector<std::string> out;
    for (const auto& f : fs) out.push_back(feature_text(f));
    return out.empty() ? std::string(none_text) : join(out, "; ");
  };
  std::string s = "action: " + st.action + "\nlocus: " + st.locus +
                  "\nfeatures removed by the step: " + names(st.removed) +
                  "\nfeatures added by the step: " + names(st.added) + "\nmeasured speedup: ";
  if (st.speedup && std::isfinite(*st.speedup)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3fx", *st.speedup);
    s += std::string(buf) + " (after over before, paired timing on the target)";
  } else {
    s += "not measured";
  }
  return s;
}

std::string clipped(const std::string& text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  const size_t head = max_bytes / 2, tail = max_bytes - head;
  return text.substr(0, head) + "\n[… " + std::to_string(text.size() - max_bytes) +
         " bytes cut …]\n" + text.substr(text.size() - tail);
}

std::string summary_text(const std::string& text, size_t max_bytes) {
  std::string s;
  s.reserve(text.size());
  for (char c : text) {
    const bool space = c == '\n' || c == '\r' || c == '\t' || c == ' ';
    if (space) {
      if (!s.empty() && s.back() != ' ') s += ' ';
    } else {
      s += c;
    }
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  if (s.size() <= max_bytes) return s;
  // The last sentence end in the second half of the allowance, else the last space, else a UTF-8
  // character boundary: never a word or a character cut in two.
  size_t cut = std::string::npos;
  for (size_t i = max_bytes; i > max_bytes / 2; --i)
    if (s[i] == ' ' && (s[i - 1] == '.' || s[i - 1] == ';' || s[i - 1] == ':' || s[i - 1] == '!' || s[i - 1] == '?')) {
      cut = i;
      break;
    }
  if (cut == std::string::npos) {
    const size_t space = s.rfind(' ', max_bytes);
    cut = space != std::string::npos && space > 0 ? space : max_bytes;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  }
  std::string head = s.substr(0, cut);
  while (!head.empty() && head.back() == ' ') head.pop_back();
  size_t rest = 0;  // characters, not bytes: UTF-8 continuation bytes are not counted
  for (size_t i = cut; i < s.size(); ++i) rest += (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
  return head + " [… " + std::to_string(rest) + " more characters cut]";
}

std::string carrier_key(language lang, platform plat) {
  return std::string(to_string(lang)) + "/" + to_string(plat);
}

}  // namespace lathe::agent
