// The rule engine's front end (source/token.h, anchor.h) on hostile source: code-looking
// text in comments, strings and raw strings, macros, nested templates, lambdas, #if branches,
// CUDA launches; and on every kernel shipped in tasks/.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "source/anchor.h"
#include "source/token.h"

namespace {

using namespace lathe::agent::rules;
namespace fs = std::filesystem;

// Source, tokens and structure together: the token list views the string, so the three never
// move apart.
struct parsed {
  explicit parsed(std::string s) : src(std::move(s)), tl(tokenize(src)), st(analyze(tl)) {}
  parsed(const parsed&) = delete;
  parsed& operator=(const parsed&) = delete;

  std::string src;
  token_list tl;
  structure st;

  std::vector<std::string> texts() const {
    std::vector<std::string> out;
    for (size_t i = 0; i < tl.tokens.size(); ++i) out.emplace_back(tl.text(i));
    return out;
  }
  // Index of the n-th (1-based) token with this text; aborts the test if absent.
  size_t find(std::string_view text, int nth = 1) const {
    for (size_t i = 0; i < tl.tokens.size(); ++i)
      if (tl.text(i) == text && --nth == 0) return i;
    ADD_FAILURE() << "no token '" << text << "'";
    return 0;
  }
  const function* fn(std::string_view name) const {
    for (const auto& f : st.functions)
      if (f.name == name) return &f;
    return nullptr;
  }
  std::vector<std::string> function_names() const {
    std::vector<std::string> out;
    for (const auto& f : st.functions) out.push_back(f.name);
    return out;
  }
  std::vector<std::string> loop_anchors() const {
    std::vector<std::string> out;
    for (const auto& l : st.loops) out.push_back(l.anchor);
    return out;
  }
  anchor_target must(std::string_view anchor) const {
    auto r = resolve(tl, st, anchor);
    EXPECT_TRUE(r.has_value()) << anchor << ": " << (r ? "" : r.error().message);
    return r ? *r : anchor_target{};
  }
  std::string text(token_span s) const { return std::string(span_text(tl, s)); }
};

using strings = std::vector<std::string>;

// ---- tokenizer ---------------------------------------------------------------------------------

TEST(Tokenizer, CodeInsideCommentsIsComment) {
  parsed p(
      "// for (int i = 0; i < n; ++i) { __global__ void k(float* x) {\n"
      "/* __global__ void hidden(float* y) { for (;;) { } }\n"
      "   k<<<1, 1>>>(y); */\n"
      "// a line comment ending in a backslash swallows the next line \\\n"
      "for (int j = 0; j < 9; ++j) {\n"
      "int after = 1;\n");
  ASSERT_TRUE(p.tl.errors.empty()) << p.tl.errors[0];
  ASSERT_EQ(p.tl.tokens.size(), 8u);
  EXPECT_EQ(p.tl.tokens[0].kind, token_kind::comment);
  EXPECT_EQ(p.tl.tokens[1].kind, token_kind::comment);
  EXPECT_EQ(p.tl.tokens[1].line, 2u);
  EXPECT_EQ(p.tl.tokens[2].kind, token_kind::comment);
  EXPECT_NE(p.tl.text(2).find("for (int j"), std::string_view::npos);
  EXPECT_EQ(p.tl.text(3), "int");
  EXPECT_EQ(p.tl.tokens[3].line, 6u);
  EXPECT_EQ(p.tl.tokens[3].depth, 0);
  EXPECT_TRUE(p.st.functions.empty());
  EXPECT_TRUE(p.st.loops.empty());
  EXPECT_TRUE(p.st.launches.empty());
  EXPECT_EQ(p.tl.next_code(0), 3u);
  EXPECT_EQ(p.tl.prev_code(3), -1);
}

TEST(Tokenizer, CodeInsideStringsIsString) {
  parsed p(
      "const char* s = \"for (int i = 0; i < n; ++i) { /* no comment */ // none\";\n"
      "const char* e = \"quote \\\" still inside { \\\\\";\n"
      "auto a = u8\"x{\"; auto b = L\"(y\"; auto c = U\"z]\"; auto d = u\"w\"; auto v = "
      "\"sv\"sv;\n");
  ASSERT_TRUE(p.tl.errors.empty()) << p.tl.errors[0];
  std::vector<std::string> strs;
  for (const token& t : p.tl.tokens)
    if (t.kind == token_kind::string) strs.emplace_back(p.tl.text(t));
  EXPECT_EQ(strs, (strings{"\"for (int i = 0; i < n; ++i) { /* no comment */ // none\"",
                           "\"quote \\\" still inside { \\\\\"", "u8\"x{\"", "L\"(y\"", "U\"z]\"",
                           "u\"w\"", "\"sv\"sv"}));
  for (const token& t : p.tl.tokens) EXPECT_EQ(t.depth, 0) << p.tl.text(t);
  EXPECT_TRUE(p.st.loops.empty());
}

TEST(Tokenizer, RawStringsWithCustomDelimiters) {
  parsed p(
      "auto r1 = R\"xy(a )\" b */ c ( for (;;) {\n"
      "   } )xz\" )xy\";\n"
      "auto r2 = u8R\"(\"quoted\" \\n not an escape)\";\n"
      "auto r3 = LR\"--(/* )-\" )--\"; int tail;\n");
  ASSERT_TRUE(p.tl.errors.empty()) << p.tl.errors[0];
  std::vector<std::string> strs;
  for (const token& t : p.tl.tokens)
    if (t.kind == token_kind::string) strs.emplace_back(p.tl.text(t));
  ASSERT_EQ(strs.size(), 3u);
  EXPECT_EQ(strs[0], "R\"xy(a )\" b */ c ( for (;;) {\n   } )xz\" )xy\"");
  EXPECT_EQ(strs[1], "u8R\"(\"quoted\" \\n not an escape)\"");
  EXPECT_EQ(strs[2], "LR\"--(/* )-\" )--\"");
  const size_t tail = p.find("tail");
  EXPECT_EQ(p.tl.tokens[tail].line, 4u);
  EXPECT_EQ(p.tl.tokens[tail].kind, token_kind::identifier);
  EXPECT_TRUE(p.st.loops.empty());
}

TEST(Tokenizer, UnterminatedLiteralsAreErrorsWithLines) {
  parsed raw("int a;\nauto r = R\"d(never closed )x\";\nint b;\n");
  ASSERT_EQ(raw.tl.errors.size(), 1u);
  EXPECT_EQ(raw.tl.errors[0], "line 2: unterminated raw string");
  parsed str("int a;\nint b;\nconst char* s = \"open\nint c;\n");
  ASSERT_EQ(str.tl.errors.size(), 1u);
  EXPECT_EQ(str.tl.errors[0], "line 3: unterminated string literal");
  EXPECT_EQ(str.tl.tokens[str.find("c")].line, 4u);  // the next line is code again
  parsed com("int a;\n/* open\nint b;\n");
  ASSERT_EQ(com.tl.errors.size(), 1u);
  EXPECT_EQ(com.tl.errors[0], "line 2: unterminated /* comment");
}

TEST(Tokenizer, CharLiteralsAndNumbers) {
  parsed p(
      "char q = '\"'; char a = '\\''; char b = '\\\\'; auto w = u'x'; auto l = L'{';\n"
      "long m = 1'000'000; double h = 0x1p-3; float e = 1.5e+3f; float d = .5f; int o = 0'7;\n");
  ASSERT_TRUE(p.tl.errors.empty()) << p.tl.errors[0];
  std::vector<std::string> chars, nums;
  for (const token& t : p.tl.tokens) {
    if (t.kind == token_kind::character) chars.emplace_back(p.tl.text(t));
    if (t.kind == token_kind::number) nums.emplace_back(p.tl.text(t));
    EXPECT_NE(t.kind, token_kind::string) << p.tl.text(t);
    EXPECT_EQ(t.depth, 0);
  }
  EXPECT_EQ(chars, (strings{"'\"'", "'\\''", "'\\\\'", "u'x'", "L'{'"}));
  EXPECT_EQ(nums, (strings{"1'000'000", "0x1p-3", "1.5e+3f", ".5f", "0'7"}));
}

TEST(Tokenizer, LongestMatchPunctuation) {
  parsed p(
      "std::vector<std::map<int,int>> v; x = a >> b; y >>= 2; z = a <=> b; q = p->*m;\n"
      "std::vector<std::vector<std::vector<int>>> w; k<<<g, b>>>(x); f(args...);\n");
  const strings t = p.texts();
  for (const char* op : {">>", ">>=", "<=>", "->*", ">>>", "<<<", "...", "::"})
    EXPECT_NE(std::find(t.begin(), t.end(), op), t.end()) << op;
  EXPECT_EQ(std::count(t.begin(), t.end(), ">>"), 2);   // template close and shift
  EXPECT_EQ(std::count(t.begin(), t.end(), ">>>"), 2);  // triple template close and launch
  EXPECT_EQ(std::count(t.begin(), t.end(), ">"), 0);
  // The `>>>` of three closing templates is no launch; the real one is.
  parsed q("void h() { std::vector<std::vector<std::vector<int>>> w; k<<<g, b>>>(x); }\n");
  ASSERT_EQ(q.st.launches.size(), 1u);
  EXPECT_EQ(q.st.launches[0].kernel, "k");
}

TEST(Tokenizer, DirectivesAreOneTokenOnlyAtLineStart) {
  parsed p(
      "#define LOOP(n) \\\n"
      "  for (int i = 0; i < (n); ++i) { \\\n"
      "    body(i); }\n"
      "#define SPAN 1 /* a comment that\n"
      "   goes on */ + 2\n"
      "#error don't stop here\n"
      "int x = 1; # not a directive\n"
      "  #  pragma   omp parallel \\\n"
      "     for  /* c */ schedule(static) // trailing\n"
      "#define STR(x) #x \"//not a comment\"\n"
      "void f() { LOOP(4) }\n");
  ASSERT_TRUE(p.tl.errors.empty()) << p.tl.errors[0];
  std::vector<size_t> pp;
  for (size_t i = 0; i < p.tl.tokens.size(); ++i)
    if (p.tl.tokens[i].kind == token_kind::preprocessor) pp.push_back(i);
  ASSERT_EQ(pp.size(), 5u);
  EXPECT_EQ(p.tl.tokens[pp[0]].line, 1u);
  EXPECT_EQ(directive_name(p.tl.text(pp[0])), "define");
  EXPECT_EQ(directive_body(p.tl.text(pp[0])), "LOOP(n) for (int i = 0; i < (n); ++i) { body(i); }");
  EXPECT_EQ(directive_body(p.tl.text(pp[1])), "SPAN 1 + 2");
  EXPECT_EQ(directive_name(p.tl.text(pp[2])), "error");
  EXPECT_EQ(p.tl.tokens[pp[3]].line, 8u);
  EXPECT_EQ(directive_name(p.tl.text(pp[3])), "pragma");
  EXPECT_EQ(directive_body(p.tl.text(pp[3])), "omp parallel for schedule(static)");
  EXPECT_EQ(directive_body(p.tl.text(pp[4])), "STR(x) #x \"//not a comment\"");
  // `#` after code on a line is punctuation.
  const size_t hash = p.find("#");
  EXPECT_EQ(p.tl.tokens[hash].kind, token_kind::punct);
  EXPECT_EQ(p.tl.tokens[hash].line, 7u);
  // The loop inside the macro is not a loop of f; the macro's use is a call.
  ASSERT_EQ(p.function_names(), strings{"f"});
  EXPECT_TRUE(p.st.loops.empty());
  ASSERT_EQ(p.st.calls.size(), 1u);
  EXPECT_EQ(p.st.calls[0].name, "LOOP");
}

TEST(Tokenizer, BracketMatchingAndDepth) {
  parsed p("void f(int a[3]) { g([&](int x) { return (x); }); }\n");
  ASSERT_TRUE(p.tl.errors.empty());
  const size_t lp = p.find("("), rb = p.tl.tokens.size() - 1;
  EXPECT_EQ(p.tl.tokens[lp].match, static_cast<int32_t>(p.find(")")));
  EXPECT_EQ(p.tl.tokens[p.find("{")].match, static_cast<int32_t>(rb));
  EXPECT_EQ(p.tl.tokens[rb].match, static_cast<int32_t>(p.find("{")));
  EXPECT_EQ(p.tl.tokens[p.find("{")].depth, 0);  // a bracket is outside itself
  EXPECT_EQ(p.tl.tokens[rb].depth, 0);
  EXPECT_EQ(p.tl.tokens[p.find("3")].depth, 2);
  EXPECT_EQ(p.tl.tokens[p.find("x", 2)].depth, 4);  // inside { g( { (x)
  EXPECT_EQ(p.tl.tokens[p.find("void")].match, -1);

  parsed bad("void f() {\n  g(a];\n}\n)\n");
  ASSERT_EQ(bad.tl.errors.size(), 3u) << ::testing::PrintToString(bad.tl.errors);
  EXPECT_EQ(bad.tl.errors[0], "line 2: unmatched ']'");
  EXPECT_EQ(bad.tl.errors[1], "line 2: '(' is not closed before '}' on line 3");
  EXPECT_EQ(bad.tl.errors[2], "line 4: unmatched ')'");
}

// ---- #if branches
// ---------------------------------------------------------------------------------

branch where_of(const parsed& p, std::string_view name) {
  return p.tl.tokens[p.find(name)].where;
}

TEST(Branches, DecidedAndUndecidedConditions) {
  parsed p(
      "int a0;\n"
      "#if 0\n int a1; don't { (\n#else\n int a2;\n#endif\n"
      "#if 1\n int a3;\n#else\n int a4;\n#endif\n"
      "#ifdef __CUDA_ARCH__\n int a5;\n#else\n int a6;\n#endif\n"
      "#if 0 && defined(X)\n int a7;\n#elif 1 || defined(Y)\n int a8;\n#else\n int a9;\n#endif\n"
      "#if N > 2\n int b0;\n#elif 1\n int b1;\n#endif\n"
      "#if (2 * 3 == 6) && !0 && (1 ? 1 : X) && 0x10 == 16\n int b2;\n#endif\n"
      "#if defined(X) && 0\n int b3;\n#endif\n"
      "#ifndef Y\n int b4;\n#endif\n"
      "#if 0 /* a comment\n spanning lines */\n int b5;\n#endif\n"
      "int b6;\n");
  ASSERT_TRUE(p.tl.errors.empty()) << p.tl.errors[0];
  EXPECT_EQ(where_of(p, "a0"), branch::active);
  EXPECT_EQ(where_of(p, "a1"), branch::inactive);
  EXPECT_EQ(where_of(p, "don"), branch::inactive);  // "don't" in #if 0: no literal error
  EXPECT_EQ(where_of(p, "a2"), branch::active);
  EXPECT_EQ(where_of(p, "a3"), branch::active);
  EXPECT_EQ(where_of(p, "a4"), branch::inactive);
  EXPECT_EQ(where_of(p, "a5"), branch::conditional);
  EXPECT_EQ(where_of(p, "a6"), branch::conditional);
  EXPECT_EQ(where_of(p, "a7"), branch::inactive);
  EXPECT_EQ(where_of(p, "a8"), branch::active);
  EXPECT_EQ(where_of(p, "a9"), branch::inactive);
  EXPECT_EQ(where_of(p, "b0"), branch::conditional);
  EXPECT_EQ(where_of(p, "b1"), branch::conditional);  // only if N > 2 was false
  EXPECT_EQ(where_of(p, "b2"), branch::active);
  EXPECT_EQ(where_of(p, "b3"), branch::inactive);
  EXPECT_EQ(where_of(p, "b4"), branch::conditional);
  EXPECT_EQ(where_of(p, "b5"), branch::inactive);
  EXPECT_EQ(where_of(p, "b6"), branch::active);
  // The directive lines themselves lie in the enclosing branch.
  EXPECT_EQ(p.tl.tokens[p.find("#else")].where, branch::active);
}

TEST(Branches, NestedGroups) {
  parsed p(
      "#ifdef A\n int c1;\n"
      "#  if 0\n int c2;\n#    if 1\n int c3;\n#    endif\n#  else\n int c4;\n#  endif\n"
      "#else\n int c5;\n#endif\n"
      "#if 0\n#  ifdef B\n int c6;\n#  else\n int c7;\n#  endif\n#elif 1\n int c8;\n#endif\n");
  ASSERT_TRUE(p.tl.errors.empty()) << p.tl.errors[0];
  EXPECT_EQ(where_of(p, "c1"), branch::conditional);
  EXPECT_EQ(where_of(p, "c2"), branch::inactive);
  EXPECT_EQ(where_of(p, "c3"), branch::inactive);  // active inside inactive stays inactive
  EXPECT_EQ(where_of(p, "c4"), branch::conditional);
  EXPECT_EQ(where_of(p, "c5"), branch::conditional);
  EXPECT_EQ(where_of(p, "c6"), branch::inactive);
  EXPECT_EQ(where_of(p, "c7"), branch::inactive);
  EXPECT_EQ(where_of(p, "c8"), branch::active);
}

TEST(Branches, StructureErrorsAndIncludeGuard) {
  parsed p("int a;\n#endif\n#else\n#if 1\nint b;\n#else\n#else\n#endif\n#ifdef X\nint c;\n");
  EXPECT_EQ(p.tl.errors, (strings{"line 2: #endif without #if", "line 3: #else without #if",
                                  "line 7: #else after #else", "line 9: #if without #endif"}));
  parsed g("// header\n#ifndef LATHE_X_H\n#define LATHE_X_H\nint guarded;\n#endif\n");
  EXPECT_EQ(where_of(g, "guarded"), branch::active);
  parsed ng("int code;\n#ifndef LATHE_X_H\n#define LATHE_X_H\nint maybe;\n#endif\n");
  EXPECT_EQ(where_of(ng, "maybe"), branch::conditional);  // not first in the file: no guard
}

TEST(Branches, EditsByByteRange) {
  const std::string src =
      "int a;\n#if 0\nint dead;\n#else\nint live;\n#endif\n#ifdef X\n#endif\nint z;\n";
  parsed p(src);
  auto at = [&](std::string_view s) { return src.find(s); };
  auto where = [&](size_t b, size_t e) { return branch_of_bytes(p.tl, b, e); };
  EXPECT_EQ(where(at("dead"), at("dead") + 4), branch::inactive);
  EXPECT_EQ(where(at("live"), at("live") + 4), branch::active);
  EXPECT_EQ(where(at("int a"), at("live")), branch::inactive);             // spans the dead branch
  EXPECT_EQ(where(at("int dead"), at("int dead")), branch::inactive);      // insertion point
  EXPECT_EQ(where(at("\nint dead"), at("\nint dead")), branch::inactive);  // blank after #if 0
  EXPECT_EQ(where(at("int z"), at("int z")), branch::active);
  EXPECT_EQ(where(at("#endif\nint z"), at("#endif\nint z")), branch::conditional);  // empty
  EXPECT_EQ(where(0, 0), branch::active);
  EXPECT_EQ(where(src.size(), src.size()), branch::active);
  parsed once("#pragma once\n// guard\n#ifndef G_H\n#define G_H\nint g;\n#endif\n");
  EXPECT_EQ(where_of(once, "g"), branch::active);
}

TEST(Branches, BracketsSplitAcrossBranches) {
  // Each branch opens the body; the compiled one pairs with the shared closing brace.
  parsed p(
      "#ifdef USE_DOUBLE\n"
      "__global__ void k(double* x) {\n"
      "#else\n"
      "__global__ void k(float* x) {\n"
      "#endif\n"
      "  for (int i = 0; i < 4; ++i) x[i] = 0;\n"
      "}\n"
      "#if 0\n"
      "void broken( {\n"
      "#endif\n"
      "void after() { while (true) {} }\n");
  ASSERT_TRUE(p.tl.errors.empty()) << p.tl.errors[0];
  EXPECT_EQ(p.function_names(), (strings{"k", "after"}));
  EXPECT_EQ(p.st.functions[0].where, branch::conditional);
  EXPECT_EQ(p.loop_anchors(), (strings{"loop:k/i", "loop:after/loop1"}));
  EXPECT_EQ(p.st.functions[1].where, branch::active);
}

// ---- structure
// --------------------------------------------------------------------------------------

TEST(Structure, NestedTemplatesAndShiftsInSignatures) {
  parsed p(
      "template <class T, template <class> class C = std::vector>\n"
      "std::vector<std::map<int,int>> f(std::map<int, std::vector<int>> m, int b = 1 >> 2,\n"
      "                                 const C<T>& c = C<T>{}) {\n"
      "  return g<std::map<int, int>>(m, a >> b, c);\n"
      "}\n");
  ASSERT_TRUE(p.tl.errors.empty());
  ASSERT_EQ(p.st.functions.size(), 1u);
  const function& f = p.st.functions[0];
  EXPECT_EQ(f.name, "f");
  EXPECT_EQ(f.result, "std::vector<std::map<int, int>>");
  EXPECT_EQ(p.text(f.template_header),
            "template <class T, template <class> class C = std::vector>");
  ASSERT_EQ(f.params.size(), 3u);
  EXPECT_EQ(f.params[0].name, "m");
  EXPECT_EQ(f.params[0].type, "std::map<int, std::vector<int>>");
  EXPECT_EQ(f.params[1].name, "b");
  EXPECT_EQ(p.text(f.params[1].tokens), "int b = 1 >> 2");
  EXPECT_EQ(f.params[2].name, "c");
  EXPECT_TRUE(f.params[2].is_const);
  EXPECT_FALSE(f.params[2].pointer);
  ASSERT_EQ(p.st.calls.size(), 1u);
  EXPECT_EQ(p.st.calls[0].name, "g");
  EXPECT_EQ(p.text(p.st.calls[0].template_args), "<std::map<int, int>>");
  ASSERT_EQ(p.st.calls[0].arguments.size(), 3u);
  EXPECT_EQ(p.text(p.st.calls[0].arguments[1]), "a >> b");
}

TEST(Structure, LambdasDoNotConfuseFunctionDetection) {
  parsed p(
      "auto square = [](int x) { return x * x; };\n"
      "namespace ns {\n"
      "int total(const std::vector<int>& v) {\n"
      "  int s = 0;\n"
      "  auto add = [&](int x) mutable -> int { for (int j = 0; j < x; ++j) s += j; return s; };\n"
      "  std::for_each(v.begin(), v.end(), [&](int x) { s += add(x); });\n"
      "  return [](int y) { return y; }(s);\n"
      "}\n"
      "struct S {\n"
      "  S(int a) : a_(a), b_{a} { for (int q = 0; q < a; ++q) a_ += q; }\n"
      "  int get() const noexcept { return a_; }\n"
      "  int a_, b_;\n"
      "};\n"
      "}  // namespace ns\n");
  ASSERT_TRUE(p.tl.errors.empty());
  EXPECT_EQ(p.function_names(), (strings{"total", "S", "get"}));
  EXPECT_EQ(p.loop_anchors(), (strings{"loop:total/j", "loop:S/q"}));
  EXPECT_EQ(p.st.loops[0].function, 0);
  const call* for_each = nullptr;
  for (const call& c : p.st.calls)
    if (c.name == "std::for_each") for_each = &c;
  ASSERT_NE(for_each, nullptr);
  ASSERT_EQ(for_each->arguments.size(), 3u);
  EXPECT_EQ(p.text(for_each->arguments[2]), "[&](int x) { s += add(x); }");
  EXPECT_EQ(p.must("call:add@total").index,
            static_cast<int32_t>(std::find_if(p.st.calls.begin(), p.st.calls.end(),
                                              [](const call& c) { return c.name == "add"; }) -
                                 p.st.calls.begin()));
  EXPECT_EQ(p.fn("S")->params[0].name, "a");
  EXPECT_EQ(p.fn("get")->result, "int");
}

TEST(Structure, QualifiersExternCAndTemplates) {
  parsed p(
      "extern \"C\" {\n"
      "int plain(void) { return 0; }\n"
      "}\n"
      "extern \"C\" __global__ void __launch_bounds__(256, 2) kern(int n) {}\n"
      "static inline __device__ __forceinline__ float sq(float v) { return v * v; }\n"
      "template <typename T, int N>\n"
      "__global__ void tk(T* __restrict__ out) {}\n"
      "int declared_only(int);\n"
      "struct geometry { int h; };\n"
      "geometry make(int h) { return geometry{h}; }\n");
  ASSERT_TRUE(p.tl.errors.empty());
  EXPECT_EQ(p.function_names(), (strings{"plain", "kern", "sq", "tk", "make"}));
  EXPECT_EQ(p.fn("plain")->qualifiers, strings{"extern \"C\""});
  EXPECT_TRUE(p.fn("plain")->params.empty());
  EXPECT_EQ(p.fn("kern")->qualifiers,
            (strings{"extern \"C\"", "__global__", "__launch_bounds__(256, 2)"}));
  EXPECT_TRUE(p.fn("kern")->is_kernel());
  EXPECT_FALSE(p.fn("sq")->is_kernel());
  EXPECT_EQ(p.fn("sq")->qualifiers, (strings{"static", "inline", "__device__", "__forceinline__"}));
  EXPECT_EQ(p.fn("sq")->result, "float");
  EXPECT_EQ(p.text(p.fn("tk")->template_header), "template <typename T, int N>");
  EXPECT_EQ(p.text(p.fn("tk")->whole).substr(0, 8), "template");
  EXPECT_EQ(p.fn("make")->result, "geometry");
}

TEST(Structure, PointerConstAndRestrictParameters) {
  parsed p(
      "__global__ void k(const float* __restrict__ A, float* __restrict B, float const* C,\n"
      "                  float* const D, int n, float v[], const float& r, float (&acc)[4][2],\n"
      "                  const std::vector<float*>& vs, float*, unsigned) {}\n");
  const function& f = p.st.functions.at(0);
  ASSERT_EQ(f.params.size(), 11u);
  auto check = [&](size_t i, const char* name, bool ptr, bool cst, bool rst) {
    SCOPED_TRACE(name);
    EXPECT_EQ(f.params[i].name, name);
    EXPECT_EQ(f.params[i].pointer, ptr);
    EXPECT_EQ(f.params[i].is_const, cst);
    EXPECT_EQ(f.params[i].restrict, rst);
  };
  check(0, "A", true, true, true);
  check(1, "B", true, false, true);
  check(2, "C", true, true, false);
  check(3, "D", true, false, false);  // a const pointer to mutable data
  check(4, "n", false, false, false);
  check(5, "v", true, false, false);
  check(6, "r", false, true, false);
  check(7, "acc", false, false, false);
  check(8, "vs", false, true, false);  // the `*` is a template argument's
  check(9, "", true, false, false);
  check(10, "", false, false, false);
  EXPECT_EQ(f.params[0].type, "const float* __restrict__");
  EXPECT_EQ(f.params[7].type, "float(&)[4][2]");
  EXPECT_EQ(p.must("param:k/A").span.first, f.params[0].tokens.first);
}

TEST(Structure, CudaLaunchesWithTwoThreeFourConfigArguments) {
  parsed p(
      "template <class T> __global__ void k(T* x) {}\n"
      "void host(float* x, cudaStream_t s) {\n"
      "  k<<<grid, block>>>(x);\n"
      "  k<<<dim3(g, 1), 128, smem>>>(x);\n"
      "  k<float><<<g, b, 0, s>>>(x);\n"
      "  ns::relu<float, 4><<<(n + 255) / 256, 256, sizeof(float) * 32, s>>>(x, n >> 1);\n"
      "#ifdef FAST\n"
      "  k<<<1, 1>>>(x);\n"
      "#endif\n"
      "}\n");
  ASSERT_TRUE(p.tl.errors.empty());
  ASSERT_EQ(p.st.launches.size(), 5u);
  const auto& L = p.st.launches;
  EXPECT_EQ(L[0].config_args.size(), 2u);
  EXPECT_EQ(L[1].config_args.size(), 3u);
  EXPECT_EQ(p.text(L[1].config_args[0]), "dim3(g, 1)");
  EXPECT_EQ(L[2].config_args.size(), 4u);
  EXPECT_EQ(p.text(L[2].kernel_span), "k<float>");
  EXPECT_EQ(L[2].kernel, "k");
  EXPECT_EQ(L[3].kernel, "ns::relu");
  ASSERT_EQ(L[3].config_args.size(), 4u);
  EXPECT_EQ(p.text(L[3].config_args[2]), "sizeof(float) * 32");
  ASSERT_EQ(L[3].arguments.size(), 2u);
  EXPECT_EQ(p.text(L[3].arguments[1]), "n >> 1");
  EXPECT_EQ(p.text(L[0].whole), "k<<<grid, block>>>(x)");
  EXPECT_EQ(L[4].where, branch::conditional);
  for (const launch& l : L) EXPECT_EQ(l.function, 1);
  // Launches are not calls; the `dim3(...)` and `sizeof` inside are (or are not) on their own.
  for (const call& c : p.st.calls) EXPECT_NE(c.name, "k");
  EXPECT_EQ(p.must("launch:relu").index, 3);
  EXPECT_EQ(p.must("launch:k#3").index, 2);
  EXPECT_EQ(p.must("launch:k@host#4").where, branch::conditional);
  auto amb = resolve(p.tl, p.st, "launch:k");
  ASSERT_FALSE(amb.has_value());
  EXPECT_EQ(amb.error().code, lathe::errc::invalid_argument);
  EXPECT_NE(amb.error().message.find("launch:k#4"), std::string::npos) << amb.error().message;
}

TEST(Structure, LoopsInductionVariablesAndPragmas) {
  parsed p(
      "void f(float* x, int n, const std::vector<int>& v) {\n"
      "#pragma omp parallel for schedule(static)\n"
      "  for (int64_t r = 0; r < n; ++r) {\n"
      "    int64_t c = 0;\n"
      "    for (; c + 8 <= n; c += 8) x[c] = 0;\n"
      "#pragma unroll 4\n"
      "    // a comment between the pragma and its loop\n"
      "    for (; c < n; c++)\n"
      "#pragma omp simd\n"
      "      for (size_t i = 0, j = 1; i < 4; ++i) x[i] += j;\n"
      "  }\n"
      "  for (int e : v) x[e] = 1;\n"
      "  int k = 0;\n"
      "  while (k < n) { ++k; }\n"
      "  do { --k; } while (k > 0);\n"
      "  for (;;) break;\n"
      "  for (auto [a, b] : pairs) use(a, b);\n"
      "}\n");
  ASSERT_TRUE(p.tl.errors.empty());
  EXPECT_EQ(p.loop_anchors(),
            (strings{"loop:f/r", "loop:f/r/c#1", "loop:f/r/c#2", "loop:f/r/c#2/i", "loop:f/e",
                     "loop:f/loop3", "loop:f/loop4", "loop:f/loop5", "loop:f/loop6"}));
  const auto& L = p.st.loops;
  EXPECT_EQ(L[1].locus, "f/r/c");
  EXPECT_EQ(L[3].locus, "f/r/c/i");
  EXPECT_EQ(L[3].parent, 2);
  EXPECT_EQ(L[2].parent, 0);
  EXPECT_EQ(L[0].parent, -1);
  EXPECT_TRUE(L[0].braced);
  EXPECT_FALSE(L[2].braced);
  EXPECT_EQ(p.text(L[2].body), "for (size_t i = 0, j = 1; i < 4; ++i) x[i] += j;");
  EXPECT_EQ(p.text(L[0].header), "(int64_t r = 0; r < n; ++r)");
  ASSERT_EQ(L[0].pragmas.size(), 1u);
  EXPECT_EQ(directive_body(p.tl.text(L[0].pragmas[0])), "omp parallel for schedule(static)");
  ASSERT_EQ(L[2].pragmas.size(), 1u);
  EXPECT_EQ(directive_body(p.tl.text(L[2].pragmas[0])), "unroll 4");
  EXPECT_TRUE(L[1].pragmas.empty());
  EXPECT_EQ(L[3].pragmas.size(), 1u);
  EXPECT_TRUE(L[4].range_for);
  EXPECT_EQ(L[5].kind, loop_kind::while_loop);
  EXPECT_EQ(L[6].kind, loop_kind::do_loop);
  EXPECT_EQ(p.text(L[6].header), "(k > 0)");
  EXPECT_EQ(p.text(L[6].whole), "do { --k; } while (k > 0);");
  EXPECT_EQ(L[7].induction, "");
  EXPECT_EQ(L[8].induction, "");
  // Pragmas as anchors, by their first words.
  const anchor_target u = p.must("pragma:unroll@f/r/c#2");
  EXPECT_EQ(u.kind, anchor_kind::pragma);
  EXPECT_EQ(u.span.first, L[2].pragmas[0]);
  EXPECT_EQ(u.locus, "f/r/c");
  EXPECT_EQ(p.must("pragma:omp_parallel_for@f/r").span.first, L[0].pragmas[0]);
  EXPECT_EQ(p.must("pragma:omp@f/r/c#2/i").locus, "f/r/c/i");
  auto none = resolve(p.tl, p.st, "pragma:unroll@f/r");
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().code, lathe::errc::not_found);
}

