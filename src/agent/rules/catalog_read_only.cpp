// read_only_load.remove / read_only_load.add (CUDA): `__ldg(&p[i])` ⇄ `p[i]`. The forward form
// takes only pointers whose pointee is const in the tokens (a parameter, or a local declared
// `const T* p = …`), so nothing writes through that name; whether another pointer writes the same
// memory during the kernel is assumed (the read-only path is not coherent with such writes).
#include <algorithm>

#include "agent/rules/catalog_detail.h"

namespace lathe::agent::rules::detail {

namespace {

// Element types with an __ldg overload (CUDA headers: sm_32_intrinsics.h, cuda_fp16/bf16.h).
const std::set<std::string_view> kLdgTypes = {
    "char",           "short",   "int",       "long",       "float",    "double",
    "unsigned",       "signed",  "char2",     "char4",      "uchar2",   "uchar4",
    "short2",         "short4",  "ushort2",   "ushort4",    "int2",     "int4",
    "uint2",          "uint4",   "longlong2", "ulonglong2", "float2",   "float4",
    "double2",        "__half",  "__half2",   "half",       "half2",    "__nv_bfloat16",
    "__nv_bfloat162", "int8_t",  "uint8_t",   "int16_t",    "uint16_t", "int32_t",
    "uint32_t",       "int64_t", "uint64_t"};

const std::set<std::string_view> kLowOps = {"?",  ":",  "<",  ">", "<=", ">=", "==", "!=", "&&",
                                            "||", "<<", ">>", "&", "|",  "^",  "=",  ",",  "<=>"};

// Whether the words of a declaration's type (without `const`, `*`, restrict) are one __ldg type.
bool ldg_type(const std::vector<std::string_view>& words) {
  std::vector<std::string_view> w;
  for (auto x : words)
    if (x != "const" && x != "*" && x != "__restrict__" && x != "__restrict" && x != "restrict")
      w.push_back(x);
  return !w.empty() && std::all_of(w.begin(), w.end(), [](auto x) { return kLdgTypes.count(x); });
}

// The const pointers of a device function: parameters and `const T* p = …` locals.
std::vector<std::string> const_pointers(const source_view& v, const function& f) {
  std::vector<std::string> out;
  for (const param& p : f.params) {
    if (!p.pointer || !p.is_const || p.name.empty()) continue;
    std::vector<std::string_view> w;
    bool plain = true;
    for (uint32_t i = p.tokens.first; i < p.tokens.last; ++i) {
      if (v.tok(i) == p.name) break;
      plain = plain && v.tok(i) != "&" && v.tok(i) != "[" && v.tok(i) != "(";
      w.push_back(v.tok(i));
    }
    if (plain && ldg_type(w)) out.push_back(p.name);
  }
  const auto& tk = v.tl.tokens;
  for (uint32_t i = f.body.first; i + 3 < f.body.last; ++i) {
    if (v.tok(i) != "const" || (i > 0 && (v.tok(i - 1) == "(" || v.tok(i - 1) == ","))) continue;
    std::vector<std::string_view> w;
    uint32_t k = i;
    while (k < f.body.last && (tk[k].kind == token_kind::identifier || v.tok(k) == "*") &&
           v.tok(v.tl.next_code(k)) != "=")
      w.push_back(v.tok(k++));
    if (k < f.body.last && tk[k].kind == token_kind::identifier &&
        v.tok(v.tl.next_code(k)) == "=" && std::count(w.begin(), w.end(), "*") == 1 &&
        w.back() != "const" && ldg_type(w))
      out.push_back(std::string(v.tok(k)));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Reads `p[…]` in the function body that are not already inside __ldg(…), not addressed (`&p[i]`)
// and not written: the `p` token of each.
std::vector<uint32_t> plain_reads(const source_view& v, const function& f, const std::string& p) {
  std::vector<uint32_t> out;
  for (uint32_t i = f.body.first; i < f.body.last; ++i) {
    if (v.tl.tokens[i].kind != token_kind::identifier || v.tok(i) != p) continue;
    const size_t open = v.tl.next_code(i);
    if (open >= f.body.last || v.tok(open) != "[" || v.tl.tokens[open].match < 0) continue;
    const long before = v.tl.prev_code(i);
    if (before >= 0 && (v.tok(before) == "&" || v.tok(before) == "." || v.tok(before) == "->" ||
                        v.tok(before) == "::"))
      continue;
    const std::string_view after = v.tok(v.tl.next_code(v.tl.tokens[open].match));
    const bool compound =
        after.ends_with("=") && after != "==" && after != "<=" && after != ">=" && after != "!=";
    if (after == "++" || after == "--" || compound) continue;
    const bool in_ldg = std::any_of(v.st.calls.begin(), v.st.calls.end(), [&](const call& c) {
      return c.name == "__ldg" && c.parens.contains(i);
    });
    if (!in_ldg) out.push_back(i);
  }
  return out;
}

class ldg_remove : public basic_rule {
 public:
  ldg_remove()
      : basic_rule({"read_only_load.remove",
                    "read_only_load",
                    rule_direction::backward,
                    "replace one __ldg(&p[i]) by p[i] (__ldg(p + i) by p[i], else __ldg(e) by "
                    "*(e))",
                    "a call of __ldg with one argument in a function body",
                    {}}) {}

  std::vector<rule_site> sites(const kernel_bundle& b) const override {
    if (!is_cuda(b)) return {};
    return call_sites(b, [](const source_view&, const call& c) { return one_arg_ldg(c); });
  }

  result<rule_result> apply(const kernel_bundle& b, const rule_invocation& inv) const override {
    auto tg = open_target(b, inv, anchor_kind::call, "is not a one-argument __ldg call",
                          [](const source_view& v, const anchor_target& t) {
                            return one_arg_ldg(v.st.calls[t.index]);
                          });
    if (!tg) return tl::unexpected(tg.error());
    const auto& v = tg->v;
    const call& c = v->st.calls[tg->t.index];
    const token_span a = c.arguments[0];
    const int32_t depth = v->tl.tokens[a.first].depth;
    auto top_ops = [&](uint32_t from, const std::set<std::string_view>& ops) {
      for (uint32_t i = from; i < a.last; ++i)
        if (v->tl.tokens[i].depth == depth && v->tl.tokens[i].kind == token_kind::punct &&
            ops.count(v->tok(i)))
          return true;
      return false;
    };
    std::string text, pointer;
    const std::string arg(v->bytes(a));
    const uint32_t second = v->tl.next_code(a.first);
    if (v->tok(a.first) == "&" &&
        !top_ops(second, {"+",  "-",  "*",  "/",  "%",  "?", ":", "<", ">", "&&",
                          "||", "==", "!=", "<<", ">>", "&", "|", "^", "=", ","})) {
      text = std::string(v->bytes({second, a.last}));
      if (v->tl.tokens[second].kind == token_kind::identifier &&
          v->tok(v->tl.next_code(second)) == "[")
        pointer = std::string(v->tok(second));
    } else if (v->tl.tokens[a.first].kind == token_kind::identifier && second < a.last &&
               v->tok(second) == "+" && !top_ops(second + 1, kLowOps)) {
      pointer = std::string(v->tok(a.first));
      text = pointer + "[" +
             std::string(v->bytes({static_cast<uint32_t>(v->tl.next_code(second)), a.last})) + "]";
    } else {
      text = "*(" + arg + ")";
    }
    change ch(b);
    ch.replace(*v, v->tl.tokens[c.whole.first].begin, v->tl.tokens[c.whole.last - 1].end, text);
    const function& fn = v->st.functions[c.function];
    rule_result r = start(inv, fn.name);
    r.note = "replaced " + std::string(v->bytes(c.whole)) + " by " + text;
    if (!pointer.empty())
      r.inverse = inverse_of(inv, "read_only_load.add", fn.anchor, {{"pointer", pointer}});
    return ch.finish(std::move(r));
  }

 private:
  static bool one_arg_ldg(const call& c) { return c.name == "__ldg" && c.arguments.size() == 1; }
};

class ldg_add : public basic_rule {
 public:
  ldg_add()
      : basic_rule({"read_only_load.add",
                    "read_only_load",
                    rule_direction::forward,
                    "load every plain read p[i] of one const pointer in a device function "
                    "through __ldg(&p[i]) (param pointer=p)",
                    "CUDA; p is a parameter or a local `const T* p = …` of a __global__/__device__ "
                    "function, T a type __ldg takes (float, float4, int4, __half2, …); reads not "
                    "already in __ldg, not addressed, not written",
                    {"the memory p reaches is not written by any thread while the kernel runs (the "
                     "read-only path is not coherent with such writes; assumed; checked by the "
                     "gate)"}}) {}

  std::vector<rule_site> sites(const kernel_bundle& b) const override {
    if (!is_cuda(b)) return {};
    return file_sites(b, [&](const source_view& v, std::vector<rule_site>& out) {
      for (const function& fn : v.st.functions) {
        if (!device_code(fn)) continue;
        for (const std::string& p : const_pointers(v, fn)) {
          const auto reads = plain_reads(v, fn, p);
          if (reads.empty()) continue;
          rule_site s =
              site(v, fn.anchor, fn.name, worst_branch(v.tl, {reads[0], reads[0] + 1}),
                   std::to_string(reads.size()) + " read(s) of const " + p + " in " + fn.name);
          s.params["pointer"] = p;
          out.push_back(std::move(s));
        }
      }
    });
  }

  result<rule_result> apply(const kernel_bundle& b, const rule_invocation& inv) const override {
    if (!is_cuda(b)) return fail(errc::invalid_argument, "__ldg is CUDA only");
    auto tg = open_target(b, inv, anchor_kind::function, "is not a device function",
                          [](const source_view& v, const anchor_target& t) {
                            return device_code(v.st.functions[t.index]);
                          });
    if (!tg) return tl::unexpected(tg.error());
    const auto& v = tg->v;
    const function& fn = v->st.functions[tg->t.index];
    auto pp = inv.params.find("pointer");
    const std::string p = pp == inv.params.end() ? "" : pp->second;
    const auto ptrs = const_pointers(*v, fn);
    if (std::find(ptrs.begin(), ptrs.end(), p) == ptrs.end())
      return fail(errc::invalid_argument,
                  "pointer='" + p + "' is not a const pointer of " + fn.name + " that __ldg takes");
    const auto reads = plain_reads(*v, fn, p);
    if (reads.empty())
      return fail(errc::invalid_argument, "no plain read of " + p + " in " + fn.name);
    change c(b);
    for (uint32_t i : reads) {
      const uint32_t close = v->tl.tokens[v->tl.next_code(i)].match;
      if (v->tl.tokens[i].where == branch::inactive) continue;
      c.replace(*v, v->tl.tokens[i].begin, v->tl.tokens[close].end,
                "__ldg(&" + std::string(v->bytes({i, close + 1})) + ")");
    }
    rule_result r = start(inv, fn.name);
    r.note = "loaded " + std::to_string(reads.size()) + " read(s) of " + p + " in " + fn.name +
             " through __ldg";
    return c.finish(std::move(r));
  }
};

}  // namespace

std::vector<const rule*> read_only_rules() {
  static const ldg_remove remove;
  static const ldg_add add;
  return {&remove, &add};
}

}  // namespace lathe::agent::rules::detail
