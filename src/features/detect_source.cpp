// Detectors on source (docs/rules.md "Detectors"), on the front end's tokens and structure
// (token.h, anchor.h): comments, strings outside `asm`, and `#if 0` branches are never evidence.
// They cover what an artifact cannot show (pragmas, __restrict__, register tiles, OpenMP's
// schedule) and stand in for the artifact detectors when there is no artifact; detect_features
// decides which of their results count.
#include <algorithm>
#include <map>
#include <set>

#include "source/anchor.h"
#include "features/detect.h"
#include "features/detect_util.h"
#include "source/token.h"
#include "core/lines.h"

namespace lathe::agent::rules {
namespace {

// The PTX of an asm string literal without its comments (`/* … */`, and `// …` to the end of the
// line, written `\n` in the literal): what a rule left there in words is not code.
std::string ptx_code(std::string_view literal) {
  std::string out;
  for (size_t i = 0; i < literal.size(); ++i) {
    if (literal.compare(i, 2, "/*") == 0) {
      const size_t end = literal.find("*/", i + 2);
      if (end == std::string_view::npos) break;
      i = end + 1;
    } else if (literal.compare(i, 2, "//") == 0) {
      const size_t nl = std::min(literal.find("\\n", i), literal.find('\n', i));
      if (nl == std::string_view::npos) break;
      i = nl - 1;
    } else {
      out += literal[i];
    }
  }
  return out;
}

using detail::trim;

bool is_source_file(const std::string& path) {
  for (const char* ext : {".cu", ".cuh", ".cpp", ".cc", ".cxx", ".h", ".hpp", ".hh", ".inl"})
    if (path.ends_with(ext)) return true;
  return false;
}

// Bits of the vector types a pointer or cast moves at once.
int32_t vector_type_bits(std::string_view t) {
  static const std::map<std::string_view, int32_t> bits = {
      {"float4", 128},        {"int4", 128},        {"uint4", 128}, {"double2", 128},
      {"longlong2", 128},     {"ulonglong2", 128},  {"float2", 64}, {"int2", 64},
      {"uint2", 64},          {"double4", 256},     {"half2", 32},  {"__half2", 32},
      {"__nv_bfloat162", 32}, {"nv_bfloat162", 32}, {"char4", 32},  {"uchar4", 32},
      {"short4", 64},         {"ushort4", 64}};
  auto it = bits.find(t);
  return it == bits.end() ? 0 : it->second;
}

// Element types of arrays that may be register tiles: arithmetic scalars and SIMD vectors, and
// the scalar stand-ins simd_intrinsics.remove writes (catalog_intrinsics.h): a tile of
// lathe_m256 is the same register tile with its lanes done one by one, so the walk that removed
// the intrinsics still sees it.
bool tile_element_type(std::string_view t) {
  static const std::set<std::string_view> types = {
      "float",         "double",      "int",         "unsigned",   "half",    "__half",
      "__nv_bfloat16", "nv_bfloat16", "int32_t",     "uint32_t",   "int64_t", "float2",
      "float4",        "half2",       "__half2",     "__m128",     "__m128d", "__m256",
      "__m256d",       "__m256i",     "__m512",      "__m512d",    "__m512i", "lathe_m256",
      "lathe_m256i",   "lathe_m128"};
  return types.count(t) > 0;
}

int32_t intrinsic_width(std::string_view name) {
  if (name.starts_with("_mm512_") || name.starts_with("__m512")) return 512;
  if (name.starts_with("_mm256_") || name.starts_with("__m256")) return 256;
  if (name.starts_with("_mm_") || name.starts_with("__m128")) return 128;
  return 0;
}

class file_scan {
 public:
  file_scan(const std::string& path, const std::string& text, language lang,
            detail::detection_set& set)
      : path_(path),
        lines_(lathe::split_lines(text, carriage_return::dropped)),
        tl_(tokenize(text)),
        st_(analyze(tl_)),
        lang_(lang),
        set_(set) {}