TEST(Structure, CallsAreNotDeclarationsCastsOrKeywords) {
  parsed p(
      "__global__ void g(const float* in, float* out, int n) {\n"
      "  dim3 grid(1, 2);\n"
      "  std::vector<int> v(n);\n"
      "  float x = sqrtf(in[0]);\n"
      "  if (check(x)) out[0] = static_cast<float>(sizeof(x));\n"
      "  float y = __ldg(in + 1) + __ldg(&in[2]) * std::max(a, b) + max(c, d);\n"
      "  T* q = make<T>(x); obj.run(1); p->go();\n"
      "  asm volatile(\"bar.sync 0;\" ::: \"memory\");\n"
      "  return helper(a < b, c > d);\n"
      "}\n");
  ASSERT_TRUE(p.tl.errors.empty());
  strings names;
  for (const call& c : p.st.calls) names.push_back(c.name);
  EXPECT_EQ(names, (strings{"sqrtf", "check", "__ldg", "__ldg", "std::max", "max", "make", "run",
                            "go", "helper"}));
  EXPECT_EQ(p.st.calls.back().arguments.size(), 2u);
  const anchor_target second = p.must("call:__ldg@g#2");
  EXPECT_EQ(p.text(second.span), "__ldg(&in[2])");
  EXPECT_EQ(second.locus, "g");
  EXPECT_EQ(p.st.calls[2].anchor, "call:__ldg@g#1");
  auto amb = resolve(p.tl, p.st, "call:__ldg@g");
  ASSERT_FALSE(amb.has_value());
  EXPECT_EQ(amb.error().code, lathe::errc::invalid_argument);
  EXPECT_NE(amb.error().message.find("call:__ldg@g#2"), std::string::npos);
  // An unqualified name also matches qualified callees; a qualified one only itself.
  EXPECT_EQ(p.text(p.must("call:max@g#1").span), "std::max(a, b)");
  EXPECT_EQ(p.text(p.must("call:max@g#2").span), "max(c, d)");
  EXPECT_EQ(p.text(p.must("call:std::max@g").span), "std::max(a, b)");
}

