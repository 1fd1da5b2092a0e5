// simd_intrinsics.remove / simd_intrinsics.add (C++): explicit x86 vectorization through
// <immintrin.h> (AVX, AVX2, FMA and the SSE forms reductions use) taken out of a kernel and put
// back.
//
// In intrinsic code the vector instructions (`simd`) and the contiguous vector loads and stores
// (`vector_access`) are one mechanism: the same `__m256` values flow from `_mm256_loadu_ps`
// through `_mm256_fmadd_ps` into `_mm256_storeu_ps`, often across helper functions, and neither
// can go without the other. So one step removes both, over the whole bundle: every intrinsic,
// vector type and constant is renamed to lathe's scalar stand-in (`_mm256_add_ps` →
// `lathe_mm256_add_ps`, catalog_intrinsics.h), the `#include <immintrin.h>` becomes an include of
// `lathe_scalar_m256.inc`, and that file, written for exactly the names used, is added. The
// result computes the same bits lane by lane (the stand-ins reproduce each instruction).
//
// And `-fno-tree-vectorize` joins the flags. Without it g++ -O3 turns the stand-ins' 8-lane
// loops straight back into ymm instructions (SLP), so nothing would have been removed; with the
// vectorizer off only in the stand-in (its optimize pragma) they cannot be inlined into the
// kernel's functions, and a call per vector operation made the softmax and conv2d experts 60x
// slower — far slower than their naive kernels, an effect no scalar rewrite would show. With the
// flag the stand-ins inline into plain scalar code and the artifact holds no packed arithmetic
// at all, which is what the artifact-first detector (detect.h) must see for `simd` to be gone:
// the compiler's own vectorization of the kernel's loops is part of that feature too. The
// stand-in keeps its pragma, so it stays scalar even if the flag is taken away later.
//
// Forward is the exact inverse (flag included, param flag=) and applies only where that stand-in
// is present and unchanged ("where the source lineage showed the mechanism"): it never
// vectorizes scalar code from scratch.
//
// Anchors: `include:HEADER`, the catalog's third extension of the front end's grammar (beside
// `flags:` and `isa:`): the include that brings the mechanism in (`include:immintrin.h`,
// `include:lathe_scalar_m256.inc`; param file= when not in the entry file). Locus `<intrinsics>`:
// the step touches every function that uses the vectors.
#include "agent/rules/catalog_intrinsics.h"

#include <functional>

#include "agent/edit.h"