  void run() {
    functions();
    pragmas_and_loops();
    tokens();
    calls();
    register_tiles();
    shared_tiles();
  }

 private:
  std::string evidence(uint32_t line) const {
    std::string_view text = line >= 1 && line <= lines_.size() ? trim(lines_[line - 1]) : "";
    if (text.size() > 160) text = text.substr(0, 160);
    return path_ + ":" + std::to_string(line) + ": " + std::string(text);
  }
  std::string evidence_at(uint32_t tok) const { return evidence(tl_.tokens[tok].line); }
  bool live(uint32_t tok) const { return tl_.tokens[tok].where != branch::inactive; }
  std::string locus_at(uint32_t tok) const {
    const int32_t f = function_at(st_, tok);
    return f < 0 ? std::string("<file>") : st_.functions[f].name;
  }
  bool ident(uint32_t i, std::string_view s) const {
    return i < tl_.tokens.size() && tl_.tokens[i].kind == token_kind::identifier &&
           tl_.text(i) == s;
  }
  bool punct(uint32_t i, std::string_view s) const {
    return i < tl_.tokens.size() && tl_.tokens[i].kind == token_kind::punct && tl_.text(i) == s;
  }

  // restrict (parameters) and launch_bounds (qualifier with its arguments as written).
  void functions() {
    for (const function& f : st_.functions) {
      if (f.where == branch::inactive) continue;
      for (const param& p : f.params)
        if (p.restrict) set_.add("restrict", f.name, evidence_at(p.tokens.first));
      for (uint32_t i = f.whole.first; i < f.name_token; ++i) {
        if (!ident(i, "__launch_bounds__")) continue;
        const size_t open = tl_.next_code(i);
        if (!punct(static_cast<uint32_t>(open), "(") || tl_.tokens[open].match < 0) continue;
        auto& d = set_.add("launch_bounds", f.name, evidence_at(i));
        std::vector<std::string> args(1);
        for (uint32_t k = static_cast<uint32_t>(open) + 1;
             k < static_cast<uint32_t>(tl_.tokens[open].match); ++k) {
          if (tl_.tokens[k].kind == token_kind::comment) continue;
          if (punct(k, ",") && tl_.tokens[k].depth == tl_.tokens[open].depth + 1)
            args.emplace_back();
          else
            args.back().append(args.back().empty() ? "" : " ").append(tl_.text(k));
        }
        d.what.params["threads"] = args[0];
        if (args.size() > 1) d.what.params["min_blocks"] = args[1];
      }
    }
  }

  // loop_unroll (a pragma before a loop), omp_parallel and simd (OpenMP pragmas).
  void pragmas_and_loops() {
    std::map<uint32_t, const loop*> pragma_loop;
    for (const loop& l : st_.loops)
      for (uint32_t p : l.pragmas) pragma_loop[p] = &l;
    for (uint32_t i = 0; i < tl_.tokens.size(); ++i) {
      const token& t = tl_.tokens[i];
      if (t.kind != token_kind::preprocessor || !live(i)) continue;
      const std::string_view text = tl_.text(i);
      if (directive_name(text) != "pragma") continue;
      const std::string body = directive_body(text);
      auto it = pragma_loop.find(i);
      const std::string locus = it != pragma_loop.end() ? it->second->locus : locus_at(i);
      std::string factor;
      if (body.starts_with("unroll")) {
        factor = trim(std::string_view(body).substr(6));
      } else if (body.starts_with("GCC unroll")) {
        factor = trim(std::string_view(body).substr(10));
      } else if (body.starts_with("clang loop unroll_count(")) {
        factor = body.substr(24, body.find(')') - 24);
      } else if (body.starts_with("clang loop unroll(full)")) {
        factor = "full";
      }
      if (body.starts_with("unroll") || body.starts_with("GCC unroll") ||
          body.starts_with("clang loop unroll")) {
        if (factor.empty()) factor = "full";
        // `unroll 1` asks for no unrolling: the opposite of the feature.
        if (factor != "1" && it != pragma_loop.end()) {
          auto& d = set_.add("loop_unroll", locus, evidence_at(i));
          detail::add_param_item(d, "factor", factor);
        }
      }
      if (body.starts_with("omp ") && body.find(" parallel") != std::string::npos) {
        auto& d = set_.add("omp_parallel", locus_at(i), evidence_at(i));
        if (auto s = body.find("schedule("); s != std::string::npos) {
          std::string kind = body.substr(s + 9, body.find_first_of(",)", s + 9) - s - 9);
          detail::add_param_item(d, "schedule", trim(kind));
        }
      }
      if (body.starts_with("omp ") && body.find(" simd") != std::string::npos &&
          lang_ == language::cpp)
        set_.add("simd", locus_at(i), evidence_at(i));
    }
  }

