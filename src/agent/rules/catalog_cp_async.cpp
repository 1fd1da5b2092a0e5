// cp_async_pipeline.remove / cp_async_pipeline.add (CUDA): the asynchronous global->shared copies
// of a pipeline, one function at a time. Backward, every `cp.async.{ca,cg}.shared.global` in the
// inline PTX of a function becomes a synchronous copy through registers (ld.global with the same
// cache operator, then st.shared): the copy has landed when the statement ends, so the pipeline's
// buffers, commits, waits and barriers stay as they were and stay correct (a wait on groups with
// no copy in them returns at once), but nothing overlaps any more. The original instruction is
// kept in a PTX comment at the head of the new text, and the forward form puts back exactly what
// the backward form took out; it never makes a copy asynchronous from scratch (which copies may
// overlap with what is the author's pipeline design, not a rewrite).
//
// The zero-fill form (`cp.async … [dst], [src], 16, src_size;`) is copied when src_size is the
// full size and zero-filled when it is 0; any other src_size traps, so a kernel that relied on a
// partial copy fails the gate instead of computing on wrong bytes.
#include <regex>

#include "agent/rules/catalog_detail.h"

namespace lathe::agent::rules::detail {

namespace {

constexpr std::string_view kMarker = "/* lathe:cp_async_pipeline.remove ";

// One `cp.async` copy as written in an asm string (the literal's text between its quotes).
struct copy_instr {
  std::string cache;              // "ca" or "cg"
  std::string dst, src, size;     // "%0", "%1", "16"
  std::string src_size;           // "%2", a literal, or empty (no zero-fill operand)
};

// Blanks and the escapes \n \t of a C string literal around one instruction are allowed.
const std::regex& copy_pattern() {
  static const std::regex re(
      R"(^(?:\s|\\[nt])*cp\.async\.(ca|cg)\.shared(?:::cta)?\.global(?:\.L2::(?:64B|128B|256B))?)"
      R"(\s+\[\s*(%\d+)\s*\]\s*,\s*\[\s*(%\d+)\s*\]\s*,\s*(4|8|16)\s*(?:,\s*(%\d+|\d+)\s*)?;)"
      R"((?:\s|\\[nt])*$)");
  return re;
}

std::optional<copy_instr> parse_copy(std::string_view body) {
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_match(body.begin(), body.end(), m, copy_pattern())) return std::nullopt;
  copy_instr c{m[1], m[2], m[3], m[4], m[5]};
  if (c.cache == "cg" && c.size != "16") return std::nullopt;  // PTX allows .cg only for 16
  return c;
}

// The synchronous copy, as the text of a C string literal (escapes \n), after the marker that
// holds the original literal text. Its registers are `%lathe_…` (`%%` in an asm string): PTX names
// that read as registers to the detectors, so a copy into shared memory still shows as one.
std::string synchronous(const copy_instr& c, std::string_view original) {
  const int words = std::stoi(c.size) / 4;
  std::string regs, zero;
  for (int i = 0; i < words; ++i) {
    regs += (i ? ", " : "") + std::string("%%lathe_w") + std::to_string(i);
    zero += " mov.b32 %%lathe_w" + std::to_string(i) + ", 0;\\n";
  }
  const std::string vec = words == 1 ? "" : ".v" + std::to_string(words);
  const std::string operand = words == 1 ? regs : "{" + regs + "}";
  std::string s = std::string(kMarker) + std::string(original) + " */ {\\n";
  s += " .reg .b32 " + regs + ";\\n";
  if (c.src_size.empty()) {
    s += " ld.global." + c.cache + vec + ".b32 " + operand + ", [" + c.src + "];\\n";
  } else {
    s += " .reg .pred %%lathe_copy, %%lathe_bad;\\n";
    s += " setp.ne.u32 %%lathe_bad, " + c.src_size + ", " + c.size + ";\\n";
    s += " setp.ne.and.u32 %%lathe_bad, " + c.src_size + ", 0, %%lathe_bad;\\n";
    s += " @%%lathe_bad trap;\\n";
    s += zero;
    s += " setp.ne.u32 %%lathe_copy, " + c.src_size + ", 0;\\n";
    s += " @%%lathe_copy ld.global." + c.cache + vec + ".b32 " + operand + ", [" + c.src + "];\\n";
  }
  s += " st.shared" + vec + ".b32 [" + c.dst + "], " + operand + ";\\n}\\n";
  return s;
}

// The original literal text a synchronous copy keeps in its marker, when `body` is one.
std::optional<std::string> original_of(std::string_view body) {
  if (!body.starts_with(kMarker)) return std::nullopt;
  const size_t end = body.find(" */ {");
  if (end == std::string_view::npos) return std::nullopt;
  std::string original(body.substr(kMarker.size(), end - kMarker.size()));
  if (!parse_copy(original)) return std::nullopt;
  return original;
}

// The text between a string token's quotes; nullopt for prefixed or raw literals.
std::optional<std::pair<uint32_t, uint32_t>> literal_body(const source_view& v, size_t i) {
  const token& t = v.tl.tokens[i];
  const std::string_view s = v.tok(i);
  if (s.size() < 2 || s.front() != '"' || s.back() != '"') return std::nullopt;
  return std::pair{t.begin + 1, t.end - 1};
}

// The asm strings of `fn` that mention cp.async copies (backward) or hold lathe's marker
// (forward): token indices, in order.
std::vector<size_t> asm_strings(const source_view& v, const function& fn, bool marked) {
  static const std::regex copy_word(R"(cp\.async\.c[ag]\.shared)");
  std::vector<size_t> out;
  for (size_t i = fn.body.first; i < fn.body.last; ++i) {
    if (v.tl.tokens[i].kind != token_kind::string || !in_asm(v.tl, i)) continue;
    const std::string_view s = v.tok(i);
    const bool has_marker = s.find(kMarker) != std::string_view::npos;
    if (marked ? has_marker
               : !has_marker && std::regex_search(s.begin(), s.end(), copy_word))
      out.push_back(i);
  }
  return out;
}

class cp_async_remove : public basic_rule {
 public:
  cp_async_remove()
      : basic_rule({"cp_async_pipeline.remove",
                    "cp_async_pipeline",
                    rule_direction::backward,
                    "make every cp.async global->shared copy of one function synchronous "
                    "(ld.global with the same cache operator, then st.shared; the original kept "
                    "in a PTX comment); commits, waits and barriers stay. The pipeline stays in "
                    "place, its overlap is gone",
                    "CUDA; a function whose inline asm strings hold `cp.async.{ca,cg}.shared."
                    "global [dst], [src], 4|8|16[, src_size];`, one instruction per string "
                    "(no cache-policy operand, no .bulk form)",
                    {}}) {}