TEST(Structure, InactiveAndConditionalCodeIsReported) {
  parsed p(
      "#if 0\n"
      "__global__ void old_kernel(float* x) { for (int i = 0; i < 4; ++i) x[i] = 0; }\n"
      "#endif\n"
      "__global__ void live(float* x) {\n"
      "  for (int i = 0; i < 4; ++i) {\n"
      "#ifdef __CUDA_ARCH__\n"
      "    x[i] = __ldg(x + i);\n"
      "#else\n"
      "    x[i] = x[i];\n"
      "#endif\n"
      "  }\n"
      "#if 0\n"
      "  x[0] = __ldg(x);\n"
      "#endif\n"
      "}\n");
  ASSERT_TRUE(p.tl.errors.empty());
  const anchor_target old = p.must("function:old_kernel");
  EXPECT_EQ(old.where, branch::inactive);
  EXPECT_EQ(p.must("loop:old_kernel/i").where, branch::inactive);
  const anchor_target live = p.must("function:live");
  EXPECT_EQ(live.where, branch::active);
  EXPECT_EQ(live.contains, branch::inactive);
  const anchor_target loop = p.must("loop:live/i");
  EXPECT_EQ(loop.where, branch::active);
  EXPECT_EQ(loop.contains, branch::conditional);
  const anchor_target c1 = p.must("call:__ldg@live#1");
  EXPECT_EQ(c1.where, branch::conditional);
  EXPECT_EQ(c1.locus, "live/i");
  EXPECT_EQ(p.must("call:__ldg@live#2").where, branch::inactive);
  EXPECT_EQ(p.must("call:__ldg@live/i").index, p.must("call:__ldg@live#1").index);
}

