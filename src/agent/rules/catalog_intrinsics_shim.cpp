// lathe's scalar stand-in for the x86 AVX/AVX2/FMA intrinsics (catalog_intrinsics.h): the table
// of what it emulates and the text of `lathe_scalar_m256.inc`, which simd_intrinsics.remove
// writes into a bundle.
//
// What is covered: the intrinsics the shipped CPU experts use (tasks/gemm, softmax, conv2d) plus
// the common rest of AVX/AVX2 on fp32 and int32 lanes — loads and stores (masked, streaming),
// sets, arithmetic, FMA, min/max, compares, blends and logic, rounding and conversions, in-lane
// shuffles, 128-bit halves, prefetches — and the SSE forms a horizontal reduction goes through.
// Doubles, 8/16/64-bit integer lanes, gathers, lane-crossing permutes beyond
// permute2f128/permutevar8x32 and AVX-512 are not: a source that uses one is no site, and the rule
// names it.
//
// Each lane gets the bits the instruction gives, so the gate compares like with like: FMA is
// fmaf (one rounding), max/min return the second operand on NaN or equal zeros (as maxps does),
// conversions round by the current mode and give 0x80000000 out of range, compares follow the
// 32 predicates. tests/rules/intrinsics_test.cpp runs every entry against the real instruction.
//
// The vectorizer is switched off for the whole shim (`#pragma GCC optimize("no-tree-vectorize")`):
// otherwise GCC turns each 8-lane loop back into one ymm instruction, and the kernel would be
// vectorized exactly as before under other names. GCC inlines a function whose optimize options
// differ from its caller's only when they agree, so the backward rule also adds
// -fno-tree-vectorize to the kernel's flags (catalog_intrinsics.cpp says why): then the stand-ins
// inline into plain scalar code; without the flag they would stay scalar, out of line.
#include <map>

#include "agent/rules/catalog_intrinsics.h"

