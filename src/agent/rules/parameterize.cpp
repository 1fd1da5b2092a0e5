// parameterize.h: finding a kernel's literal knobs and making them tunables.
#include "agent/rules/parameterize.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <map>
#include <set>

#include "agent/rules/catalog_detail.h"  // code_files
#include "source/token.h"
#include "spec/bundle.h"  // bundle_hash

namespace lathe::agent::rules {

namespace {

constexpr int64_t max_knob_value = int64_t{1} << 24;  // larger literals are sizes, not knobs

// A decimal integer literal (no suffix, no leading zero), 0..max_knob_value.
std::optional<int64_t> literal(std::string_view s) {
  if (s.empty() || s.size() > 8 || (s[0] == '0' && s.size() > 1) ||
      s.find_first_not_of("0123456789") != std::string_view::npos)
    return std::nullopt;
  const int64_t v = std::stoll(std::string(s));
  if (v > max_knob_value) return std::nullopt;
  return v;
}

bool power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// The space proposed around a literal: powers of two within 8x of a power of two, else a quarter
// to four times; 0 and 1 for a switch set to 0; unroll counts 1..16. Ascending, the literal
// included.
std::vector<int64_t> space_around(int64_t v, knob_kind k) {
  std::set<int64_t> s{v};
  if (v == 0) {
    s.insert(1);
  } else if (k == knob_kind::unroll_count) {
    for (int64_t u : {1, 2, 4, 8, 16}) s.insert(u);
  } else if (power_of_two(v)) {
    for (int64_t u = std::max<int64_t>(1, v / 8); u <= std::min(max_knob_value, v * 8); u *= 2) s.insert(u);
  } else {
    for (int64_t u : {v / 4, v / 2, 2 * v, 4 * v})
      if (u >= 1 && u <= max_knob_value) s.insert(u);
  }
  return {s.begin(), s.end()};
}

// Whether a name reads as a tuning knob: a word of block, tile, thread or unroll vocabulary, a
// tile dimension (BM, BN, BK, TM, TN, WM, WN) or a BLIS-style blocking (MC, NC, KC, MR, NR).
bool knob_like(std::string_view name) {
  // The name's words: split at '_' and where a lower-case letter meets an upper-case one
  // (kBlockSize: K, BLOCK, SIZE), so that NROWS, WORKSPACE or ACCURACY are not read as knobs.
  std::vector<std::string> words(1);
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '_') {
      words.emplace_back();
      continue;
    }
    if (i > 0 && std::isupper(static_cast<unsigned char>(c)) && std::islower(static_cast<unsigned char>(name[i - 1])))
      words.emplace_back();
    words.back() += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  static const std::set<std::string> knob_words{"BLOCK", "BLOCKS", "THREAD", "THREADS", "TILE", "TILES", "CHUNK",
                                                "UNROLL", "VEC", "VECTOR", "ITEMS", "WARP", "WARPS", "STAGES",
                                                "ROWS", "COLS", "SPLIT", "LANES", "ACC", "GROUP", "WORK"};
  for (const std::string& w : words)
    if (knob_words.count(w)) return true;
  std::string up;
  for (const std::string& w : words) up += w;
  if (up.size() != 2) return false;
  const auto in = [](char c, std::string_view set) { return set.find(c) != std::string_view::npos; };
  return (in(up[0], "BTW") && in(up[1], "MNK")) || (in(up[0], "MNK") && in(up[1], "CR"));
}

const std::set<std::string_view>& integer_words() {
  static const std::set<std::string_view> w{"int", "unsigned", "signed", "long", "short", "size_t", "int32_t",
                                            "int64_t", "uint32_t", "uint64_t", "std", "::", "static", "const",
                                            "inline", "__device__", "__constant__"};
  return w;
}

struct found {
  knob k;
  uint32_t begin = 0, end = 0;  // the bytes to replace: the define's directive, the literal, the count
};

// The knobs of one file, with where they lie.
std::vector<found> knobs_of(const std::string& file, const std::string& text) {
  const token_list tl = tokenize(text);
  const auto& tk = tl.tokens;
  std::vector<found> out;
  for (size_t i = 0; i < tk.size(); ++i) {
    if (tk[i].where == branch::inactive) continue;  // conditional code (`#ifndef BLOCK`, `#ifdef __CUDA_ARCH__`) is compiled somewhere
    if (tk[i].kind == token_kind::preprocessor) {
      const std::string_view d = directive_name(tl.text(i));
      const std::string body = directive_body(tl.text(i));
      if (d == "define") {
        const size_t sp = body.find_first_of(" \t(");
        if (sp == std::string::npos || body[sp] == '(') continue;  // no value, or function-like
        const std::string name = body.substr(0, sp);
        std::string rest = body.substr(sp);
        rest.erase(0, rest.find_first_not_of(" \t"));
        rest.erase(rest.find_last_not_of(" \t") + 1);
        const auto v = literal(rest);
        if (!v) continue;
        const long p = tl.prev_code(i);
        const bool guarded = p >= 0 && tk[p].kind == token_kind::preprocessor &&
                             directive_name(tl.text(p)) == "ifndef" && directive_body(tl.text(p)) == name;
        // An include guard that carries a value (`#ifndef X_H` / `#define X_H 1` first in the
        // file, an #endif last) is no knob: defining it from outside would empty the file.
        if (guarded && tl.prev_code(static_cast<size_t>(p)) < 0) {
          const long last = tl.prev_code(tk.size());
          if (last >= 0 && tk[last].kind == token_kind::preprocessor && directive_name(tl.text(last)) == "endif") continue;
        }
        found f;
        f.k = knob{name, guarded ? knob_kind::guarded_define : knob_kind::define, file, tk[i].line,
                   "#define " + name + " " + rest, name, *v, {}, knob_like(name)};
        f.begin = tk[i].begin;
        f.end = tk[i].end;
        out.push_back(std::move(f));
      } else if (d == "pragma") {
        for (std::string_view w : {"unroll ", "GCC unroll "}) {
          if (!std::string_view(body).starts_with(w)) continue;
          std::string count = body.substr(w.size());
          count.erase(count.find_last_not_of(" \t") + 1);
          const auto v = literal(count);
          if (!v || *v == 0) break;
          // The count's bytes inside the directive's text: right after the first `unroll` and its
          // blanks. Anything else there (a comment between them) and the site is left alone.
          const std::string_view dt = tl.text(i);
          size_t at = dt.find("unroll");
          if (at == std::string_view::npos) break;
          at += 6;
          while (at < dt.size() && (dt[at] == ' ' || dt[at] == '\t')) ++at;
          if (dt.compare(at, count.size(), count) != 0 ||
              (at + count.size() < dt.size() && std::isalnum(static_cast<unsigned char>(dt[at + count.size()]))))
            break;
          found f;
          f.k = knob{"", knob_kind::unroll_count, file, tk[i].line, "#pragma " + body, std::string(w.substr(0, w.size() - 1)),
                     *v, {}, true};
          f.begin = tk[i].begin + static_cast<uint32_t>(at);
          f.end = f.begin + static_cast<uint32_t>(count.size());
          out.push_back(std::move(f));
          break;
        }
      }
      continue;
    }
    // constexpr <integer words> NAME = LITERAL ;
    if (tk[i].kind != token_kind::identifier || tl.text(i) != "constexpr") continue;
    size_t k = tl.next_code(i);
    std::string name;
    bool typed = false;
    while (k < tk.size() && tk[k].kind == token_kind::identifier) {
      const std::string_view w = tl.text(k);
      const size_t n = tl.next_code(k);
      if (n < tk.size() && tl.text(n) == "=") {
        name = std::string(w);
        k = n;
        break;
      }
      if (!integer_words().count(w)) break;
      typed = true;
      k = n;
      if (k < tk.size() && tl.text(k) == "::") k = tl.next_code(k);
    }
    if (name.empty() || !typed || k >= tk.size() || tl.text(k) != "=") continue;
    const size_t lit = tl.next_code(k);
    const size_t semi = lit < tk.size() ? tl.next_code(lit) : tk.size();
    if (semi >= tk.size() || tk[lit].kind != token_kind::number || tl.text(semi) != ";") continue;
    const auto v = literal(tl.text(lit));
    if (!v) continue;
    found f;
    f.k = knob{"TUNE_" + name, knob_kind::constexpr_value, file, tk[i].line,
               "constexpr … " + name + " = " + std::string(tl.text(lit)), name, *v, {}, knob_like(name)};
    f.begin = tk[lit].begin;
    f.end = tk[lit].end;
    out.push_back(std::move(f));
  }
  return out;
}

// Every identifier and macro name the bundle's code uses: a new macro must be none of them.
std::set<std::string> names_in(const kernel_bundle& b) {
  std::set<std::string> out;
  for (const std::string& f : detail::code_files(b)) {
    const token_list tl = tokenize(b.sources.at(f));
    for (size_t i = 0; i < tl.tokens.size(); ++i) {
      if (tl.tokens[i].kind == token_kind::identifier) out.insert(std::string(tl.text(i)));
      if (tl.tokens[i].kind == token_kind::preprocessor) {
        const std::string body = directive_body(tl.text(i));
        out.insert(body.substr(0, body.find_first_of(" \t(")));
      }
    }
  }
  return out;
}

// The macros the manifest defines from outside: [defines] and -D flags, name -> value.
std::map<std::string, std::string> outside_defines(const kernel_bundle& b) {
  std::map<std::string, std::string> out = b.manifest.defines;
  for (const std::string& f : b.manifest.flags) {
    if (!f.starts_with("-D") || f.size() == 2) continue;
    const size_t eq = f.find('=');
    out[f.substr(2, eq == std::string::npos ? std::string::npos : eq - 2)] = eq == std::string::npos ? "1" : f.substr(eq + 1);
  }
  return out;
}

// How often each macro is #defined, and whether it is ever #undef'd, in every file and branch:
// a macro defined twice (two files, `#ifdef` and `#else`) or undefined again is no knob, since
// wrapping one definition would leave the other in force.
struct macro_uses {
  std::map<std::string, int> defines;
  std::set<std::string> undefs;
};
macro_uses macros_in(const kernel_bundle& b) {
  macro_uses out;
  for (const std::string& f : detail::code_files(b)) {
    const token_list tl = tokenize(b.sources.at(f));
    for (size_t i = 0; i < tl.tokens.size(); ++i) {
      if (tl.tokens[i].kind != token_kind::preprocessor) continue;
      const std::string_view d = directive_name(tl.text(i));
      if (d != "define" && d != "undef") continue;
      const std::string body = directive_body(tl.text(i));
      const std::string name = body.substr(0, body.find_first_of(" \t("));
      if (d == "define") ++out.defines[name];
      else out.undefs.insert(name);
    }
  }
  return out;
}

// find_knobs with the bytes, names made unique.
std::vector<found> all_knobs(const kernel_bundle& b) {
  std::vector<found> out;
  if (!b.manifest.tune.empty()) return out;
  std::set<std::string> taken = names_in(b);
  const auto outside = outside_defines(b);
  for (const auto& [name, _] : outside) taken.insert(name);
  const macro_uses macros = macros_in(b);
  int unrolls = 0;
  for (const std::string& f : detail::code_files(b)) {
    for (found& k : knobs_of(f, b.sources.at(f))) {
      if (k.k.kind == knob_kind::define || k.k.kind == knob_kind::guarded_define) {
        if (macros.defines.at(k.k.name) > 1 || macros.undefs.count(k.k.name)) continue;
        if (auto o = outside.find(k.k.name); o != outside.end()) {
          // Defined from outside too: an unguarded #define overrides it (with a warning), so what
          // the kernel computes with is ambiguous; a guarded one takes the outside value.
          const auto v = literal(o->second);
          if (k.k.kind == knob_kind::define || !v) continue;
          k.k.value = *v;
          k.k.what += " (" + o->first + "=" + o->second + " from the manifest)";
        }
      }
      if (k.k.kind == knob_kind::unroll_count) k.k.name = "UNROLL_" + std::to_string(++unrolls);
      if (k.k.kind == knob_kind::unroll_count || k.k.kind == knob_kind::constexpr_value) {
        const std::string base = k.k.name;
        for (int n = 2; taken.count(k.k.name); ++n) k.k.name = base + "_" + std::to_string(n);
        taken.insert(k.k.name);
      } else if (std::any_of(out.begin(), out.end(), [&](const found& o) { return o.k.name == k.k.name; })) {
        continue;  // a macro defined twice (in two files, or two branches): tuned as one, at its first
      }
      k.k.values = space_around(k.k.value, k.k.kind);
      out.push_back(std::move(k));
    }
  }
  return out;
}

}  // namespace

