// vector_access.remove / vector_access.add (CUDA), on one canonical pattern only: a local vector
// pointer (float4, float2, int4, int2, uint4, uint2, double2, and the 32-bit half-precision pairs
// __half2/half2 and __nv_bfloat162/nv_bfloat162, catalog_vector.h) made by a cast of a scalar
// pointer,
//   const float4* xr = reinterpret_cast<const float4*>(x + off);
// used only as `xr[i]` (load or `xr[i] = v;`), `LD(xr + i)` (LD: __ldg, __ldcs, __ldcg, __ldca,
// __ldlu, __ldcv) or `ST(xr + i, v);` (ST: __stcs, __stcg, __stwb, __stwt). Backward rewrites the
// pointer as the scalar one and every access as N scalar accesses (`make_float4(xr[4 * i], …)`,
// `{ const float4 lathe_v = v; __stcs(xr + 4 * i, lathe_v.x); … }`); forward folds exactly that
// canonical text back. Any other use of the pointer (passed on, compared, offset outside these
// forms) makes it no site: a general scalar ⇄ vector rewrite needs alignment and aliasing facts
// the tokens do not hold. Alignment is assumed (the ABI gives 256-byte aligned tensors; an offset
// row must stay a multiple of the vector width: the kernel's own guard).
#include "agent/rules/catalog_vector.h"

#include <algorithm>