// ---- anchors
// ------------------------------------------------------------------------------------------

const char* kGemm =
    "__global__ void gemm_kernel(const float* __restrict__ A, const float* __restrict__ B,\n"
    "                            float* __restrict__ C, int M, int N, int K) {\n"
    "  for (int m = 0; m < M; ++m) {\n"
    "    float acc = 0;\n"
    "#pragma unroll\n"
    "    for (int k = 0; k < K; ++k) acc += __ldg(A + m * K + k) * __ldg(B + k);\n"
    "    C[m] = acc;\n"
    "  }\n"
    "  for (int k = 0; k < K; ++k) C[k] *= 2;\n"
    "}\n"
    "void gemm_kernel(int overload) { while (overload--) {} }\n"
    "void host() { gemm_kernel<<<1, 32>>>(a, b, c, 1, 1, 1); }\n";

TEST(Anchors, ResolveToTheNamedTokens) {
  parsed p(kGemm);
  ASSERT_TRUE(p.tl.errors.empty());
  const anchor_target k = p.must("loop:gemm_kernel#1/m/k");
  EXPECT_EQ(k.kind, anchor_kind::loop);
  EXPECT_EQ(k.locus, "gemm_kernel/m/k");
  EXPECT_EQ(p.text(k.span),
            "for (int k = 0; k < K; ++k) acc += __ldg(A + m * K + k) * __ldg(B + k);");
  EXPECT_EQ(p.must("loop:gemm_kernel#1/k").locus, "gemm_kernel/k");
  EXPECT_EQ(p.must("loop:gemm_kernel#1/loop2").index, p.must("loop:gemm_kernel#1/k").index);
  EXPECT_EQ(p.must("loop:gemm_kernel#2/loop1").locus, "gemm_kernel/loop1");
  const anchor_target a = p.must("param:gemm_kernel#1/A");
  EXPECT_EQ(p.text(a.span), "const float* __restrict__ A");
  EXPECT_EQ(a.kind, anchor_kind::param);
  EXPECT_EQ(a.index, 0);
  const anchor_target l2 = p.must("call:__ldg@gemm_kernel#1#2");
  EXPECT_EQ(p.text(l2.span), "__ldg(B + k)");
  EXPECT_EQ(l2.locus, "gemm_kernel/m/k");
  EXPECT_EQ(p.text(p.must("call:__ldg@gemm_kernel#1/m/k#1").span), "__ldg(A + m * K + k)");
  EXPECT_EQ(p.text(p.must("pragma:unroll@gemm_kernel#1/m/k").span), "#pragma unroll");
  EXPECT_EQ(p.text(p.must("launch:gemm_kernel").span), "gemm_kernel<<<1, 32>>>(a, b, c, 1, 1, 1)");
  EXPECT_EQ(p.must("launch:gemm_kernel").locus, "host");
  const anchor_target f = p.must("function:host");
  EXPECT_EQ(p.text(f.span), "void host() { gemm_kernel<<<1, 32>>>(a, b, c, 1, 1, 1); }");
  EXPECT_EQ(p.st.functions[0].anchor, "function:gemm_kernel#1");
  EXPECT_EQ(p.st.loops[1].anchor, "loop:gemm_kernel#1/m/k");
}

