// How a rule's change becomes an edited kernel: byte replacements on token boundaries, checked
// against the #if branches they touch and re-tokenized, then written as SEARCH/REPLACE blocks,
// FLAGS lines and an ISA line (docs/edits.md) and applied through agent/edit.h, so that a rule's
// kernel is exactly what its `edits` text gives when a model or a person applies it.
#include <algorithm>

#include "agent/edit.h"
#include "agent/rules/catalog_detail.h"

namespace lathe::agent::rules::detail {

namespace {

bool code_extension(const std::string& f) {
  for (std::string_view e : {".cu", ".cuh", ".cpp", ".cc", ".cxx", ".h", ".hpp", ".hh", ".inl"})
    if (f.ends_with(e)) return true;
  return false;
}

// Occurrences of `needle` starting at a line start of `hay` (how apply() matches SEARCH).
int count_at_line_starts(std::string_view hay, std::string_view needle) {
  int n = 0;
  for (size_t at = hay.find(needle); at != std::string_view::npos; at = hay.find(needle, at + 1))
    if (at == 0 || hay[at - 1] == '\n') ++n;
  return n;
}

struct line_range {
  uint32_t begin, end;
};

// The line ranges a file's pieces cover, grown until each SEARCH text is unique in the file (a
// text that contains a unique one is unique too, so merging grown ranges keeps them unique).
std::vector<line_range> block_ranges(std::string_view old, const std::vector<line_range>& raw) {
  std::vector<line_range> out;
  for (line_range r : raw) {
    bool up = true;
    while (count_at_line_starts(old, old.substr(r.begin, r.end - r.begin)) > 1) {
      if ((up && r.begin > 0) || r.end >= old.size())
        r.begin = line_begin(old, r.begin - 1);
      else
        r.end = line_end(old, r.end);
      up = !up;
      if (r.begin == 0 && r.end >= old.size()) break;
    }
    out.push_back(r);
  }
  std::sort(out.begin(), out.end(), [](auto a, auto b) { return a.begin < b.begin; });
  std::vector<line_range> merged;
  for (line_range r : out)
    if (!merged.empty() && r.begin < merged.back().end)
      merged.back().end = std::max(merged.back().end, r.end);
    else
      merged.push_back(r);
  return merged;
}

}  // namespace

source_view::source_view(std::string f, std::string t)
    : file(std::move(f)), text(std::move(t)), tl(tokenize(text)), st(analyze(tl)) {}

std::unique_ptr<source_view> view_of(const kernel_bundle& b, const std::string& file) {
  auto it = b.sources.find(file);
  if (it == b.sources.end()) return nullptr;
  return std::make_unique<source_view>(file, it->second);
}

std::vector<std::string> code_files(const kernel_bundle& b) {
  std::vector<std::string> out;
  if (b.sources.count(b.manifest.entry)) out.push_back(b.manifest.entry);
  for (const auto& [f, text] : b.sources)
    if (f != b.manifest.entry && code_extension(f)) out.push_back(f);
  return out;
}

std::string target_file(const kernel_bundle& b, const rule_invocation& inv) {
  auto it = inv.params.find("file");
  return it != inv.params.end() && !it->second.empty() ? it->second : b.manifest.entry;
}

result<anchor_target> locate(const source_view& v, const std::string& anchor) {
  auto t = resolve(v.tl, v.st, anchor);
  if (!t) return t;
  if (t->where == branch::inactive)
    return fail(errc::unsupported, "'" + anchor + "' in " + v.file +
                                       " lies in an inactive #if branch (never compiled); a rule "
                                       "does not edit dead code");
  return t;
}

result<target> open_anchor(const kernel_bundle& b, const rule_invocation& inv) {
  const std::string file = target_file(b, inv);
  auto v = view_of(b, file);
  if (!v) return fail(errc::not_found, "no file " + file + " in the bundle");
  auto t = locate(*v, inv.anchor);
  if (!t) return tl::unexpected(t.error());
  return target{std::move(v), *t};
}

result<target> open_target(const kernel_bundle& b, const rule_invocation& inv, anchor_kind kind,
                           std::string_view refusal, const target_test& also) {
  auto tg = open_anchor(b, inv);
  if (tg && (tg->t.kind != kind || (also && !also(*tg->v, tg->t))))
    return fail(errc::invalid_argument, "'" + inv.anchor + "' " + std::string(refusal));
  return tg;
}

std::vector<rule_site> file_sites(const kernel_bundle& b, const site_visit& visit) {
  std::vector<rule_site> out;
  for (const std::string& f : code_files(b)) {
    const size_t first = out.size();
    visit(*view_of(b, f), out);
    if (f != b.manifest.entry)
      for (size_t i = first; i < out.size(); ++i) out[i].params["file"] = f;
  }
  return out;
}

rule_invocation inverse_of(const rule_invocation& inv, std::string rule, std::string anchor,
                           std::map<std::string, std::string> params) {
  rule_invocation r{std::move(rule), std::move(anchor), std::move(params)};
  if (inv.params.count("file")) r.params["file"] = inv.params.at("file");
  return r;
}

bool allows_fast_math(const rule_invocation& inv) {
  auto ok = inv.params.find("allow_fast_math");
  return ok != inv.params.end() && ok->second == "true";
}

std::vector<rule_site> basic_rule::call_sites(
    const kernel_bundle& b,
    const std::function<bool(const source_view&, const call&)>& pick) const {
  return file_sites(b, [&](const source_view& v, std::vector<rule_site>& out) {
    for (const call& c : v.st.calls)
      if (c.function >= 0 && pick(v, c))
        out.push_back(site(v, c.anchor, v.st.functions[c.function].name, c.where,
                           std::string(v.bytes(c.whole))));
  });
}

void change::replace(const source_view& v, uint32_t begin, uint32_t end, std::string text) {
  pieces_.push_back({v.file, begin, end, std::move(text), branch_of_bytes(v.tl, begin, end)});
}

std::map<std::string, std::string> change::delete_pragma(const source_view& v, uint32_t directive) {
  auto [from, to] = directive_line(v, directive);
  replace(v, from, to, "");
  return {{"pragma", directive_body(v.tok(directive))},
          {"indent", indent_at(v.text, v.tl.tokens[directive].begin)}};
}

void change::insert_pragma(const source_view& v, const loop& l, const rule_invocation& inv,
                           const std::string& body) {
  const uint32_t at = line_begin(v.text, v.tl.tokens[l.keyword].begin);
  auto ip = inv.params.find("indent");
  insert(v, at,
         (ip != inv.params.end() ? ip->second : indent_at(v.text, at)) + "#pragma " + body + "\n");
}

result<rule_result> change::finish(rule_result meta) const {
  edit_set edits;
  bool conditional = false;
  std::vector<std::string> files;
  for (const auto& p : pieces_)
    if (std::find(files.begin(), files.end(), p.file) == files.end()) files.push_back(p.file);
  for (const std::string& file : files) {
    std::vector<piece> ps;
    for (const auto& p : pieces_)
      if (p.file == file) ps.push_back(p);
    std::sort(ps.begin(), ps.end(),
              [](const piece& a, const piece& b) { return a.begin < b.begin; });
    const std::string& old = b_.sources.at(file);
    std::string now;
    uint32_t at = 0;
    std::vector<line_range> raw;
    for (const auto& p : ps) {
      if (p.where == branch::inactive)
        return fail(errc::unsupported, file + ": the edit touches an inactive #if branch");
      conditional = conditional || p.where == branch::conditional;
      if (p.begin < at) return fail(errc::internal, file + ": overlapping rule replacements");
      now.append(old, at, p.begin - at).append(p.text);
      at = p.end;
      raw.push_back(
          {line_begin(old, p.begin), line_end(old, p.end > p.begin ? p.end - 1 : p.begin)});
    }
    now.append(old, at);
    // A rule works on tokens; one that breaks a literal or a bracket pair is a bug to report,
    // not a kernel to hand to the gate.
    const token_list before = tokenize(old), after = tokenize(now);
    if (after.errors.size() > before.errors.size())
      return fail(errc::unsupported,
                  file + ": the edit would add tokenizer errors: " + after.errors.front());
    file_edit fe;
    fe.path = file;
    for (line_range r : block_ranges(old, raw)) {
      std::string rep;
      uint32_t pos = r.begin;
      for (const auto& p : ps)
        if (p.begin >= r.begin && p.begin < std::max(r.end, r.begin + 1)) {
          rep.append(old, pos, p.begin - pos).append(p.text);
          pos = p.end;
        }
      rep.append(old, pos, r.end - pos);
      fe.blocks.push_back({old.substr(r.begin, r.end - r.begin), rep, 0});
    }
    edits.files.push_back(std::move(fe));
  }
  for (const auto& [add, f] : flags_) edits.flags.push_back({add, f});
  edits.isa = isa_;
  auto applied = apply(b_, edits);
  if (!applied) {
    // A later block's SEARCH text recreated by an earlier REPLACE (rare): whole files instead.
    for (auto& fe : edits.files) {
      std::string text = b_.sources.at(fe.path);
      for (const auto& blk : fe.blocks)
        text.replace(text.find(blk.search), blk.search.size(), blk.replace);
      fe.kind = file_edit_kind::whole;
      fe.contents = text;
      fe.blocks.clear();
    }
    applied = apply(b_, edits);
    if (!applied)
      return fail(errc::internal, "rule edit did not apply: " + applied.error().message);
  }
  meta.kernel = std::move(*applied);
  meta.edits = render_edits(edits);
  if (conditional)
    meta.note += std::string(meta.note.empty() ? "" : "; ") +
                 "the site lies in a conditional #if branch: it takes effect only where that "
                 "branch is compiled";
  return meta;
}

uint32_t line_begin(std::string_view s, uint32_t at) {
  at = std::min<uint32_t>(at, s.size());
  while (at > 0 && s[at - 1] != '\n') --at;
  return at;
}

uint32_t line_end(std::string_view s, uint32_t at) {
  const size_t nl = s.find('\n', at);
  return nl == std::string_view::npos ? s.size() : nl + 1;
}

std::string indent_at(std::string_view s, uint32_t at) {
  uint32_t b = line_begin(s, at), e = b;
  while (e < s.size() && (s[e] == ' ' || s[e] == '\t')) ++e;
  return std::string(s.substr(b, e - b));
}

std::pair<uint32_t, uint32_t> directive_line(const source_view& v, uint32_t token) {
  const auto& t = v.tl.tokens[token];
  return {line_begin(v.text, t.begin), line_end(v.text, t.end > t.begin ? t.end - 1 : t.begin)};
}

}  // namespace lathe::agent::rules::detail