namespace lathe::agent::rules::detail::intrin {

namespace {

constexpr std::string_view kRemoveName = "simd_intrinsics.remove";
constexpr std::string_view kAddName = "simd_intrinsics.add";
constexpr std::string_view kLocus = "<intrinsics>";
const std::string kDefaultInclude = "#include <immintrin.h>";
const std::string kNoVectorize = "-fno-tree-vectorize";

// Flags that ask for the vectorizer explicitly: -fno-tree-vectorize would not override them.
bool vectorizer_flag(const std::string& f) {
  return f == "-ftree-vectorize" || f == "-ftree-loop-vectorize" || f == "-ftree-slp-vectorize";
}

// One identifier of compiled code: its bytes in its file, its name and line.
struct ident_use {
  const source_view* v = nullptr;
  uint32_t begin = 0, end = 0, line = 0;
  std::string name;
};

// Every identifier of a file's active and conditional code, and of its `#define` bodies: the
// front end keeps a directive as one token, so a body is tokenized on its own and its offsets
// mapped back (gemm's micro-kernel issues its FMAs from a macro). Comments, strings and inactive
// branches are never visited.
void identifiers(const source_view& v, const std::function<void(const ident_use&)>& visit) {
  for (size_t i = 0; i < v.tl.tokens.size(); ++i) {
    const token& t = v.tl.tokens[i];
    if (t.where == branch::inactive) continue;
    if (t.kind == token_kind::identifier) {
      visit({&v, t.begin, t.end, t.line, std::string(v.tok(i))});
    } else if (t.kind == token_kind::preprocessor && directive_name(v.tok(i)) == "define") {
      const std::string_view text = v.tok(i);
      const uint32_t after = static_cast<uint32_t>(text.find("define") + 6);
      const token_list body = tokenize(text.substr(after));
      for (const token& d : body.tokens)
        if (d.kind == token_kind::identifier)
          visit({&v, t.begin + after + d.begin, t.begin + after + d.end, t.line + d.line - 1,
                 std::string(body.text(d))});
    }
  }
}

// The header an `#include` names ("immintrin.h"), with whether it was written in quotes; empty
// for any other token.
std::pair<std::string, bool> included(const source_view& v, size_t i) {
  const token& t = v.tl.tokens[i];
  if (t.kind != token_kind::preprocessor || t.where == branch::inactive ||
      directive_name(v.tok(i)) != "include")
    return {};
  const std::string body = directive_body(v.tok(i));
  const size_t open = body.find_first_of("<\"");
  if (open == std::string::npos) return {};
  const size_t close = body.find(body[open] == '<' ? '>' : '"', open + 1);
  if (close == std::string::npos) return {};
  return {body.substr(open + 1, close - open - 1), body[open] == '"'};
}

bool intrinsics_header(const std::string& h) {
  return !h.empty() && h.ends_with("intrin.h");
}

// What detect_source counts as vector_access (its test, kept identical so that `removes` says
// what the detector will see): a contiguous vector load or store, not a broadcast or a one-lane
// access.
bool contiguous_access(std::string_view n) {
  return (n.find("load") != std::string_view::npos || n.find("store") != std::string_view::npos) &&
         n.find("broadcast") == std::string_view::npos && !n.ends_with("_ss") &&
         !n.ends_with("_sd") && n.find("load1") == std::string_view::npos;
}

std::string dir_of(const std::string& file) {
  const size_t slash = file.rfind('/');
  return slash == std::string::npos ? "" : file.substr(0, slash + 1);
}

// What both rules read from a bundle: the code files' identifiers to rename, the one include
// that carries the mechanism, and why the bundle is no site (empty when it is one).
struct plan {
  std::vector<std::unique_ptr<source_view>> views;
  std::vector<ident_use> uses;
  std::set<std::string> names;  // the intrinsics involved, by their <immintrin.h> names
  const source_view* inc_view = nullptr;
  uint32_t inc_token = 0;
  std::string header;   // what that include names
  std::string shim;     // the stand-in's path in the bundle
  std::string refusal;  // not a site, and why
  bool empty = false;   // no intrinsics (or no stand-in) at all: not even worth a refusal
};

std::string where(const ident_use& u) {
  return u.v->file + ":" + std::to_string(u.line);
}

// The include lines of `p.views` that `want` accepts; exactly one is the site.
void find_include(plan& p, const std::function<bool(const std::string&, bool)>& want,
                  const std::string& what) {
  int n = 0;
  std::string seen;
  for (const auto& v : p.views)
    for (size_t i = 0; i < v->tl.tokens.size(); ++i) {
      auto [h, quoted] = included(*v, i);
      if (!want(h, quoted)) continue;
      if (n++ == 0) p.inc_view = v.get(), p.inc_token = static_cast<uint32_t>(i), p.header = h;
      seen += std::string(seen.empty() ? "" : ", ") + v->file + ":" +
              std::to_string(v->tl.tokens[i].line);
    }
  if (n == 0 && p.refusal.empty()) p.refusal = "no " + what + " is included";
  if (n > 1 && p.refusal.empty())
    p.refusal = what + " is included " + std::to_string(n) + " times (" + seen +
                "): the rule rewrites one include";
  if (p.inc_view) p.shim = dir_of(p.inc_view->file) + std::string(kShimFile);
}

plan backward_plan(const kernel_bundle& b) {
  plan p;
  if (is_cuda(b)) {
    p.empty = true;
    return p;
  }
  std::vector<std::string> unknown;
  for (const std::string& f : code_files(b)) {
    p.views.push_back(view_of(b, f));
    identifiers(*p.views.back(), [&](const ident_use& u) {
      if (u.name == "asm" || u.name == "__asm__" || u.name == "__asm") {
        if (p.refusal.empty())
          p.refusal = where(u) +
                      ": inline assembly, whose vector instructions the rule cannot "
                      "rewrite";
      } else if (!intrinsic_of(u.name).empty() || u.name.starts_with("lathe_shim_")) {
        if (p.refusal.empty())
          p.refusal = where(u) + ": " + u.name + " is already a name of lathe's stand-in";
      } else if (intrinsic_family(u.name)) {
        if (!shim_entry_of(u.name)) {
          if (unknown.size() < 4) unknown.push_back(where(u) + ": " + u.name);
          return;
        }
        p.uses.push_back(u);
        p.names.insert(u.name);
      }
    });
  }
  if (p.uses.empty() && unknown.empty()) {
    p.empty = true;
    return p;
  }
  if (!unknown.empty() && p.refusal.empty()) {
    p.refusal = "lathe's scalar stand-in has no form of ";
    for (size_t i = 0; i < unknown.size(); ++i) p.refusal += (i ? ", " : "") + unknown[i];
    p.refusal += " (catalog_intrinsics_shim.cpp lists what it emulates)";
  }
  find_include(
      p, [](const std::string& h, bool) { return intrinsics_header(h); },
      "an intrinsics header (<immintrin.h>, <x86intrin.h>…)");
  if (!p.shim.empty() && b.sources.count(p.shim) && p.refusal.empty())
    p.refusal = "the bundle already has a file " + p.shim;
  for (const std::string& f : b.manifest.flags)
    if (vectorizer_flag(f) && p.refusal.empty())
      p.refusal = "the manifest asks for the vectorizer (" + f +
                  "), which -fno-tree-vectorize would not switch off";
  return p;
}

plan forward_plan(const kernel_bundle& b) {
  plan p;
  if (is_cuda(b)) {
    p.empty = true;
    return p;
  }
  for (const std::string& f : code_files(b)) {
    p.views.push_back(view_of(b, f));
    identifiers(*p.views.back(), [&](const ident_use& u) {
      const std::string n = intrinsic_of(u.name);
      if (n.empty()) return;
      p.uses.push_back(u);
      p.names.insert(n);
    });
  }
  find_include(
      p, [](const std::string& h, bool quoted) { return quoted && h == kShimFile; },
      "lathe's stand-in " + std::string(kShimFile));
  if (p.uses.empty() || !p.inc_view) {
    p.empty = true;
    return p;
  }
  auto text = b.sources.find(p.shim);
  if (text == b.sources.end()) {
    p.refusal = "the bundle has no " + p.shim + " beside " + p.inc_view->file;
    return p;
  }
  const auto entries = shim_header_entries(text->second);
  if (!entries || shim_header(*entries) != text->second) {
    p.refusal = p.shim +
                " is not the text lathe wrote (edited since): the intrinsics are not "
                "put back over someone else's code";
    return p;
  }
  for (const std::string& n : p.names)
    if (!entries->count(n)) {
      p.refusal = lathe_name(n) + " is used but " + p.shim + " does not define it";
      return p;
    }
  return p;
}

// The include= parameter of the forward rule: one `#include` of an intrinsics header, exactly as
// the backward step found it (it goes back byte for byte); nothing else may ride along.
result<std::string> include_param(const rule_invocation& inv) {
  auto it = inv.params.find("include");
  if (it == inv.params.end()) return kDefaultInclude;
  const std::string& s = it->second;
  const token_list tl = tokenize(s);
  if (s.find('\n') != std::string::npos || tl.tokens.size() != 1 ||
      tl.tokens[0].kind != token_kind::preprocessor || directive_name(s) != "include")
    return fail(errc::invalid_argument, "include='" + s + "': expected one #include line");
  source_view v("include", s);
  if (!intrinsics_header(included(v, 0).first))
    return fail(errc::invalid_argument, "include='" + s + "' names no intrinsics header");
  return s;
}

bool any_access(const std::set<std::string>& names) {
  for (const std::string& n : names)
    if (contiguous_access(n)) return true;
  return false;
}

class intrinsics_rule : public basic_rule {
 public:
  using basic_rule::basic_rule;