namespace lathe::agent::rules::detail::intrin {

namespace {

const char* const kPreamble = R"(#pragma once

#include <math.h>
#include <stdint.h>
#include <string.h>

#pragma GCC push_options
#pragma GCC optimize("no-tree-vectorize")

struct lathe_m128 { float v[4]; };
struct lathe_m128i { int32_t v[4]; };
struct lathe_m256 { float v[8]; };
struct lathe_m256i { int32_t v[8]; };

static inline uint32_t lathe_shim_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float lathe_shim_float(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline float lathe_shim_mask(bool b) { return lathe_shim_float(b ? 0xFFFFFFFFu : 0u); }
// cvtps2dq and cvttps2dq: NaN and out of range give 0x80000000 ("integer indefinite").
static inline int32_t lathe_shim_int(float r) {
  return r >= -2147483648.0f && r < 2147483648.0f ? (int32_t)r : INT32_MIN;
}
// The low 4 bits of a cmpps predicate; bit 4 (signalling or quiet) changes no result.
static inline bool lathe_shim_cmp(float a, float b, int p) {
  const bool un = a != a || b != b;
  switch (p & 15) {
    case 0: return a == b;
    case 1: return a < b;
    case 2: return a <= b;
    case 3: return un;
    case 4: return !(a == b);
    case 5: return !(a < b);
    case 6: return !(a <= b);
    case 7: return !un;
    case 8: return un || a == b;
    case 9: return !(a >= b);
    case 10: return !(a > b);
    case 11: return false;
    case 12: return !un && a != b;
    case 13: return a >= b;
    case 14: return a > b;
    default: return true;
  }
}
// roundps: bit 2 uses the current rounding mode, else bits 0-1 pick nearest-even, down, up, zero.
static inline float lathe_shim_round(float a, int mode) {
  if (mode & 4) return nearbyintf(a);
  switch (mode & 3) {
    case 0: return __builtin_roundevenf(a);
    case 1: return floorf(a);
    case 2: return ceilf(a);
    default: return truncf(a);
  }
}
)";

const char* const kEnd = "\n#pragma GCC pop_options\n";

const char* const kIntro =
    "// lathe_scalar_m256.inc: written by lathe's rule simd_intrinsics.remove, which took the\n"
    "// x86 intrinsics out of this kernel; simd_intrinsics.add puts them back while this text is\n"
    "// unchanged. A portable scalar stand-in for each intrinsic the kernel used (same name "
    "behind\n"
    "// a `lathe` prefix): a vector is a struct of lanes, an operation a loop over them, each "
    "lane\n"
    "// the bits the instruction gives. The vectorizer is off here, and in the whole kernel by\n"
    "// its flag -fno-tree-vectorize.\n";

struct kind {
  const char* type;
  int n;
};
const kind k256{"lathe_m256", 8}, k256i{"lathe_m256i", 8}, k128{"lathe_m128", 4};

std::string fn(const std::string& ret, std::string_view name, const std::string& params,
               const std::string& body) {
  return "static inline " + ret + " " + lathe_name(name) + "(" + params + ") {\n" + body + "}\n";
}

// A function whose result's lane i is `expr`.
std::string lanes(kind k, std::string_view name, const std::string& params,
                  const std::string& expr) {
  return fn(k.type, name, params,
            "  " + std::string(k.type) + " r;\n  for (int i = 0; i < " + std::to_string(k.n) +
                "; ++i) r.v[i] = " + expr + ";\n  return r;\n");
}

std::string two(kind k, const char* b = nullptr) {
  return std::string(k.type) + " a, " + (b ? b : k.type) + " b";
}

// The result of a bitwise operation on float lanes: OP over the lanes' bits.
std::string bits(std::string_view name, kind k, const std::string& op) {
  return lanes(k, name, two(k), "lathe_shim_float(" + op + ")");
}

std::string set_list(kind k, bool reversed, const char* elem) {
  std::string params, body = "  " + std::string(k.type) + " r = {{";
  for (int i = 0; i < k.n; ++i) {
    const int lane = reversed ? k.n - 1 - i : i;
    params += std::string(i ? ", " : "") + elem + " e" + std::to_string(lane);
    body += std::string(i ? ", " : "") + "e" + std::to_string(i);
  }
  return params + "|" + body + "}};\n  return r;\n";
}

std::string setter(std::string_view name, kind k, bool reversed, const char* elem) {
  const std::string s = set_list(k, reversed, elem);
  return fn(k.type, name, s.substr(0, s.find('|')), s.substr(s.find('|') + 1));
}

std::string store(std::string_view name, kind k, const char* ptr, const std::string& stmt) {
  return fn("void", name, std::string(ptr) + " p, " + k.type + " a",
            "  for (int i = 0; i < " + std::to_string(k.n) + "; ++i) " + stmt + ";\n");
}

// The four 32-bit lanes a shuffle immediate picks: lanes 0-1 from a, 2-3 from b, per 128 bits.
const char* const kShuffle = "(i % 4 < 2 ? a : b).v[i / 4 * 4 + ((imm >> (2 * (i % 4))) & 3)]";

// The table in the order shim_header writes its entries, one part of <immintrin.h> at a time.
struct shim_table {
  std::vector<shim_entry> t;

  void add(std::string name, std::string text) { t.push_back({std::move(name), std::move(text)}); }

  // The vector types, the compare predicates, rounding modes and _MM_SHUFFLE.
  void types_and_constants() {
    for (const char* type : {"__m128", "__m128i", "__m256", "__m256i"}) add(type, "");
    // Constants: the values <immintrin.h> gives them.
    static const char* const cmp[] = {
        "EQ_OQ", "LT_OS",  "LE_OS",  "UNORD_Q",  "NEQ_UQ", "NLT_US", "NLE_US", "ORD_Q",
        "EQ_UQ", "NGE_US", "NGT_US", "FALSE_OQ", "NEQ_OQ", "GE_OS",  "GT_OS",  "TRUE_UQ",
        "EQ_OS", "LT_OQ",  "LE_OQ",  "UNORD_S",  "NEQ_US", "NLT_UQ", "NLE_UQ", "ORD_S",
        "EQ_US", "NGE_UQ", "NGT_UQ", "FALSE_OS", "NEQ_OS", "GE_OQ",  "GT_OQ",  "TRUE_US"};
    for (int i = 0; i < 32; ++i) {
      const std::string n = std::string("_CMP_") + cmp[i];
      add(n, "#define " + lathe_name(n) + " " + std::to_string(i) + "\n");
    }
    static const std::pair<const char*, int> fround[] = {
        {"TO_NEAREST_INT", 0}, {"TO_NEG_INF", 1}, {"TO_POS_INF", 2}, {"TO_ZERO", 3},
        {"CUR_DIRECTION", 4},  {"RAISE_EXC", 0},  {"NO_EXC", 8},     {"NINT", 0},
        {"FLOOR", 1},          {"CEIL", 2},       {"TRUNC", 3},      {"RINT", 4},
        {"NEARBYINT", 12}};
    for (const auto& [n, v] : fround) {
      const std::string name = std::string("_MM_FROUND_") + n;
      add(name, "#define " + lathe_name(name) + " " + std::to_string(v) + "\n");
    }
    add("_MM_SHUFFLE",
        "#define LATHE_MM_SHUFFLE(z, y, x, w) (((z) << 6) | ((y) << 4) | ((x) << 2) | (w))\n");
  }