TEST(Anchors, ErrorsNameWhatExists) {
  parsed p(kGemm);
  struct bad {
    const char* anchor;
    lathe::errc code;
    const char* mentions;
  };
  const bad cases[] = {
      {"function:gemm_kernel", lathe::errc::invalid_argument, "function:gemm_kernel#2"},
      {"function:nope", lathe::errc::not_found, "function:host"},
      {"function:gemm_kernel#3", lathe::errc::not_found, "only 2"},
      {"loop:gemm_kernel#1/n", lathe::errc::not_found, "loop:gemm_kernel#1/m"},
      {"loop:gemm_kernel#1/m/q", lathe::errc::not_found, "loop:gemm_kernel#1/m/k"},
      {"loop:gemm_kernel#1/loop7", lathe::errc::not_found, "loop:gemm_kernel#1/k"},
      {"loop:gemm_kernel#1", lathe::errc::invalid_argument, "loop:FUNC/PATH"},
      {"param:gemm_kernel#1/D", lathe::errc::not_found, "A, B, C, M, N, K"},
      // The last #N counts calls, so this names the 1st __ldg of an ambiguous gemm_kernel.
      {"call:__ldg@gemm_kernel#1", lathe::errc::invalid_argument, "function:gemm_kernel#2"},
      {"call:__ldg@gemm_kernel#1/m/k", lathe::errc::invalid_argument, "call:__ldg@gemm_kernel#1#2"},
      {"call:__ldg@gemm_kernel#1#3", lathe::errc::not_found, "only 2"},
      {"call:__ldg", lathe::errc::invalid_argument, "NAME@SCOPE"},
      {"launch:other", lathe::errc::not_found, "launch:gemm_kernel"},
      {"pragma:omp@gemm_kernel#1/m", lathe::errc::not_found, "#pragma"},
      {"banana:x", lathe::errc::invalid_argument, "unknown kind"},
      {"gemm_kernel", lathe::errc::invalid_argument, "KIND:TARGET"},
  };
  for (const bad& b : cases) {
    SCOPED_TRACE(b.anchor);
    auto r = resolve(p.tl, p.st, b.anchor);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code, b.code) << r.error().message;
    EXPECT_NE(r.error().message.find(b.mentions), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find(b.anchor), std::string::npos) << r.error().message;
  }
}

