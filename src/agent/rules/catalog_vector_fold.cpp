// vector_access.add (CUDA): the exact inverse of vector_access.remove (catalog_vector.cpp). A
// scalar pointer declared `[const] C* p = x …;` all of whose later uses are the canonical scalar
// groups backward writes is folded back into vector accesses; each group is checked by
// regenerating it from the vector form and comparing tokens, so nothing but that text is folded.
// Alignment of p to the vector's size is assumed (the gate checks it by running the kernel).
#include "agent/rules/catalog_vector.h"

namespace lathe::agent::rules::detail::vec {

namespace {

class vector_add : public basic_rule {
 public:
  vector_add()
      : basic_rule({"vector_access.add",
                    "vector_access",
                    rule_direction::forward,
                    "fold the canonical scalar groups of one pointer (make_float4(p[4 * i], "
                    "p[4 * i + 1], …), { const float4 lathe_v = v; p[4 * i] = lathe_v.x; … }, "
                    "and the LD/ST forms; make_half2(…) for half2…) into vector accesses "
                    "(params pointer=, type=float4, half2, __nv_bfloat162…)",
                    "CUDA; `[const] C* p = x …;` with C the vector's component, x a pointer "
                    "parameter, and every later use of p inside one canonical group",
                    {"the pointer is aligned to the vector's size (16 bytes for float4) at every "
                     "access (assumed; checked by the gate)"}}) {}

  // Only canonical groups qualify (what vector_access.remove writes); a pointer whose uses are
  // all such groups is a site. Arbitrary scalar loops are not offered.
  std::vector<rule_site> sites(const kernel_bundle& b) const override;