  // 256-bit fp32: sets, loads and stores.
  void fp32_sets_loads_stores() {
    add("_mm256_setzero_ps", lanes(k256, "_mm256_setzero_ps", "void", "0.0f"));
    add("_mm256_set1_ps", lanes(k256, "_mm256_set1_ps", "float a", "a"));
    add("_mm256_set_ps", setter("_mm256_set_ps", k256, true, "float"));
    add("_mm256_setr_ps", setter("_mm256_setr_ps", k256, false, "float"));
    for (const char* n : {"_mm256_load_ps", "_mm256_loadu_ps"})
      add(n, lanes(k256, n, "const float* p", "p[i]"));
    add("_mm256_broadcast_ss", lanes(k256, "_mm256_broadcast_ss", "const float* p", "*p"));
    add("_mm256_maskload_ps", lanes(k256, "_mm256_maskload_ps", "const float* p, lathe_m256i m",
                                    "m.v[i] < 0 ? p[i] : 0.0f"));
    // A streaming store's non-temporal hint has no scalar form: it is a plain store here.
    for (const char* n : {"_mm256_store_ps", "_mm256_storeu_ps", "_mm256_stream_ps"})
      add(n, store(n, k256, "float*", "p[i] = a.v[i]"));
    add("_mm256_maskstore_ps",
        fn("void", "_mm256_maskstore_ps", "float* p, lathe_m256i m, lathe_m256 a",
           "  for (int i = 0; i < 8; ++i)\n    if (m.v[i] < 0) p[i] = a.v[i];\n"));
  }

  // Arithmetic on fp32 lanes, 256- and 128-bit.
  void fp32_arithmetic() {
    for (const auto& [n, op] : std::map<std::string, std::string>{
             {"add", "+"}, {"sub", "-"}, {"mul", "*"}, {"div", "/"}}) {
      add("_mm256_" + n + "_ps",
          lanes(k256, "_mm256_" + n + "_ps", two(k256), "a.v[i] " + op + " b.v[i]"));
      add("_mm_" + n + "_ps",
          lanes(k128, "_mm_" + n + "_ps", two(k128), "a.v[i] " + op + " b.v[i]"));
      add("_mm_" + n + "_ss",
          lanes(k128, "_mm_" + n + "_ss", two(k128), "i ? a.v[i] : a.v[0] " + op + " b.v[0]"));
    }
    // maxps/minps give the second operand when either is NaN or both are zeros.
    for (kind k : {k256, k128}) {
      const std::string p = k.n == 8 ? "_mm256_" : "_mm_";
      add(p + "max_ps", lanes(k, p + "max_ps", two(k), "a.v[i] > b.v[i] ? a.v[i] : b.v[i]"));
      add(p + "min_ps", lanes(k, p + "min_ps", two(k), "a.v[i] < b.v[i] ? a.v[i] : b.v[i]"));
    }
    add("_mm_max_ss",
        lanes(k128, "_mm_max_ss", two(k128), "i ? a.v[i] : a.v[0] > b.v[0] ? a.v[0] : b.v[0]"));
    add("_mm_min_ss",
        lanes(k128, "_mm_min_ss", two(k128), "i ? a.v[i] : a.v[0] < b.v[0] ? a.v[0] : b.v[0]"));
    add("_mm256_sqrt_ps", lanes(k256, "_mm256_sqrt_ps", "lathe_m256 a", "sqrtf(a.v[i])"));
    const std::string three = "lathe_m256 a, lathe_m256 b, lathe_m256 c";
    add("_mm256_fmadd_ps", lanes(k256, "_mm256_fmadd_ps", three, "fmaf(a.v[i], b.v[i], c.v[i])"));
    add("_mm256_fmsub_ps", lanes(k256, "_mm256_fmsub_ps", three, "fmaf(a.v[i], b.v[i], -c.v[i])"));
    add("_mm256_fnmadd_ps",
        lanes(k256, "_mm256_fnmadd_ps", three, "fmaf(-a.v[i], b.v[i], c.v[i])"));
    add("_mm256_fnmsub_ps",
        lanes(k256, "_mm256_fnmsub_ps", three, "fmaf(-a.v[i], b.v[i], -c.v[i])"));
    // haddps adds neighbours: a's pairs, then b's, in each 128-bit half.
    add("_mm256_hadd_ps", lanes(k256, "_mm256_hadd_ps", two(k256),
                                "(i % 4 < 2 ? a : b).v[i / 4 * 4 + 2 * (i % 2)] + "
                                "(i % 4 < 2 ? a : b).v[i / 4 * 4 + 2 * (i % 2) + 1]"));
    add("_mm_hadd_ps",
        lanes(k128, "_mm_hadd_ps", two(k128),
              "(i < 2 ? a : b).v[2 * (i % 2)] + (i < 2 ? a : b).v[2 * (i % 2) + 1]"));
  }