  // Identifiers and asm strings: vector types, SIMD types, __restrict__ locals, PTX in asm.
  void tokens() {
    bool cp_async = false, wait_group = false;
    std::string cp_async_evidence, cp_async_locus;
    for (uint32_t i = 0; i < tl_.tokens.size(); ++i) {
      const token& t = tl_.tokens[i];
      if (!live(i)) continue;
      const std::string_view text = tl_.text(i);
      if (t.kind == token_kind::identifier) {
        if (lang_ == language::cpp && intrinsic_width(text) > 0 && text.starts_with("__m")) {
          detail::keep_max_param(set_.add("simd", locus_at(i), evidence_at(i)), "width",
                                 intrinsic_width(text));
        }
        if (lang_ == language::cuda && vector_type_bits(text) > 0) {
          // A pointer to (or a reference cast to) a vector type: the access is that wide.
          size_t n = tl_.next_code(i);
          if (ident(static_cast<uint32_t>(n), "const")) n = tl_.next_code(n);
          if (punct(static_cast<uint32_t>(n), "*") || punct(static_cast<uint32_t>(n), "&"))
            detail::keep_max_param(set_.add("vector_access", locus_at(i), evidence_at(i)), "width",
                                   vector_type_bits(text));
        }
        if ((text == "__restrict__" || text == "__restrict") && function_at(st_, i) >= 0) {
          const function& f = st_.functions[function_at(st_, i)];
          if (f.body.contains(i)) set_.add("restrict", f.name, evidence_at(i));
        }
      } else if (t.kind == token_kind::string && in_asm(tl_, i)) {
        const std::string locus = locus_at(i);
        const std::string code = ptx_code(text);
        if (code.find("mma.sync") != std::string_view::npos)
          set_.add("mma_sync", locus, evidence_at(i));
        if (code.find("wgmma.mma_async") != std::string_view::npos)
          set_.add("wgmma", locus, evidence_at(i));
        if (code.find("cp.async.bulk.tensor") != std::string_view::npos)
          set_.add("tma", locus, evidence_at(i));
        if (code.find("setmaxnreg") != std::string_view::npos)
          set_.add("warp_specialization", locus, evidence_at(i));
        if (code.find("ldmatrix") != std::string_view::npos)
          set_.add("ldmatrix", locus, evidence_at(i));
        if (code.find("ld.global.nc") != std::string_view::npos)
          set_.add("read_only_load", locus, evidence_at(i));
        if (code.find("prefetch.global") != std::string_view::npos ||
            code.find("cp.async.bulk.prefetch") != std::string_view::npos)
          set_.add("prefetch", locus, evidence_at(i));
        if (code.find("st.global.cs") != std::string_view::npos) set_.add("non_temporal_store", locus, evidence_at(i));
        if (code.find("cp.async.") != std::string_view::npos &&
            code.find("group") == std::string_view::npos && !cp_async) {
          cp_async = true;
          cp_async_evidence = evidence_at(i);
          cp_async_locus = locus;
        }
        if (code.find("wait_group") != std::string_view::npos) wait_group = true;
      }
    }
    if (cp_async && wait_group) set_.add("cp_async_pipeline", cp_async_locus, cp_async_evidence);
  }