  result<rule_result> apply(const kernel_bundle& b, const rule_invocation& inv) const override;
};

std::string normalized(std::string_view text) {
  const token_list tl = tokenize(text);
  std::string out;
  for (const token& t : tl.tokens)
    if (t.kind != token_kind::comment) out += std::string(tl.text(t)) + " ";
  return out;
}

// The index I of a lane-0 subscript `N * I` / `N * (I)` (tokens [first, last)); "" if not so.
std::string lane0_index(const source_view& v, token_span s, const vtype& t) {
  if (s.last < s.first + 3 || v.tok(s.first) != std::to_string(t.lanes) ||
      v.tok(s.first + 1) != "*")
    return "";
  const uint32_t i = s.first + 2;
  if (v.tok(i) == "(" && v.tl.tokens[i].match == static_cast<int32_t>(s.last - 1))
    return std::string(v.bytes({i + 1, s.last - 1}));
  return s.last == i + 1 ? std::string(v.tok(i)) : "";
}

// The canonical group around the use of p at token i: its span and its vector text.
std::optional<use> fold_group(const source_view& v, uint32_t i, const std::string& p,
                              const vtype& t) {
  // Loads: make_VT(p[N * I], …) or make_VT(LD(p + N * I), …).
  for (const call& c : v.st.calls) {
    if (c.name != t.make || !c.parens.contains(i) || c.arguments.empty()) continue;
    const token_span a0 = c.arguments[0];
    std::string idx, ld;
    if (v.tok(a0.first) == p && v.tok(a0.first + 1) == "[")
      idx = lane0_index(v, {a0.first + 2, a0.last - 1}, t);
    else if (kLoads.count(v.tok(a0.first)) && v.tok(a0.first + 1) == "(" &&
             v.tok(a0.first + 2) == p && v.tok(a0.first + 3) == "+")
      ld = std::string(v.tok(a0.first)), idx = lane0_index(v, {a0.first + 4, a0.last - 1}, t);
    if (idx.empty() || normalized(scalar_load(t, p, idx, ld)) != normalized(v.bytes(c.whole)))
      return std::nullopt;
    return use{v.tl.tokens[c.whole.first].begin, v.tl.tokens[c.whole.last - 1].end,
               ld.empty() ? p + "[" + idx + "]" : ld + "(" + p + " + " + idx + ")"};
  }
  // Stores: { const VT lathe_v = V; p[N * I] = lathe_v.x; … } or the ST form.
  for (long k = v.tl.prev_code(i); k >= 0; k = v.tl.prev_code(k)) {
    if (v.tok(k) != "{") continue;
    const auto& open = v.tl.tokens[k];
    if (open.match < 0 || static_cast<uint32_t>(open.match) < i) continue;
    const uint32_t close = open.match;
    uint32_t eq = k + 1;
    if (normalized(v.bytes({static_cast<uint32_t>(k + 1), static_cast<uint32_t>(k + 4)})) !=
        normalized("const " + std::string(t.name) + " lathe_v"))
      return std::nullopt;
    eq = k + 4;
    uint32_t semi = eq;
    while (semi < close && !(v.tok(semi) == ";" && v.tl.tokens[semi].depth == open.depth + 1))
      ++semi;
    const std::string value(v.bytes({eq + 1, semi}));
    const uint32_t s0 = semi + 1;
    std::string idx, st;
    if (v.tok(s0) == p && v.tok(s0 + 1) == "[") {
      const uint32_t rb = v.tl.tokens[s0 + 1].match;
      idx = lane0_index(v, {s0 + 2, rb}, t);
    } else if (kStores.count(v.tok(s0)) && v.tok(s0 + 2) == p && v.tok(s0 + 3) == "+") {
      st = std::string(v.tok(s0));
      uint32_t comma = s0 + 4;
      while (comma < close && !(v.tok(comma) == "," && v.tl.tokens[comma].depth == open.depth + 2))
        ++comma;
      idx = lane0_index(v, {s0 + 4, comma}, t);
    }
    if (idx.empty() || normalized(scalar_store(t, p, idx, value, st)) !=
                           normalized(v.bytes({static_cast<uint32_t>(k), close + 1})))
      return std::nullopt;
    return use{open.begin, v.tl.tokens[close].end,
               st.empty() ? p + "[" + idx + "] = " + value + ";"
                          : st + "(" + p + " + " + idx + ", " + value + ");"};
  }
  return std::nullopt;
}

}  // namespace

result<rule_result> vector_add::apply(const kernel_bundle& b, const rule_invocation& inv) const {
  auto tg = open_anchor(b, inv);
  if (!tg) return tl::unexpected(tg.error());
  const auto& v = tg->v;
  const anchor_target& t = tg->t;
  const vtype* vt = vtype_of(inv.params.count("type") ? inv.params.at("type") : "float4");
  const std::string p = inv.params.count("pointer") ? inv.params.at("pointer") : "";
  if (t.kind != anchor_kind::function || !is_cuda(b) || !vt)
    return fail(errc::invalid_argument, "vector_access.add needs a CUDA function and type=float4…");
  const function& fn = v->st.functions[t.index];
  for (const decl& d : pointer_decls(*v, fn)) {
    if (d.name != p || d.type != vt->component) continue;
    change c(b);
    c.replace(*v, v->tl.tokens[d.whole.first].begin, v->tl.tokens[d.whole.last - 1].end,
              std::string(d.is_const ? "const " : "") + std::string(vt->name) + "* " + d.name +
                  " = reinterpret_cast<" + (d.is_const ? "const " : "") + std::string(vt->name) +
                  "*>(" + std::string(v->bytes(d.init)) + ");");
    int groups = 0;
    uint32_t done = 0;
    for (uint32_t i = d.whole.last; i < fn.body.last; ++i) {
      if (v->tl.tokens[i].kind != token_kind::identifier || v->tok(i) != p ||
          v->tl.tokens[i].begin < done)
        continue;
      auto g = fold_group(*v, i, p, *vt);
      if (!g)
        return fail(errc::invalid_argument, "the use of " + p + " on line " +
                                                std::to_string(v->tl.tokens[i].line) +
                                                " is not a canonical scalar group");
      c.replace(*v, g->from, g->to, g->scalar);
      done = g->to;
      ++groups;
    }
    if (groups == 0) return fail(errc::invalid_argument, "no use of " + p + " to fold");
    rule_result r = start(inv, fn.name);
    r.note = "folded " + std::to_string(groups) + " scalar group(s) of " + p + " into " +
             std::string(vt->name) + " accesses";
    r.inverse = inverse_of(inv, "vector_access.remove", inv.anchor, {{"pointer", p}});
    return c.finish(std::move(r));
  }
  return fail(errc::invalid_argument, "no scalar pointer '" + p + "' of " +
                                          std::string(vt->component) + " declared in " + fn.name);
}

std::vector<rule_site> vector_add::sites(const kernel_bundle& b) const {
  if (!is_cuda(b)) return {};
  return file_sites(b, [&](const source_view& v, std::vector<rule_site>& out) {
    for (const function& fn : v.st.functions)
      for (const decl& d : pointer_decls(v, fn))
        for (const vtype& t : kTypes) {
          if (d.type != t.component) continue;
          rule_invocation inv{
              std::string(name()), fn.anchor, {{"pointer", d.name}, {"type", std::string(t.name)}}};
          if (v.file != b.manifest.entry) inv.params["file"] = v.file;
          if (!apply(b, inv)) continue;
          rule_site s =
              site(v, fn.anchor, fn.name, worst_branch(v.tl, d.whole),
                   "scalar groups of " + d.name + " in " + fn.name + " as " + std::string(t.name));
          s.params = inv.params;
          out.push_back(std::move(s));
        }
  });
}

const rule* vector_add_rule() {
  static const vector_add add;
  return &add;
}

}  // namespace lathe::agent::rules::detail::vec