  // Bitwise operations, blends, compares, rounding, the sign mask and the first lane.
  void fp32_logic_compares_rounding() {
    add("_mm256_and_ps",
        bits("_mm256_and_ps", k256, "lathe_shim_bits(a.v[i]) & lathe_shim_bits(b.v[i])"));
    add("_mm256_andnot_ps",
        bits("_mm256_andnot_ps", k256, "~lathe_shim_bits(a.v[i]) & lathe_shim_bits(b.v[i])"));
    add("_mm256_or_ps",
        bits("_mm256_or_ps", k256, "lathe_shim_bits(a.v[i]) | lathe_shim_bits(b.v[i])"));
    add("_mm256_xor_ps",
        bits("_mm256_xor_ps", k256, "lathe_shim_bits(a.v[i]) ^ lathe_shim_bits(b.v[i])"));
    add("_mm256_blendv_ps",
        lanes(k256, "_mm256_blendv_ps", "lathe_m256 a, lathe_m256 b, lathe_m256 m",
              "lathe_shim_bits(m.v[i]) >> 31 ? b.v[i] : a.v[i]"));
    add("_mm256_cmp_ps", lanes(k256, "_mm256_cmp_ps", two(k256) + ", int p",
                               "lathe_shim_mask(lathe_shim_cmp(a.v[i], b.v[i], p))"));
    add("_mm256_round_ps",
        lanes(k256, "_mm256_round_ps", "lathe_m256 a, int mode", "lathe_shim_round(a.v[i], mode)"));
    add("_mm256_floor_ps", lanes(k256, "_mm256_floor_ps", "lathe_m256 a", "floorf(a.v[i])"));
    add("_mm256_ceil_ps", lanes(k256, "_mm256_ceil_ps", "lathe_m256 a", "ceilf(a.v[i])"));
    add("_mm256_movemask_ps", fn("int", "_mm256_movemask_ps", "lathe_m256 a",
                                 "  int r = 0;\n  for (int i = 0; i < 8; ++i) r |= "
                                 "(int)(lathe_shim_bits(a.v[i]) >> 31) << i;\n"
                                 "  return r;\n"));
    add("_mm256_cvtss_f32", fn("float", "_mm256_cvtss_f32", "lathe_m256 a", "  return a.v[0];\n"));
    add("_mm_cvtss_f32", fn("float", "_mm_cvtss_f32", "lathe_m128 a", "  return a.v[0];\n"));
  }