  // Calls: intrinsics that name a feature.
  void calls() {
    bool pipeline_copy = false, pipeline_wait = false;
    std::string copy_evidence, copy_locus;
    for (const call& c : st_.calls) {
      if (c.where == branch::inactive) continue;
      const std::string& n = c.name;
      const std::string locus = locus_at(c.name_token);
      const std::string ev = evidence_at(c.name_token);
      if (n == "__shfl_xor_sync" || n == "__shfl_down_sync" || n.starts_with("__reduce_") ||
          n == "cg::reduce" || n == "cooperative_groups::reduce")
        set_.add("warp_reduce", locus, ev);
      if (n.ends_with("wmma::mma_sync") || n == "mma_sync") set_.add("mma_sync", locus, ev);
      if (n == "__ldg") set_.add("read_only_load", locus, ev);
      if (n == "__builtin_prefetch" || n == "_mm_prefetch") set_.add("prefetch", locus, ev);
      if (n == "__builtin_nontemporal_store" || n == "__stcs" || n == "__stwt" ||
          ((n.starts_with("_mm_stream_") || n.starts_with("_mm256_stream_") || n.starts_with("_mm512_stream_")) &&
           n.find("load") == std::string::npos))
        set_.add("non_temporal_store", locus, ev);
      if (n == "__pipeline_memcpy_async" || n.ends_with("memcpy_async")) {
        pipeline_copy = true;
        if (copy_evidence.empty()) {
          copy_evidence = ev;
          copy_locus = locus;
        }
      }
      if (n == "__pipeline_wait_prior" || n.ends_with("pipeline_consumer_wait_prior") ||
          n.ends_with("consumer_wait"))
        pipeline_wait = true;
      static const std::set<std::string> fast = {"__expf",    "__exp10f", "__logf",     "__log2f",
                                                 "__log10f",  "__sinf",   "__cosf",     "__tanf",
                                                 "__sincosf", "__powf",   "__fdividef", "rsqrtf"};
      if (fast.count(n)) set_.add("fast_math", locus, ev);
      if (lang_ == language::cpp && intrinsic_width(n) > 0) {
        detail::keep_max_param(set_.add("simd", locus, ev), "width", intrinsic_width(n));
        // Contiguous vector loads and stores, not a broadcast or a one-lane load.
        if ((n.find("load") != std::string::npos || n.find("store") != std::string::npos) &&
            n.find("broadcast") == std::string::npos && !n.ends_with("_ss") &&
            !n.ends_with("_sd") && n.find("load1") == std::string::npos)
          detail::keep_max_param(set_.add("vector_access", locus, ev), "width", intrinsic_width(n));
      }
    }
    if (pipeline_copy && pipeline_wait) set_.add("cp_async_pipeline", copy_locus, copy_evidence);
  }

  // The statement that token i lies in, at i's bracket depth: [first, last) token indices.
  token_span statement_of(uint32_t i) const {
    const int32_t depth = tl_.tokens[i].depth;
    uint32_t first = i, last = i;
    while (first > 0) {
      const uint32_t k = first - 1;
      const token& t = tl_.tokens[k];
      if (t.depth < depth || t.kind == token_kind::preprocessor) break;
      if (t.depth == depth && (punct(k, ";") || punct(k, "{") || punct(k, "}"))) break;
      first = k;
    }
    while (last < tl_.tokens.size()) {
      const token& t = tl_.tokens[last];
      if (t.depth < depth || t.kind == token_kind::preprocessor) break;
      if (t.depth == depth && (punct(last, ";") || punct(last, "{") || punct(last, "}"))) break;
      ++last;
    }
    return {first, last};
  }

  // Number of `[…]` groups right after token i (the dimensions of a declarator).
  int32_t subscripts_after(uint32_t i, uint32_t* end = nullptr) const {
    int32_t n = 0;
    size_t k = tl_.next_code(i);
    while (punct(static_cast<uint32_t>(k), "[") && tl_.tokens[k].match > 0) {
      ++n;
      k = tl_.next_code(static_cast<size_t>(tl_.tokens[k].match));
    }
    if (end) *end = static_cast<uint32_t>(k);
    return n;
  }