namespace lathe::agent::rules::detail::vec {

namespace {

const std::set<std::string_view> kLowOps = {"?",  ":",  "<",  ">", "<=", ">=", "==", "!=", "&&",
                                            "||", "<<", ">>", "&", "|",  "^",  "=",  ","};

std::string words(const source_view& v, token_span s) {
  std::string out;
  for (uint32_t i = s.first; i < s.last; ++i)
    if (v.tl.tokens[i].kind != token_kind::comment) out += std::string(v.tok(i)) + " ";
  return out;
}

}  // namespace

const vtype* vtype_of(std::string_view n) {
  for (const vtype& t : kTypes)
    if (t.name == n) return &t;
  return nullptr;
}

bool names_component(std::string_view type, std::string_view component) {
  auto words = [](std::string_view s) {
    std::vector<std::string_view> out;
    for (size_t i = 0; i < s.size();) {
      const size_t b = s.find_first_not_of(" \t*&", i);
      if (b == std::string_view::npos) break;
      const size_t e = std::min(s.find_first_of(" \t*&", b), s.size());
      out.push_back(s.substr(b, e - b));
      i = e;
    }
    return out;
  };
  const auto have = words(type), want = words(component);
  return !want.empty() &&
         std::search(have.begin(), have.end(), want.begin(), want.end()) != have.end();
}

std::vector<decl> pointer_decls(const source_view& v, const function& f) {
  std::vector<decl> out;
  for (uint32_t i = f.body.first + 1; i + 4 < f.body.last; ++i) {
    const long p = v.tl.prev_code(i);
    if (p < 0 || (v.tok(p) != ";" && v.tok(p) != "{" && v.tok(p) != "}")) continue;
    decl d;
    uint32_t k = i;
    if (v.tok(k) == "const") d.is_const = true, k = v.tl.next_code(k);
    if (v.tl.tokens[k].kind != token_kind::identifier) continue;
    d.type = std::string(v.tok(k));
    // `unsigned int*`: a two-word component type.
    if (d.type == "unsigned" && v.tok(v.tl.next_code(k)) == "int")
      k = v.tl.next_code(k), d.type += " int";
    k = v.tl.next_code(k);
    if (v.tok(k) != "*") continue;
    k = v.tl.next_code(k);
    if (v.tl.tokens[k].kind != token_kind::identifier || v.tok(v.tl.next_code(k)) != "=") continue;
    d.name = std::string(v.tok(k));
    const uint32_t eq = v.tl.next_code(k);
    uint32_t end = eq;
    while (end < f.body.last &&
           !(v.tok(end) == ";" && v.tl.tokens[end].depth == v.tl.tokens[i].depth))
      ++end;
    if (end >= f.body.last) continue;
    d.init = {static_cast<uint32_t>(v.tl.next_code(eq)), end};
    d.whole = {i, end + 1};
    out.push_back(d);
  }
  return out;
}

std::string lane_index(const vtype& t, const std::string& idx, int k) {
  const bool simple = idx.find_first_of(" +-*/%") == std::string::npos;
  std::string base = std::to_string(t.lanes) + " * " + (simple ? idx : "(" + idx + ")");
  return k == 0 ? base : base + " + " + std::to_string(k);
}

// The scalar forms (what backward writes and forward recognizes). `ld`/`st` empty: subscripts.
std::string scalar_load(const vtype& t, const std::string& p, const std::string& idx,
                        std::string_view ld) {
  std::string s = std::string(t.make) + "(";
  for (int k = 0; k < t.lanes; ++k)
    s += std::string(k ? ", " : "") +
         (ld.empty() ? p + "[" + lane_index(t, idx, k) + "]"
                     : std::string(ld) + "(" + p + " + " + lane_index(t, idx, k) + ")");
  return s + ")";
}

std::string scalar_store(const vtype& t, const std::string& p, const std::string& idx,
                         const std::string& value, std::string_view st) {
  std::string s = "{ const " + std::string(t.name) + " lathe_v = " + value + ";";
  for (int k = 0; k < t.lanes; ++k)
    s += " " +
         (st.empty() ? p + "[" + lane_index(t, idx, k) + "] = lathe_v." + kLanes[k]
                     : std::string(st) + "(" + p + " + " + lane_index(t, idx, k) + ", lathe_v." +
                           kLanes[k] + ")") +
         ";";
  return s + " }";
}

namespace {

// The uses of `d` after its declaration, in scalar form; nullopt when one is not canonical.
std::optional<std::vector<use>> vector_uses(const source_view& v, const function& f, const decl& d,
                                            const vtype& t) {
  std::vector<use> out;
  auto text = [&](token_span s) { return std::string(v.bytes(s)); };
  auto low = [&](token_span s) {
    for (uint32_t i = s.first; i < s.last; ++i)
      if (v.tl.tokens[i].depth == v.tl.tokens[s.first].depth && kLowOps.count(v.tok(i)))
        return true;
    return false;
  };
  for (uint32_t i = d.whole.last; i < f.body.last; ++i) {
    if (v.tl.tokens[i].kind != token_kind::identifier || v.tok(i) != d.name) continue;
    const long prev = v.tl.prev_code(i);
    const uint32_t next = v.tl.next_code(i);
    const std::string_view pv = prev >= 0 ? v.tok(prev) : "";
    if (pv == "." || pv == "->") continue;  // someone else's member
    if (v.tok(next) == "[") {               // xr[I] or xr[I] = V;
      const uint32_t close = v.tl.tokens[next].match;
      const std::string idx = text({next + 1, close});
      const uint32_t after = v.tl.next_code(close);
      if (v.tok(after) == "=") {
        uint32_t semi = after;
        while (semi < f.body.last &&
               !(v.tok(semi) == ";" && v.tl.tokens[semi].depth == v.tl.tokens[i].depth))
          ++semi;
        if (pv != ";" && pv != "{" && pv != "}" && pv != ")" && pv != "else") return std::nullopt;
        out.push_back(
            {v.tl.tokens[i].begin, v.tl.tokens[semi].end,
             scalar_store(t, d.name, idx,
                          text({static_cast<uint32_t>(v.tl.next_code(after)), semi}), "")});
        i = semi;
        continue;
      }
      if (v.tok(after).ends_with("=") && v.tok(after) != "==") return std::nullopt;
      out.push_back(
          {v.tl.tokens[i].begin, v.tl.tokens[close].end, scalar_load(t, d.name, idx, "")});
      i = close;
      continue;
    }
    // LD(xr + I) / ST(xr + I, V);
    const int32_t ci =
        function_at(v.st, i) >= 0 ? call_at(v, prev >= 1 ? v.tl.tokens[prev - 1].begin : 0) : -1;
    if (ci < 0 || v.tok(prev) != "(" || v.tok(next) != "+") return std::nullopt;
    const call& c = v.st.calls[ci];
    const bool load = kLoads.count(c.name) && c.arguments.size() == 1;
    const bool store = kStores.count(c.name) && c.arguments.size() == 2;
    if ((!load && !store) || c.arguments[0].first != i) return std::nullopt;
    const token_span idx_span{static_cast<uint32_t>(v.tl.next_code(next)), c.arguments[0].last};
    if (low(idx_span)) return std::nullopt;
    const std::string idx = text(idx_span);
    if (load) {
      out.push_back({v.tl.tokens[c.whole.first].begin, v.tl.tokens[c.whole.last - 1].end,
                     scalar_load(t, d.name, idx, c.name)});
      i = c.whole.last - 1;
      continue;
    }
    const uint32_t semi = v.tl.next_code(c.whole.last - 1);
    const long before = v.tl.prev_code(c.whole.first);
    const std::string_view bv = before >= 0 ? v.tok(before) : "";
    if (v.tok(semi) != ";" || (bv != ";" && bv != "{" && bv != "}" && bv != ")" && bv != "else"))
      return std::nullopt;
    out.push_back({v.tl.tokens[c.whole.first].begin, v.tl.tokens[semi].end,
                   scalar_store(t, d.name, idx, text(c.arguments[1]), c.name)});
    i = semi;
  }
  if (out.empty()) return std::nullopt;
  return out;
}

// A backward site: `[const] VT* p = reinterpret_cast<[const] VT*>(E);` with canonical uses.
struct vsite {
  decl d;
  const vtype* t;
  token_span cast_arg;
  std::vector<use> uses;
};

std::vector<vsite> backward_sites(const source_view& v, const function& f) {
  std::vector<vsite> out;
  for (const decl& d : pointer_decls(v, f)) {
    const vtype* t = vtype_of(d.type);
    if (!t || v.tok(d.init.first) != "reinterpret_cast") continue;
    const uint32_t lt = v.tl.next_code(d.init.first);
    uint32_t k = lt;
    while (k < d.init.last && v.tok(k) != "(") ++k;
    if (k >= d.init.last || static_cast<uint32_t>(v.tl.tokens[k].match) + 1 != d.init.last)
      continue;
    if (words(v, {lt, k}) !=
        std::string("< ") + (d.is_const ? "const " : "") + std::string(t->name) + " * > ")
      continue;
    const token_span arg{k + 1, d.init.last - 1};
    // The scalar pointer's element type is the vector's component: a parameter's declared type.
    bool typed = false;
    for (const param& p : f.params)
      if (p.name == v.tok(arg.first) && p.pointer && names_component(p.type, t->component))
        typed = true;
    if (!typed) continue;
    auto uses = vector_uses(v, f, d, *t);
    if (uses) out.push_back({d, t, arg, *uses});
  }
  return out;
}

}  // namespace

class vector_remove : public basic_rule {
 public:
  vector_remove()
      : basic_rule(
            {"vector_access.remove",
             "vector_access",
             rule_direction::backward,
             "rewrite a local vector pointer (float4, float2, int4, int2, uint4, uint2, "
             "double2, __half2/half2, __nv_bfloat162/nv_bfloat162) made by reinterpret_cast of "
             "a scalar parameter as the scalar pointer, each access as N scalar accesses (param "
             "pointer=)",
             "CUDA; `[const] VT* p = reinterpret_cast<[const] VT*>(x …);` in a function "
             "body, x a pointer parameter of VT's component type as spelled (`__half` for "
             "`__half2`, `half` for `half2`), every later use of p `p[i]`, `p[i] = v;`, "
             "`LD(p + i)` or `ST(p + i, v);`",
             {}}) {}