  // Conversions and reinterpretations between fp32 and int32 lanes.
  void fp32_conversions() {
    add("_mm256_cvtps_epi32",
        lanes(k256i, "_mm256_cvtps_epi32", "lathe_m256 a", "lathe_shim_int(nearbyintf(a.v[i]))"));
    add("_mm256_cvttps_epi32",
        lanes(k256i, "_mm256_cvttps_epi32", "lathe_m256 a", "lathe_shim_int(a.v[i])"));
    add("_mm256_cvtepi32_ps", lanes(k256, "_mm256_cvtepi32_ps", "lathe_m256i a", "(float)a.v[i]"));
    add("_mm256_castsi256_ps",
        lanes(k256, "_mm256_castsi256_ps", "lathe_m256i a", "lathe_shim_float((uint32_t)a.v[i])"));
    add("_mm256_castps_si256",
        lanes(k256i, "_mm256_castps_si256", "lathe_m256 a", "(int32_t)lathe_shim_bits(a.v[i])"));
  }

  // Shuffles within 128-bit lanes, and the halves.
  void fp32_shuffles_and_halves() {
    add("_mm256_unpacklo_ps",
        lanes(k256, "_mm256_unpacklo_ps", two(k256), "(i % 2 ? b : a).v[i / 4 * 4 + i % 4 / 2]"));
    add("_mm256_unpackhi_ps", lanes(k256, "_mm256_unpackhi_ps", two(k256),
                                    "(i % 2 ? b : a).v[i / 4 * 4 + 2 + i % 4 / 2]"));
    add("_mm_unpacklo_ps", lanes(k128, "_mm_unpacklo_ps", two(k128), "(i % 2 ? b : a).v[i / 2]"));
    add("_mm_unpackhi_ps",
        lanes(k128, "_mm_unpackhi_ps", two(k128), "(i % 2 ? b : a).v[2 + i / 2]"));
    add("_mm256_shuffle_ps", lanes(k256, "_mm256_shuffle_ps", two(k256) + ", int imm", kShuffle));
    add("_mm_shuffle_ps", lanes(k128, "_mm_shuffle_ps", two(k128) + ", int imm", kShuffle));
    add("_mm256_permute_ps", lanes(k256, "_mm256_permute_ps", "lathe_m256 a, int imm",
                                   "a.v[i / 4 * 4 + ((imm >> (2 * (i % 4))) & 3)]"));
    add("_mm256_permute2f128_ps",
        lanes(k256, "_mm256_permute2f128_ps", two(k256) + ", int imm",
              "(imm >> (i / 4 * 4)) & 8 ? 0.0f : ((imm >> (i / 4 * 4)) & 2 "
              "? b : a).v[((imm >> (i / 4 * "
              "4)) & 1) * 4 + i % 4]"));
    add("_mm256_permutevar8x32_ps", lanes(k256, "_mm256_permutevar8x32_ps",
                                          "lathe_m256 a, lathe_m256i idx", "a.v[idx.v[i] & 7]"));
    add("_mm_movehl_ps", lanes(k128, "_mm_movehl_ps", two(k128), "i < 2 ? b.v[i + 2] : a.v[i]"));
    add("_mm_movelh_ps", lanes(k128, "_mm_movelh_ps", two(k128), "i < 2 ? a.v[i] : b.v[i - 2]"));
    add("_mm_movehdup_ps", lanes(k128, "_mm_movehdup_ps", "lathe_m128 a", "a.v[i | 1]"));
    add("_mm_moveldup_ps", lanes(k128, "_mm_moveldup_ps", "lathe_m128 a", "a.v[i & ~1]"));
    add("_mm256_castps256_ps128", lanes(k128, "_mm256_castps256_ps128", "lathe_m256 a", "a.v[i]"));
    // The upper half of a widened vector is undefined in the intrinsic; zero here.
    add("_mm256_castps128_ps256",
        lanes(k256, "_mm256_castps128_ps256", "lathe_m128 a", "i < 4 ? a.v[i] : 0.0f"));
    add("_mm256_extractf128_ps",
        lanes(k128, "_mm256_extractf128_ps", "lathe_m256 a, int imm", "a.v[(imm & 1) * 4 + i]"));
    add("_mm256_insertf128_ps",
        lanes(k256, "_mm256_insertf128_ps", "lathe_m256 a, lathe_m128 b, int imm",
              "i / 4 == (imm & 1) ? b.v[i % 4] : a.v[i]"));
  }