  std::string dims_text(uint32_t name_tok) const {
    std::string out;
    size_t k = tl_.next_code(name_tok);
    if (punct(static_cast<uint32_t>(k), ")")) k = tl_.next_code(k);  // float (&acc)[M][N]
    while (punct(static_cast<uint32_t>(k), "[") && tl_.tokens[k].match > 0) {
      const uint32_t close = static_cast<uint32_t>(tl_.tokens[k].match);
      std::string dim;
      for (uint32_t j = static_cast<uint32_t>(k) + 1; j < close; ++j)
        if (tl_.tokens[j].kind != token_kind::comment) dim += tl_.text(j);
      out += (out.empty() ? "" : "x") + dim;
      k = tl_.next_code(close);
    }
    return out;
  }

  // register_tiling: an array of two or more dimensions of arithmetic or SIMD elements, local
  // to a function (not __shared__, static or constant) or passed by reference (`float
  // (&acc)[M][N]`), that a loop accumulates into: `acc[i][j] = f(…, acc[i][j])`, `acc[i][j] +=`,
  // or `acc[i][j]` handed to a call (an mma helper) inside a loop. One output per thread never
  // needs a 2-D array; a tile of them does. A tile of separately named variables (c00, c01…) or
  // one written by a macro is not seen.
  void register_tiles() {
    for (size_t fi = 0; fi < st_.functions.size(); ++fi) {
      const function& f = st_.functions[fi];
      if (f.where == branch::inactive || f.body.empty()) continue;
      std::map<std::string, uint32_t> arrays;  // name -> declaring token
      // Reference parameters: T (&name)[A][B].
      for (const param& p : f.params) {
        for (uint32_t k = p.tokens.first; k + 2 < p.tokens.last; ++k)
          if (punct(k, "(") && punct(k + 1, "&") &&
              tl_.tokens[k + 2].kind == token_kind::identifier && punct(k + 3, ")") &&
              subscripts_after(k + 3) >= 2 && tile_element_type(first_type(p.tokens)))
            arrays[std::string(tl_.text(k + 2))] = k + 2;
      }
      // Local declarations: T a[A][B], b[C][D];
      for (uint32_t i = f.body.first + 1; i + 1 < f.body.last; ++i) {
        if (tl_.tokens[i].kind != token_kind::identifier ||
            !punct(static_cast<uint32_t>(tl_.next_code(i)), "["))
          continue;
        const long prev = tl_.prev_code(i);
        if (prev < 0) continue;
        if (!(punct(prev, ",") || tile_element_type(tl_.text(prev)))) continue;
        if (subscripts_after(i) < 2) continue;
        const token_span s = statement_of(i);
        if (!tile_element_type(first_type(s))) continue;
        bool excluded = false;
        for (uint32_t k = s.first; k < i; ++k)
          if (ident(k, "__shared__") || ident(k, "static") || ident(k, "constexpr") ||
              ident(k, "const") || ident(k, "extern") || ident(k, "__constant__"))
            excluded = true;
        if (!excluded) arrays[std::string(tl_.text(i))] = i;
      }
      for (const auto& [name, decl] : arrays) {
        for (uint32_t i = f.body.first; i < f.body.last; ++i) {
          if (!ident(i, name) || i == decl || !live(i)) continue;
          if (loop_at(st_, i) < 0) continue;
          uint32_t after = 0;
          if (subscripts_after(i, &after) < 1) continue;
          const token_span s = statement_of(i);
          bool accumulates = punct(after, "+=") || punct(after, "-=") || punct(after, "*=");
          if (punct(after, "=")) {
            for (uint32_t k = after + 1; k < s.last && !accumulates; ++k)
              accumulates = ident(k, name) && subscripts_after(k) >= 1;
          }
          // Handed to a call as a whole argument: `mma(acc[mt][nt], a, b)`.
          const long before = tl_.prev_code(i);
          if (!accumulates && before >= 0 && (punct(before, "(") || punct(before, ",")) &&
              (punct(after, ",") || punct(after, ")"))) {
            for (const call& c : st_.calls)
              if (c.parens.contains(i) && c.function == static_cast<int32_t>(fi))
                accumulates = true;
          }
          if (!accumulates) continue;
          auto& d = set_.add("register_tiling", f.name, evidence_at(i));
          if (!d.what.params.count("tile")) d.what.params["tile"] = dims_text(decl);
          break;
        }
      }
    }
  }