const char* to_string(knob_kind k) {
  switch (k) {
    case knob_kind::define: return "define";
    case knob_kind::guarded_define: return "guarded_define";
    case knob_kind::constexpr_value: return "constexpr";
    case knob_kind::unroll_count: return "unroll";
  }
  return "?";
}

std::vector<knob> find_knobs(const kernel_bundle& b) {
  std::vector<knob> out;
  for (found& f : all_knobs(b)) out.push_back(std::move(f.k));
  return out;
}

result<kernel_bundle> parameterize(const kernel_bundle& b, const std::vector<knob>& chosen) {
  if (!b.manifest.tune.empty())
    return fail(errc::invalid_argument, "kernel " + b.name + " already declares [tune]: tune it as it is");
  if (chosen.empty()) return fail(errc::invalid_argument, "no knob chosen to parameterize");
  const std::vector<found> all = all_knobs(b);
  std::vector<const found*> picked;
  std::vector<const knob*> wanted;
  for (const knob& c : chosen) {
    // A constant may be named as the source spells it (TILE) or as its tunable (TUNE_TILE).
    auto it = std::find_if(all.begin(), all.end(), [&](const found& f) {
      return f.k.name == c.name || (f.k.kind == knob_kind::constexpr_value && f.k.site == c.name);
    });
    if (it == all.end()) {
      std::string names;
      for (const found& f : all) names += (names.empty() ? "" : ", ") + f.k.name;
      return fail(errc::invalid_argument, "'" + c.name + "' is not a knob of kernel " + b.name +
                                              (names.empty() ? " (it has none)" : " (its knobs: " + names + ")"));
    }
    if (std::find(picked.begin(), picked.end(), &*it) != picked.end())
      return fail(errc::invalid_argument, "knob " + it->k.name + " is chosen twice");
    picked.push_back(&*it);
    wanted.push_back(&c);
  }
  kernel_bundle out = b;
  std::map<std::string, std::vector<std::pair<const found*, const knob*>>> by_file;
  for (size_t i = 0; i < picked.size(); ++i) by_file[picked[i]->k.file].push_back({picked[i], wanted[i]});
  for (auto& [file, ks] : by_file) {
    std::string text = b.sources.at(file);
    std::sort(ks.begin(), ks.end(), [](const auto& x, const auto& y) { return x.first->begin > y.first->begin; });
    // The macros the edited literals read, defined before the file's first such knob: after the
    // last #include above it, else at the top.
    std::string block;
    uint32_t first = UINT32_MAX;
    for (auto it = ks.rbegin(); it != ks.rend(); ++it) {
      const found& f = *it->first;
      if (f.k.kind != knob_kind::constexpr_value && f.k.kind != knob_kind::unroll_count) continue;
      first = std::min(first, f.begin);
      block += "#ifndef " + f.k.name + "\n#define " + f.k.name + " " + std::to_string(f.k.value) + "\n#endif\n";
      if (f.k.kind == knob_kind::unroll_count)  // guarded too: a header may be included twice
        block += "#ifndef LATHE_KNOB_" + f.k.name + "_DECLARED\n#define LATHE_KNOB_" + f.k.name +
                 "_DECLARED\nstatic constexpr int lathe_knob_" + f.k.name + " = " + f.k.name + ";  // " + f.k.site +
                 " counts are not macro-expanded\n#endif\n";
    }
    // Every edit on the original text, applied from the last byte to the first.
    struct edit {
      uint32_t begin, end;
      std::string with;
    };
    std::vector<edit> edits;
    for (const auto& [f, _] : ks) {
      switch (f->k.kind) {
        case knob_kind::define:
          edits.push_back({f->begin, f->end, "#ifndef " + f->k.name + "\n" + text.substr(f->begin, f->end - f->begin) + "\n#endif"});
          break;
        case knob_kind::guarded_define: break;  // already overridable
        case knob_kind::constexpr_value: edits.push_back({f->begin, f->end, f->k.name}); break;
        case knob_kind::unroll_count: edits.push_back({f->begin, f->end, "lathe_knob_" + f->k.name}); break;
      }
    }
    if (!block.empty()) {
      uint32_t at = 0;
      const token_list tl = tokenize(text);
      for (size_t i = 0; i < tl.tokens.size() && tl.tokens[i].begin < first; ++i)
        if (tl.tokens[i].kind == token_kind::preprocessor && directive_name(tl.text(i)) == "include" &&
            tl.tokens[i].depth == 0 && tl.tokens[i].where == branch::active) {
          at = tl.tokens[i].end;
          if (at < text.size() && text[at] == '\n') ++at;
        }
      edits.push_back({at, at, (at > 0 && text[at - 1] != '\n' ? "\n" : "") +
                                   std::string("// lathe tune --parameterize: the knobs below are tunables\n") + block});
    }
    std::stable_sort(edits.begin(), edits.end(), [](const edit& x, const edit& y) { return x.begin > y.begin; });
    for (const edit& e : edits) text.replace(e.begin, e.end - e.begin, e.with);
    out.sources[file] = std::move(text);
  }
  for (size_t i = 0; i < picked.size(); ++i) {
    const knob& w = *wanted[i];
    tunable t{picked[i]->k.name, w.values.empty() ? picked[i]->k.values : w.values};
    if (std::find(t.values.begin(), t.values.end(), picked[i]->k.value) == t.values.end())
      return fail(errc::invalid_argument, "the values given for " + t.name + " leave out its literal " +
                                              std::to_string(picked[i]->k.value) + " (the default)");
    std::vector<int64_t> sorted = t.values;
    std::sort(sorted.begin(), sorted.end());
    if (auto d = std::adjacent_find(sorted.begin(), sorted.end()); d != sorted.end())
      return fail(errc::invalid_argument, "the values given for " + t.name + " name " + std::to_string(*d) + " twice");
    for (int64_t v : t.values)
      if (v < 0 || v > max_knob_value || (picked[i]->k.kind == knob_kind::unroll_count && v == 0))
        return fail(errc::invalid_argument, "a value of " + t.name + " outside " +
                                                (picked[i]->k.kind == knob_kind::unroll_count ? "1" : "0") + ".." +
                                                std::to_string(max_knob_value));
    out.manifest.tune.defaults[t.name] = picked[i]->k.value;
    out.manifest.tune.params.push_back(std::move(t));
  }
  std::sort(out.manifest.tune.params.begin(), out.manifest.tune.params.end(),
            [](const tunable& x, const tunable& y) { return x.name < y.name; });
  out.hash = bundle_hash(out);
  return out;
}

}  // namespace lathe::agent::rules
