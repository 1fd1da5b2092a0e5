#include "skills/constraints.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <span>

#include "core/dtype.h"
#include "core/text.h"

namespace lathe::skills {

namespace {

std::optional<int64_t> integer(std::string_view s) {
  int64_t v = 0;
  if (s.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

bool is_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// "sm_90a" -> {90, true}; "sm_80" -> {80, false}; nullopt for anything else.
struct sm_arch {
  int32_t cc = 0;       // 10 * major + minor
  bool specific = false;  // the "a" suffix: this compute capability exactly
};
std::optional<sm_arch> parse_sm(std::string_view s) {
  if (!s.starts_with("sm_")) return std::nullopt;
  s.remove_prefix(3);
  sm_arch a;
  if (s.ends_with("a")) {
    a.specific = true;
    s.remove_suffix(1);
  }
  auto v = integer(s);
  if (!v || *v < 10 || *v > 999) return std::nullopt;
  a.cc = static_cast<int32_t>(*v);
  return a;
}

// The compute capability of a CUDA target: its recorded one, else its architecture's name.
std::optional<int32_t> target_cc(const target& t) {
  if (t.cc_major > 0) return t.cc_major * 10 + t.cc_minor;
  if (auto a = parse_sm(t.arch)) return a->cc;
  return std::nullopt;
}

constraint_failure failure_of(const constraint& c, const target& tgt, std::string reason) {
  return constraint_failure{c, target_name(tgt), std::move(reason)};
}

// The one dtype every floating tensor of `t` has; nullopt when they differ or there is none.
std::optional<dtype> floating_dtype(const task& t) {
  std::optional<dtype> one;
  for (const auto* list : {&t.inputs, &t.outputs})
    for (const auto& s : *list) {
      if (!is_floating(s.type)) continue;
      if (one && *one != s.type) return std::nullopt;
      one = s.type;
    }
  return one;
}

size_t count_of(const kernel_bundle& k, std::string_view needle) {
  size_t n = 0;
  for (const auto& [path, text] : k.sources)
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

const char* to_string(constraint_kind k) {
  switch (k) {
    case constraint_kind::capability: return "capability";
    case constraint_kind::smem_bytes: return "smem_bytes";
    case constraint_kind::dtype: return "dtype";
    case constraint_kind::alignment: return "alignment";
    case constraint_kind::divisibility: return "divisibility";
    case constraint_kind::isa: return "isa";
  }
  return "?";
}

std::optional<constraint_kind> constraint_kind_of(std::string_view what) {
  for (auto k : {constraint_kind::capability, constraint_kind::smem_bytes, constraint_kind::dtype,
                 constraint_kind::alignment, constraint_kind::divisibility, constraint_kind::isa})
    if (what == to_string(k)) return k;
  return std::nullopt;
}

std::string constraint_text(const constraint& c) { return c.what + "=" + c.value; }

std::string target_name(const target& t) {
  std::string n = t.arch.empty() ? std::string(to_string(t.plat)) : t.arch;
  if (!t.device.empty()) n += " (" + t.device + ")";
  return n;
}

std::optional<std::string> grammar_problem(const constraint& c) {
  const auto kind = constraint_kind_of(c.what);
  if (!kind)
    return "unknown constraint kind '" + c.what +
           "' (capability, smem_bytes, dtype, alignment, divisibility, isa)";
  const std::string& v = c.value;
  switch (*kind) {
    case constraint_kind::capability:
      if (v.empty() || !std::all_of(v.begin(), v.end(), [](char ch) {
            return std::islower(static_cast<unsigned char>(ch)) || std::isdigit(static_cast<unsigned char>(ch)) ||
                   ch == '.' || ch == '_' || ch == '-';
          }))
        return "capability '" + v + "' is not a capability name (\"wgmma\", \"avx2\", \"cp.async\")";
      return std::nullopt;
    case constraint_kind::smem_bytes:
      if (auto n = integer(v); !n || *n < 0) return "smem_bytes '" + v + "' is not a byte count";
      return std::nullopt;
    case constraint_kind::dtype:
      if (!parse_dtype(v)) return "dtype '" + v + "' is not a dtype (\"f32\", \"bf16\"…)";
      return std::nullopt;
    case constraint_kind::alignment:
      if (auto n = integer(v); !n || *n <= 0 || (*n & (*n - 1)) != 0)
        return "alignment '" + v + "' is not a power of two in bytes";
      return std::nullopt;
    case constraint_kind::divisibility: {
      const size_t pct = v.find('%');
      auto k = pct == std::string::npos ? std::nullopt : integer(std::string_view(v).substr(pct + 1));
      if (pct == std::string::npos || !is_identifier(std::string_view(v).substr(0, pct)) || !k || *k <= 0)
        return "divisibility '" + v + "' is not SYMBOL%K (\"N%4\")";
      return std::nullopt;
    }
    case constraint_kind::isa:
      if (x86_level(v) < 0 && !parse_sm(v))
        return "isa '" + v + "' is no architecture (\"x86-64-v3\", \"sm_80\", \"sm_90a\")";
      return std::nullopt;
  }
  return std::nullopt;
}

std::optional<constraint_failure> check(const constraint& c, const target& tgt, const task* t) {
  if (auto bad = grammar_problem(c)) return failure_of(c, tgt, "unreadable constraint: " + *bad);
  const std::string& v = c.value;
  switch (*constraint_kind_of(c.what)) {
    case constraint_kind::capability:
      if (has_capability(tgt, v)) return std::nullopt;
      return failure_of(c, tgt, target_name(tgt) + " lacks capability " + v + " (it has " +
                                    (tgt.capabilities.empty() ? std::string("none") : join(tgt.capabilities, ", ")) + ")");
    case constraint_kind::smem_bytes: {
      const int64_t need = *integer(v);
      if (tgt.plat != platform::cuda)
        return failure_of(c, tgt, target_name(tgt) + " is a " + to_string(tgt.plat) + " target: no shared memory");
      if (tgt.smem_optin_bytes == 0)
        return failure_of(c, tgt, target_name(tgt) + ": shared memory per block was not read from the device");
      if (static_cast<int64_t>(tgt.smem_optin_bytes) >= need) return std::nullopt;
      return failure_of(c, tgt, target_name(tgt) + " has " + std::to_string(tgt.smem_optin_bytes) +
                                    " bytes of shared memory per block, fewer than " + v);
    }
    case constraint_kind::dtype: {
      if (!t) return std::nullopt;  // a task property: decided when a task is given
      const dtype want = *parse_dtype(v);
      for (const auto* list : {&t->inputs, &t->outputs})
        for (const auto& s : *list)
          if (is_floating(s.type) && s.type != want)
            return failure_of(c, tgt, "task " + t->name + ": tensor '" + s.name + "' is " +
                                          std::string(to_string(s.type)) + ", not " + std::string(to_string(want)));
      return std::nullopt;
    }
    case constraint_kind::alignment: {
      // ABI v1 (DESIGN.md): every tensor is 256-byte aligned; nothing stronger is promised.
      constexpr int64_t abi_alignment = 256;
      if (*integer(v) <= abi_alignment) return std::nullopt;
      return failure_of(c, tgt, "lathe ABI v1 aligns tensors to " + std::to_string(abi_alignment) +
                                    " bytes, less than " + v);
    }
    case constraint_kind::divisibility: {
      if (!t) return std::nullopt;  // a task property: decided when a task is given
      const size_t pct = v.find('%');
      const std::string sym = v.substr(0, pct);
      const int64_t k = *integer(std::string_view(v).substr(pct + 1));
      for (const auto& s : t->shapes) {
        auto it = s.symbols.find(sym);
        if (it == s.symbols.end())
          return failure_of(c, tgt, "task " + t->name + ": shape set '" + s.name + "' binds no " + sym);
        if (it->second % k != 0)
          return failure_of(c, tgt, "task " + t->name + ": shape set '" + s.name + "' has " + sym + " = " +
                                        std::to_string(it->second) + ", not a multiple of " + std::to_string(k));
      }
      return std::nullopt;
    }
    case constraint_kind::isa: {
      if (const int need = x86_level(v); need > 0) {
        if (tgt.plat != platform::cpu)
          return failure_of(c, tgt, target_name(tgt) + " is a " + to_string(tgt.plat) + " target, not x86-64");
        const int have = x86_level(tgt.arch);
        if (have >= need) return std::nullopt;
        return failure_of(c, tgt, target_name(tgt) + " does not reach " + v);
      }
      const sm_arch need = *parse_sm(v);
      if (tgt.plat != platform::cuda)
        return failure_of(c, tgt, target_name(tgt) + " is a " + to_string(tgt.plat) + " target, not CUDA");
      const auto have = target_cc(tgt);
      if (!have) return failure_of(c, tgt, target_name(tgt) + ": compute capability unknown");
      // sm_90a code runs on exactly compute capability 9.0 (arch-specific instructions).
      if (need.specific ? *have == need.cc : *have >= need.cc) return std::nullopt;
      return failure_of(c, tgt, target_name(tgt) + " is compute capability " + std::to_string(*have / 10) + "." +
                                    std::to_string(*have % 10) + (need.specific ? ", not exactly " : ", below ") + v);
    }
  }
  return std::nullopt;
}

void add_unique(std::vector<constraint>& out, const constraint& c) {
  if (std::none_of(out.begin(), out.end(),
                   [&](const constraint& o) { return o.what == c.what && o.value == c.value; }))
    out.push_back(c);
}

std::vector<constraint> implied_constraints(const std::vector<std::string>& provided) {
  // The instruction each mechanism is made of, by target capability (gate/gpu_target.cpp names).
  struct implication {
    const char* feature;
    const char* what;
    const char* value;
  };
  static constexpr implication table[] = {
      {"wgmma", "capability", "wgmma"},     {"wgmma", "isa", "sm_90a"},
      {"tma", "capability", "tma"},         {"cp_async_pipeline", "capability", "cp.async"},
      {"mma_sync", "capability", "mma.sync"}, {"ldmatrix", "capability", "ldmatrix"},
  };
  std::vector<constraint> out;
  for (const auto& f : provided)
    for (const auto& i : table)
      if (f == i.feature) add_unique(out, {i.what, i.value});
  return out;
}

std::vector<constraint> effective_constraints(const skill_card& c) {
  std::vector<constraint> out = c.constraints;
  for (const auto& k : implied_constraints(c.provides_features)) add_unique(out, k);
  return out;
}

std::vector<constraint> derive_constraints(const kernel_bundle& before, const kernel_bundle& after,
                                           const task& t, const std::vector<feature>& added,
                                           int64_t after_static_smem) {
  std::vector<constraint> out;
  if (!after.manifest.isa.empty() && after.manifest.isa != before.manifest.isa)
    add_unique(out, {"isa", after.manifest.isa});
  // Instructions the step brings in: more uses after than before. A source that already had
  // them does not make the step need them (the kernel was built for the target already).
  struct pattern {
    const char* needle;
    const char* capability;
  };
  static constexpr pattern cpp_patterns[] = {
      {"_mm512_", "avx512f"}, {"_mm256_", "avx2"}, {"_fmadd_", "fma"}, {"_fmsub_", "fma"}};
  static constexpr pattern cuda_patterns[] = {{"wgmma.", "wgmma"},       {"cp.async.bulk", "tma"},
                                              {"cp.async", "cp.async"},  {"mma.sync", "mma.sync"},
                                              {"ldmatrix", "ldmatrix"}};
  const bool cuda = after.manifest.lang == language::cuda;
  for (const auto& p : cuda ? std::span<const pattern>(cuda_patterns) : std::span<const pattern>(cpp_patterns))
    if (count_of(after, p.needle) > count_of(before, p.needle)) add_unique(out, {"capability", p.capability});
  std::vector<std::string> names;
  for (const auto& f : added) names.push_back(f.name);
  for (const auto& k : implied_constraints(names)) add_unique(out, k);
  // A mechanism written for one element type (a vector of 8 floats, an m16n8k16 bf16 fragment).
  static const std::vector<std::string> typed = {"simd", "vector_access", "mma_sync", "wgmma", "ldmatrix"};
  const auto dt = floating_dtype(t);
  bool is_typed = false;
  for (const auto& n : names) is_typed |= std::find(typed.begin(), typed.end(), n) != typed.end();
  if (is_typed && dt) add_unique(out, {"dtype", std::string(to_string(*dt))});
  // A CUDA vector access of W bits needs W/8-byte aligned addresses (a CPU one may be unaligned).
  for (const auto& f : added) {
    if (f.name != "vector_access" || !cuda) continue;
    auto it = f.params.find("width");
    if (it == f.params.end()) continue;
    if (auto bits = integer(it->second); bits && *bits >= 16 && *bits % 8 == 0)
      add_unique(out, {"alignment", std::to_string(*bits / 8)});
  }
  if (after_static_smem > 0) add_unique(out, {"smem_bytes", std::to_string(after_static_smem)});
  return out;
}

}  // namespace lathe::skills