  // The first type-like identifier of a span, past qualifiers: "float" of `const float x`.
  std::string_view first_type(token_span s) const {
    for (uint32_t k = s.first; k < s.last; ++k) {
      if (tl_.tokens[k].kind != token_kind::identifier) continue;
      const std::string_view t = tl_.text(k);
      if (t == "const" || t == "volatile" || t == "register" || t == "__align__" ||
          t == "alignas" || t == "__shared__" || t == "static" || t == "extern")
        continue;
      return t;
    }
    return {};
  }

  // smem_tiling (fallback for an unbuilt kernel): a __shared__ array written, inside a loop that
  // also holds __syncthreads(), from an expression reading a pointer parameter (global memory).
  // Tiles filled by cp.async helpers are not seen here (the PTX detector sees them).
  void shared_tiles() {
    for (size_t fi = 0; fi < st_.functions.size(); ++fi) {
      const function& f = st_.functions[fi];
      if (f.where == branch::inactive || f.body.empty()) continue;
      std::set<std::string> shared, pointers;
      for (const param& p : f.params)
        if (p.pointer && !p.name.empty()) pointers.insert(p.name);
      for (uint32_t i = f.body.first; i < f.body.last; ++i) {
        if (!ident(i, "__shared__")) continue;
        const token_span s = statement_of(i);
        for (uint32_t k = i + 1; k < s.last; ++k)
          if (tl_.tokens[k].kind == token_kind::identifier &&
              punct(static_cast<uint32_t>(tl_.next_code(k)), "["))
            shared.insert(std::string(tl_.text(k)));
      }
      if (shared.empty()) continue;
      for (const loop& l : st_.loops) {
        if (l.function != static_cast<int32_t>(fi)) continue;
        bool sync = false;
        for (const call& c : st_.calls)
          if (c.name == "__syncthreads" && l.whole.contains(c.name_token)) sync = true;
        if (!sync) continue;
        for (uint32_t i = l.body.first; i < l.body.last; ++i) {
          if (tl_.tokens[i].kind != token_kind::identifier ||
              !shared.count(std::string(tl_.text(i))))
            continue;
          uint32_t after = 0;
          if (subscripts_after(i, &after) < 1 || !punct(after, "=")) continue;
          const token_span s = statement_of(i);
          bool reads_global = false;
          for (uint32_t k = after + 1; k < s.last; ++k)
            if (tl_.tokens[k].kind == token_kind::identifier &&
                pointers.count(std::string(tl_.text(k))))
              reads_global = true;
          if (reads_global) {
            set_.add("smem_tiling", f.name, evidence_at(i));
            break;
          }
        }
      }
    }
  }

  std::string path_;
  std::vector<std::string_view> lines_;
  token_list tl_;
  structure st_;
  language lang_;
  detail::detection_set& set_;
};

}  // namespace

std::vector<detection> detect_source(const kernel_bundle& b) {
  detail::detection_set set(detection_method::source);
  const language lang = b.manifest.lang;
  // Compile flags apply to every function of the bundle: their locus is "<flags>".
  for (const auto& flag : b.manifest.flags)
    if (flag == "--use_fast_math" || flag == "-use_fast_math" || flag == "-ffast-math" ||
        flag == "-Ofast")
      set.add("fast_math", "<flags>", "kernel.toml flags: " + flag);
  for (const auto& [path, text] : b.sources) {
    if (!is_source_file(path)) continue;
    file_scan scan(path, text, lang, set);
    scan.run();
  }
  return set.take("in the source");
}

}  // namespace lathe::agent::rules