  // 128-bit fp32 sets, loads and stores; prefetches and the store fence.
  void sse_fp32_and_prefetch() {
    add("_mm_setzero_ps", lanes(k128, "_mm_setzero_ps", "void", "0.0f"));
    add("_mm_set1_ps", lanes(k128, "_mm_set1_ps", "float a", "a"));
    for (const char* n : {"_mm_load_ps", "_mm_loadu_ps"})
      add(n, lanes(k128, n, "const float* p", "p[i]"));
    for (const char* n : {"_mm_store_ps", "_mm_storeu_ps"})
      add(n, store(n, k128, "float*", "p[i] = a.v[i]"));
    // A prefetch is no vector mechanism, but it lives in <immintrin.h>: kept, through GCC's
    // builtin, whose locality must be a constant (hence the switch). Hint values as in GCC.
    for (const auto& [n, v] : {std::pair{"T0", 3}, {"T1", 2}, {"T2", 1}, {"NTA", 0}}) {
      const std::string name = std::string("_MM_HINT_") + n;
      add(name, "#define " + lathe_name(name) + " " + std::to_string(v) + "\n");
    }
    add("_mm_prefetch",
        fn("void", "_mm_prefetch", "const void* p, int hint",
           "  switch (hint & 3) {\n    case 3: __builtin_prefetch(p, 0, 3); break;\n"
           "    case 2: __builtin_prefetch(p, 0, 2); break;\n    case 1: "
           "__builtin_prefetch(p, 0, 1); "
           "break;\n    default: __builtin_prefetch(p, 0, 0);\n  }\n"));
    // Streaming stores are plain stores here, so there is nothing to fence but the compiler.
    add("_mm_sfence",
        fn("void", "_mm_sfence", "void", "  __atomic_thread_fence(__ATOMIC_RELEASE);\n"));
  }