 protected:
  bool backward() const { return direction() == rule_direction::backward; }
  plan make_plan(const kernel_bundle& b) const {
    return backward() ? backward_plan(b) : forward_plan(b);
  }
  std::string anchor_of(const plan& p) const { return "include:" + p.header; }

 public:
  std::vector<rule_site> sites(const kernel_bundle& b) const override {
    const plan p = make_plan(b);
    if (p.empty || !p.refusal.empty()) return {};
    rule_site s = site(*p.inc_view, anchor_of(p), std::string(kLocus),
                       p.inc_view->tl.tokens[p.inc_token].where,
                       std::to_string(p.uses.size()) + " uses of " +
                           std::to_string(p.names.size()) + " intrinsic names with " + p.header);
    if (p.inc_view->file != b.manifest.entry) s.params["file"] = p.inc_view->file;
    // The backward step added the flag unless the kernel had it: a site cannot tell, and offers
    // to take it away (the inverse a backward step records says exactly).
    if (!backward() && has_flag(b, kNoVectorize)) s.params["flag"] = kNoVectorize;
    return {s};
  }

  result<rule_result> apply(const kernel_bundle& b, const rule_invocation& inv) const override {
    if (!inv.anchor.starts_with("include:"))
      return fail(errc::invalid_argument,
                  std::string(name()) + " anchors at include:HEADER, not '" + inv.anchor + "'");
    const plan p = make_plan(b);
    const std::string file = target_file(b, inv);
    if (p.empty)
      return fail(errc::not_found, backward() ? "no x86 intrinsics in this kernel"
                                              : "no use of lathe's stand-in " +
                                                    std::string(kShimFile) + " in this kernel");
    if (!p.refusal.empty()) return fail(errc::invalid_argument, p.refusal);
    if (anchor_of(p) != inv.anchor || p.inc_view->file != file)
      return fail(errc::not_found, "'" + inv.anchor + "' in " + file + ": the site is " +
                                       anchor_of(p) + " in " + p.inc_view->file);
    std::string include_text = kDefaultInclude;
    const auto flag = inv.params.find("flag");
    if (!backward()) {
      auto inc = include_param(inv);
      if (!inc) return tl::unexpected(inc.error());
      include_text = *inc;
      if (flag != inv.params.end() && flag->second != kNoVectorize)
        return fail(errc::invalid_argument,
                    "flag='" + flag->second + "': the rule takes away only " + kNoVectorize);
    }
    change c(b);
    // Backward adds the flag unless it is there already; forward takes it away when told to and
    // it is there (a carrier replayed on a kernel without it has nothing to take away).
    const bool add_flag = backward() && !has_flag(b, kNoVectorize);
    const bool drop_flag = !backward() && flag != inv.params.end() && has_flag(b, kNoVectorize);
    if (add_flag) c.add_flag(kNoVectorize);
    if (drop_flag) c.remove_flag(kNoVectorize);
    for (const ident_use& u : p.uses)
      c.replace(*u.v, u.begin, u.end, backward() ? lathe_name(u.name) : intrinsic_of(u.name));
    const token& inc = p.inc_view->tl.tokens[p.inc_token];
    c.replace(*p.inc_view, inc.begin, inc.end,
              backward() ? "#include \"" + std::string(kShimFile) + "\"" : include_text);
    rule_result r = start(inv, std::string(kLocus));
    if (any_access(p.names)) (backward() ? r.removes : r.adds).push_back("vector_access");
    std::set<std::string> files;
    for (const ident_use& u : p.uses) files.insert(u.v->file);
    const std::string counts = std::to_string(p.uses.size()) + " uses of " +
                               std::to_string(p.names.size()) + " names in " +
                               std::to_string(files.size()) + " file(s)";
    std::map<std::string, std::string> inverse_params;
    if (backward()) {
      r.note = "replaced the x86 intrinsics by lathe's scalar stand-ins (" + counts + "; " +
               p.shim + " added, included instead of " + p.header + ")" +
               (add_flag ? " and switched the vectorizer off (" + kNoVectorize + ")" : "") +
               ": simd and vector_access go together";
      inverse_params["include"] = std::string(p.inc_view->tok(p.inc_token));
      if (add_flag) inverse_params["flag"] = kNoVectorize;
      r.inverse = inverse_of(inv, std::string(kAddName), "include:" + std::string(kShimFile),
                             inverse_params);
    } else {
      r.note = "put the x86 intrinsics back in place of lathe's scalar stand-ins (" + counts +
               "; " + p.shim + " deleted" + (drop_flag ? ", " + kNoVectorize + " removed" : "") +
               ")";
      source_view restored("include", include_text);
      r.inverse =
          inverse_of(inv, std::string(kRemoveName), "include:" + included(restored, 0).first);
    }
    auto done = c.finish(std::move(r));
    if (!done) return done;
    // The stand-in's file is a whole-file edit (added or deleted), which `change` does not write:
    // applied after the source pieces and appended to the edit text, so that `edits` still gives
    // exactly `kernel` (tests/rules/intrinsics_test.cpp checks it).
    edit_set extra;
    file_edit fe;
    fe.path = p.shim;
    fe.kind = backward() ? file_edit_kind::whole : file_edit_kind::remove;
    if (backward()) fe.contents = shim_header(p.names);
    extra.files.push_back(std::move(fe));
    auto applied = agent::apply(done->kernel, extra);
    if (!applied)
      return fail(errc::internal,
                  "the stand-in's file edit did not apply: " + applied.error().message);
    done->kernel = std::move(*applied);
    done->edits += render_edits(extra);
    return done;
  }
};

const char* const kRemoveDescription =
    "take explicit x86 vectorization (AVX, AVX2, FMA intrinsics and __m256 vectors) out of a C++ "
    "kernel: every intrinsic, vector type and constant becomes lathe's scalar stand-in of the "
    "same name (lathe_mm256_add_ps…, lathe_scalar_m256.inc, compiled without the vectorizer), "
    "computing the same bits lane by lane, and the vectorizer switched off (-fno-tree-vectorize: "
    "else g++ vectorizes the stand-ins again). Removes simd and vector_access in one step: in "
    "intrinsic code they are one mechanism";

const char* const kRemovePreconditions =
    "C++; one #include of an intrinsics header (<immintrin.h>, <x86intrin.h>…) in the bundle; "
    "every intrinsic-family name in compiled code and #define bodies (_mm…, __m128/__m256…, "
    "_MM_…, _CMP_…, __builtin_ia32_…) one the stand-in emulates (fp32 and int32 lanes of "
    "AVX/AVX2/FMA, the SSE forms of horizontal reductions, prefetch; not doubles, 8/16/64-bit "
    "lanes, gathers, AVX-512: the refusal names the first ones found); no inline asm; no name of "
    "the stand-in already used; no lathe_scalar_m256.inc beside the include; no flag asking for "
    "the vectorizer (-ftree-vectorize…)";

const char* const kAddDescription =
    "put explicit x86 vectorization back where simd_intrinsics.remove took it out: lathe's scalar "
    "stand-ins renamed to the intrinsics, the #include of lathe_scalar_m256.inc back to the "
    "intrinsics header (param include=, the line as it was), the stand-in's file deleted, "
    "-fno-tree-vectorize removed with param flag=. Adds simd and vector_access";

const char* const kAddPreconditions =
    "C++; one #include \"lathe_scalar_m256.inc\" and that file beside it exactly as lathe wrote "
    "it (regenerated from its entries line and compared byte for byte); every stand-in name used "
    "defined there. Scalar code is never vectorized from scratch";

std::vector<const rule*> rules() {
  static const intrinsics_rule remove({kRemoveName,
                                       "simd",
                                       rule_direction::backward,
                                       kRemoveDescription,
                                       kRemovePreconditions,
                                       {}});
  static const intrinsics_rule add(
      {kAddName,
       "simd",
       rule_direction::forward,
       kAddDescription,
       kAddPreconditions,
       {"the host runs the manifest's ISA with the instructions used (AVX2, FMA: x86-64-v3); a "
        "lower level fails to build or is unsupported_target (assumed; checked by the gate)"}});
  return {&remove, &add};
}

}  // namespace

}  // namespace lathe::agent::rules::detail::intrin

namespace lathe::agent::rules::detail {
std::vector<const rule*> intrinsics_rules() {
  return intrin::rules();
}
}  // namespace lathe::agent::rules::detail