  std::vector<rule_site> sites(const kernel_bundle& b) const override {
    if (!is_cuda(b)) return {};
    return file_sites(b, [&](const source_view& v, std::vector<rule_site>& out) {
      for (const function& fn : v.st.functions)
        for (const vsite& s : backward_sites(v, fn)) {
          rule_site r = site(v, fn.anchor, fn.name, worst_branch(v.tl, s.d.whole),
                             std::string(s.t->name) + " pointer " + s.d.name + " in " + fn.name +
                                 " (" + std::to_string(s.uses.size()) + " uses)");
          r.params["pointer"] = s.d.name;
          out.push_back(std::move(r));
        }
    });
  }

  result<rule_result> apply(const kernel_bundle& b, const rule_invocation& inv) const override {
    auto tg = open_target(b, inv, anchor_kind::function, "is not a CUDA function",
                          [&](const source_view&, const anchor_target&) { return is_cuda(b); });
    if (!tg) return tl::unexpected(tg.error());
    const auto& v = tg->v;
    const function& fn = v->st.functions[tg->t.index];
    const std::string p = inv.params.count("pointer") ? inv.params.at("pointer") : "";
    for (const vsite& s : backward_sites(*v, fn)) {
      if (s.d.name != p) continue;
      change c(b);
      c.replace(*v, v->tl.tokens[s.d.whole.first].begin, v->tl.tokens[s.d.whole.last - 1].end,
                std::string(s.d.is_const ? "const " : "") + std::string(s.t->component) + "* " +
                    s.d.name + " = " + std::string(v->bytes(s.cast_arg)) + ";");
      for (const use& u : s.uses) c.replace(*v, u.from, u.to, u.scalar);
      rule_result r = start(inv, fn.name);
      r.note = "made " + p + " a scalar pointer; " + std::to_string(s.uses.size()) +
               " vector access(es) rewritten as " + std::to_string(s.t->lanes) + " scalar ones";
      r.assumed = {};
      r.inverse = inverse_of(inv, "vector_access.add", inv.anchor,
                             {{"pointer", p}, {"type", std::string(s.t->name)}});
      return c.finish(std::move(r));
    }
    return fail(errc::invalid_argument, "pointer='" + p +
                                            "' is not a canonical vector pointer of " + fn.name +
                                            " (see vector_access.remove's preconditions)");
  }
};

std::vector<const rule*> rules() {
  static const vector_remove remove;
  return {&remove, vector_add_rule()};
}

}  // namespace lathe::agent::rules::detail::vec

namespace lathe::agent::rules::detail {
std::vector<const rule*> vector_rules() {
  return vec::rules();
}
}  // namespace lathe::agent::rules::detail