  // 256-bit int32.
  void int32() {
    add("_mm256_setzero_si256", lanes(k256i, "_mm256_setzero_si256", "void", "0"));
    add("_mm256_set1_epi32", lanes(k256i, "_mm256_set1_epi32", "int a", "a"));
    add("_mm256_set_epi32", setter("_mm256_set_epi32", k256i, true, "int"));
    add("_mm256_setr_epi32", setter("_mm256_setr_epi32", k256i, false, "int"));
    for (const char* n : {"_mm256_load_si256", "_mm256_loadu_si256"})
      add(n, fn("lathe_m256i", n, "const lathe_m256i* p",
                "  lathe_m256i r;\n  memcpy(&r, p, sizeof r);\n  return r;\n"));
    for (const char* n : {"_mm256_store_si256", "_mm256_storeu_si256"})
      add(n, fn("void", n, "lathe_m256i* p, lathe_m256i a", "  memcpy(p, &a, sizeof a);\n"));
    // Integer lanes wrap: the arithmetic is done on uint32_t.
    for (const auto& [n, op] : std::map<std::string, std::string>{{"add_epi32", "+"},
                                                                  {"sub_epi32", "-"},
                                                                  {"mullo_epi32", "*"},
                                                                  {"and_si256", "&"},
                                                                  {"or_si256", "|"},
                                                                  {"xor_si256", "^"}})
      add("_mm256_" + n, lanes(k256i, "_mm256_" + n, two(k256i),
                               "(int32_t)((uint32_t)a.v[i] " + op + " (uint32_t)b.v[i])"));
    add("_mm256_andnot_si256", lanes(k256i, "_mm256_andnot_si256", two(k256i), "~a.v[i] & b.v[i]"));
    add("_mm256_slli_epi32", lanes(k256i, "_mm256_slli_epi32", "lathe_m256i a, int n",
                                   "n > 31 ? 0 : (int32_t)((uint32_t)a.v[i] << n)"));
    add("_mm256_srli_epi32", lanes(k256i, "_mm256_srli_epi32", "lathe_m256i a, int n",
                                   "n > 31 ? 0 : (int32_t)((uint32_t)a.v[i] >> n)"));
    add("_mm256_srai_epi32",
        lanes(k256i, "_mm256_srai_epi32", "lathe_m256i a, int n", "a.v[i] >> (n > 31 ? 31 : n)"));
    add("_mm256_cmpgt_epi32",
        lanes(k256i, "_mm256_cmpgt_epi32", two(k256i), "a.v[i] > b.v[i] ? -1 : 0"));
    add("_mm256_cmpeq_epi32",
        lanes(k256i, "_mm256_cmpeq_epi32", two(k256i), "a.v[i] == b.v[i] ? -1 : 0"));
    add("_mm256_max_epi32",
        lanes(k256i, "_mm256_max_epi32", two(k256i), "a.v[i] > b.v[i] ? a.v[i] : b.v[i]"));
    add("_mm256_min_epi32",
        lanes(k256i, "_mm256_min_epi32", two(k256i), "a.v[i] < b.v[i] ? a.v[i] : b.v[i]"));
    add("_mm256_cvtsi256_si32",
        fn("int", "_mm256_cvtsi256_si32", "lathe_m256i a", "  return a.v[0];\n"));
  }
};

std::vector<shim_entry> build() {
  shim_table s;
  s.types_and_constants();
  s.fp32_sets_loads_stores();
  s.fp32_arithmetic();
  s.fp32_logic_compares_rounding();
  s.fp32_conversions();
  s.fp32_shuffles_and_halves();
  s.sse_fp32_and_prefetch();
  s.int32();
  return std::move(s.t);
}

}  // namespace

const std::vector<shim_entry>& shim_entries() {
  static const std::vector<shim_entry> table = build();
  return table;
}

const shim_entry* shim_entry_of(std::string_view name) {
  static const std::map<std::string, const shim_entry*, std::less<>> index = [] {
    std::map<std::string, const shim_entry*, std::less<>> m;
    for (const shim_entry& e : shim_entries()) m[e.name] = &e;
    return m;
  }();
  auto it = index.find(name);
  return it == index.end() ? nullptr : it->second;
}

std::string lathe_name(std::string_view name) {
  if (name.starts_with("__")) return "lathe" + std::string(name.substr(1));  // __m256 → lathe_m256
  if (name.size() > 1 && name[0] == '_' && name[1] >= 'A' && name[1] <= 'Z')
    return "LATHE" + std::string(name);  // _CMP_LT_OQ → LATHE_CMP_LT_OQ
  return "lathe" + std::string(name);    // _mm256_add_ps → lathe_mm256_add_ps
}

std::string intrinsic_of(std::string_view lathe) {
  static const std::map<std::string, std::string, std::less<>> back = [] {
    std::map<std::string, std::string, std::less<>> m;
    for (const shim_entry& e : shim_entries()) m[lathe_name(e.name)] = e.name;
    return m;
  }();
  auto it = back.find(lathe);
  return it == back.end() ? "" : it->second;
}

std::string shim_header(const std::set<std::string>& names) {
  std::string list, body;
  bool after_define = false;  // constants stay together; functions get a blank line before
  for (const shim_entry& e : shim_entries()) {
    if (!names.count(e.name)) continue;
    list += " " + e.name;
    if (e.text.empty()) continue;
    const bool define = e.text.starts_with("#define");
    body += (define && after_define ? "" : "\n") + e.text;
    after_define = define;
  }
  return kIntro + std::string(kEntriesLine) + list + "\n" + kPreamble + body + kEnd;
}

std::optional<std::set<std::string>> shim_header_entries(std::string_view header) {
  const size_t at = header.find(kEntriesLine);
  if (at == std::string_view::npos) return std::nullopt;
  const size_t end = header.find('\n', at);
  std::string_view line = header.substr(at + kEntriesLine.size(), end - at - kEntriesLine.size());
  std::set<std::string> out;
  while (!line.empty()) {
    const size_t blank = line.find(' ');
    if (blank != 0) out.insert(std::string(line.substr(0, blank)));
    if (blank == std::string_view::npos) break;
    line.remove_prefix(blank + 1);
  }
  return out;
}

bool intrinsic_family(std::string_view id) {
  for (std::string_view p : {"_mm", "__m64", "__m128", "__m256", "__m512", "__mmask", "_MM_",
                             "_CMP_", "__builtin_ia32_"})
    if (id.starts_with(p)) return true;
  return false;
}

}  // namespace lathe::agent::rules::detail::intrin