  std::vector<rule_site> sites(const kernel_bundle& b) const override {
    if (!is_cuda(b)) return {};
    return file_sites(b, [&](const source_view& v, std::vector<rule_site>& out) {
      for (const function& fn : v.st.functions) {
        const auto copies = asm_strings(v, fn, false);
        if (copies.empty()) continue;
        out.push_back(site(v, fn.anchor, fn.name, v.tl.tokens[copies.front()].where,
                           std::to_string(copies.size()) + " cp.async copy string(s) in " +
                               fn.name));
      }
    });
  }

  result<rule_result> apply(const kernel_bundle& b, const rule_invocation& inv) const override {
    auto tg = open_target(b, inv, anchor_kind::function, "is not a function");
    if (!tg) return tl::unexpected(tg.error());
    const auto& v = tg->v;
    const function& fn = v->st.functions[tg->t.index];
    const auto copies = asm_strings(*v, fn, false);
    if (copies.empty()) return fail(errc::invalid_argument, fn.name + " holds no cp.async copy");
    change ch(b);
    for (size_t i : copies) {
      auto body = literal_body(*v, i);
      const std::string_view text =
          body ? std::string_view(v->text).substr(body->first, body->second - body->first)
               : v->tok(i);
      auto c = body ? parse_copy(text) : std::nullopt;
      if (!c)
        return fail(errc::invalid_argument,
                    "line " + std::to_string(v->tl.tokens[i].line) + " of " + fn.name +
                        ": not one cp.async copy this rule rewrites: " + std::string(v->tok(i)));
      ch.replace(*v, body->first, body->second, synchronous(*c, text));
    }
    rule_result r = start(inv, fn.name);
    r.note = "made " + std::to_string(copies.size()) + " cp.async copy string(s) of " + fn.name +
             " synchronous (ld.global + st.shared)";
    r.inverse = inverse_of(inv, "cp_async_pipeline.add", inv.anchor);
    return ch.finish(std::move(r));
  }
};

class cp_async_add : public basic_rule {
 public:
  cp_async_add()
      : basic_rule({"cp_async_pipeline.add",
                    "cp_async_pipeline",
                    rule_direction::forward,
                    "put the cp.async copies back where cp_async_pipeline.remove made them "
                    "synchronous, from the original each one keeps in its PTX comment. Never "
                    "makes a copy asynchronous from scratch",
                    "CUDA; a function whose asm strings hold synchronous copies exactly as "
                    "cp_async_pipeline.remove wrote them",
                    {"the function's waits and barriers still order every read of the copied "
                     "shared memory after the copy (they did when the copies were removed; "
                     "assumed; checked by the gate)"}}) {}

  std::vector<rule_site> sites(const kernel_bundle& b) const override {
    if (!is_cuda(b)) return {};
    return file_sites(b, [&](const source_view& v, std::vector<rule_site>& out) {
      for (const function& fn : v.st.functions) {
        const auto marked = asm_strings(v, fn, true);
        if (marked.empty()) continue;
        out.push_back(site(v, fn.anchor, fn.name, v.tl.tokens[marked.front()].where,
                           std::to_string(marked.size()) + " synchronous copy string(s) in " +
                               fn.name + " that were cp.async"));
      }
    });
  }

  result<rule_result> apply(const kernel_bundle& b, const rule_invocation& inv) const override {
    auto tg = open_target(b, inv, anchor_kind::function, "is not a function");
    if (!tg) return tl::unexpected(tg.error());
    const auto& v = tg->v;
    const function& fn = v->st.functions[tg->t.index];
    const auto marked = asm_strings(*v, fn, true);
    if (marked.empty())
      return fail(errc::invalid_argument,
                  fn.name + " holds no copy that cp_async_pipeline.remove made synchronous");
    change ch(b);
    for (size_t i : marked) {
      auto body = literal_body(*v, i);
      auto original =
          body ? original_of(std::string_view(v->text).substr(body->first, body->second - body->first))
               : std::nullopt;
      if (!original)
        return fail(errc::invalid_argument,
                    "line " + std::to_string(v->tl.tokens[i].line) + " of " + fn.name +
                        ": the synchronous copy is not as cp_async_pipeline.remove wrote it");
      ch.replace(*v, body->first, body->second, *original);
    }
    rule_result r = start(inv, fn.name);
    r.note = "put back " + std::to_string(marked.size()) + " cp.async copy string(s) of " + fn.name;
    r.inverse = inverse_of(inv, "cp_async_pipeline.remove", inv.anchor);
    return ch.finish(std::move(r));
  }
};

}  // namespace

std::vector<const rule*> cp_async_rules() {
  static const cp_async_remove remove;
  static const cp_async_add add;
  return {&remove, &add};
}

}  // namespace lathe::agent::rules::detail