// Truncating hostile source anywhere must never crash the front end, and the structure it finds
// in a prefix must resolve to itself.
TEST(Anchors, EveryPrefixOfHostileSourceIsSafe) {
  const std::string src = std::string(kGemm) +
                          "auto r = R\"x()\")x\"; // c\n#if 0\n{ ' \n#endif\n"
                          "template <class T> void t() { k<T><<<g, b>>>(x); do {} while (0); }\n";
  for (size_t cut = 0; cut <= src.size(); ++cut) {
    parsed p(src.substr(0, cut));
    for (const loop& l : p.st.loops) {
      auto r = resolve(p.tl, p.st, l.anchor);
      ASSERT_TRUE(r.has_value()) << cut << ": " << r.error().message;
    }
  }
}

// ---- shipped kernels
// ---------------------------------------------------------------------------------

std::string read(const fs::path& f) {
  std::ifstream in(f, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<fs::path> shipped_sources() {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(LATHE_SOURCE_DIR) / "tasks")) {
    if (!e.is_regular_file()) continue;
    const fs::path& f = e.path();
    const std::string ext = f.extension().string();
    if (f.string().find("/kernels/") == std::string::npos) continue;
    if (ext == ".cu" || ext == ".cpp" || ext == ".cuh" || ext == ".h" || ext == ".hpp")
      out.push_back(f);
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ShippedKernels, TokenizeCleanlyAndEveryAnchorResolvesToItself) {
  const auto files = shipped_sources();
  ASSERT_GE(files.size(), 20u);  // the tasks/ tree is really there
  for (const fs::path& f : files) {
    SCOPED_TRACE(f.string());
    parsed p(read(f));
    EXPECT_TRUE(p.tl.errors.empty()) << ::testing::PrintToString(p.tl.errors);
    EXPECT_NE(p.fn("lathe_launch"), nullptr);
    for (const token& t : p.tl.tokens) EXPECT_GE(t.depth, 0);
    for (size_t i = 0; i < p.st.functions.size(); ++i)
      EXPECT_EQ(p.must(p.st.functions[i].anchor).index, static_cast<int32_t>(i));
    for (size_t i = 0; i < p.st.loops.size(); ++i) {
      EXPECT_EQ(p.must(p.st.loops[i].anchor).index, static_cast<int32_t>(i));
      EXPECT_FALSE(p.st.loops[i].body.empty());
    }
    for (size_t i = 0; i < p.st.calls.size(); ++i)
      EXPECT_EQ(p.must(p.st.calls[i].anchor).index, static_cast<int32_t>(i));
    for (size_t i = 0; i < p.st.launches.size(); ++i)
      EXPECT_EQ(p.must(p.st.launches[i].anchor).index, static_cast<int32_t>(i));
    // Every CUDA source launches what it defines as a kernel.
    if (f.extension() == ".cu") {
      for (const function& fn : p.st.functions) {
        if (fn.is_kernel()) {
          EXPECT_TRUE(resolve(p.tl, p.st, "launch:" + fn.name).has_value()) << fn.name;
        }
      }
    }
  }
}

TEST(ShippedKernels, GemmCudaExpertStructure) {
  parsed p(read(fs::path(LATHE_SOURCE_DIR) / "tasks/gemm_cuda/kernels/expert/kernel.cu"));
  const function* k = p.fn("gemm_expert");
  ASSERT_NE(k, nullptr);
  EXPECT_TRUE(k->is_kernel());
  EXPECT_EQ(k->qualifiers, (strings{"__global__", "__launch_bounds__(THREADS, MIN_BLOCKS)"}));
  ASSERT_EQ(k->params.size(), 6u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(k->params[i].pointer);
    EXPECT_TRUE(k->params[i].restrict);
    EXPECT_EQ(k->params[i].is_const, i < 2);
  }
  EXPECT_EQ(k->params[2].name, "C");
  // The k-tile main loop, its prologue and the unrolled accumulator clears.
  const anchor_target kt = p.must("loop:gemm_expert/kt");
  EXPECT_TRUE(p.st.loops[kt.index].braced);
  EXPECT_TRUE(p.st.loops[kt.index].pragmas.empty());
  EXPECT_EQ(p.must("pragma:unroll@gemm_expert/s").kind, anchor_kind::pragma);
  EXPECT_EQ(p.must("loop:gemm_expert/mt/nt/q").locus, "gemm_expert/mt/nt/q");
  EXPECT_EQ(p.must("call:load_tile@gemm_expert/kt").locus, "gemm_expert/kt");
  EXPECT_EQ(p.must("call:cp_async_wait@gemm_expert#1").locus, "gemm_expert/kt");
  const anchor_target l = p.must("launch:gemm_expert");
  const launch& ln = p.st.launches[l.index];
  EXPECT_EQ(ln.config_args.size(), 4u);
  EXPECT_EQ(p.text(ln.config_args[3]), "static_cast<cudaStream_t>(args->stream)");
  EXPECT_EQ(ln.arguments.size(), 6u);
  EXPECT_EQ(l.locus, "lathe_launch");
  EXPECT_TRUE(p.fn("lathe_launch")->qualifiers == strings{"extern \"C\""});
  // The mma tile loops: two sibling `mt` loops under kk, told apart only by #N.
  EXPECT_EQ(p.must("loop:warp_mma_tile/kk/mt#2/nt").locus, "warp_mma_tile/kk/mt/nt");
  EXPECT_FALSE(resolve(p.tl, p.st, "loop:warp_mma_tile/kk/mt").has_value());
}

TEST(ShippedKernels, SoftmaxCpuLoopsAndOpenMp) {
  parsed ex(read(fs::path(LATHE_SOURCE_DIR) / "tasks/softmax/kernels/expert/kernel.cpp"));
  const anchor_target r = ex.must("loop:lathe_launch/r");
  const loop& rl = ex.st.loops[r.index];
  ASSERT_EQ(rl.pragmas.size(), 1u);
  EXPECT_EQ(directive_body(ex.tl.text(rl.pragmas[0])), "omp parallel for schedule(static)");
  EXPECT_EQ(ex.must("pragma:omp_parallel_for@lathe_launch/r").span.first, rl.pragmas[0]);
  for (const char* f : {"row_max", "exp_and_sum", "scale_row"})
    for (int i = 1; i <= 3; ++i) {
      const std::string a = std::string("loop:") + f + "/c#" + std::to_string(i);
      EXPECT_EQ(ex.must(a).locus, std::string(f) + "/c");
      EXPECT_TRUE(ex.st.loops[ex.must(a).index].induction == "c");
    }
  EXPECT_EQ(ex.must("call:exp_ps@exp_and_sum/c#1#2").locus, "exp_and_sum/c");
  parsed nv(read(fs::path(LATHE_SOURCE_DIR) / "tasks/softmax/kernels/naive/kernel.cpp"));
  EXPECT_EQ(nv.must("loop:lathe_launch/r/c#2").locus, "lathe_launch/r/c");
  parsed gemm(read(fs::path(LATHE_SOURCE_DIR) / "tasks/gemm/kernels/naive/kernel.cpp"));
  EXPECT_EQ(gemm.must("loop:lathe_launch/i/j/k").locus, "lathe_launch/i/j/k");
  parsed ge(read(fs::path(LATHE_SOURCE_DIR) / "tasks/gemm/kernels/expert/kernel.cpp"));
  const anchor_target jp = ge.must("pragma:omp_for@lathe_launch/jp");
  EXPECT_NE(ge.text(jp.span).find("collapse(2)"), std::string::npos);
}

}  // namespace
