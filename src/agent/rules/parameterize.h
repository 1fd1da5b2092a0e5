// parameterize (issue 45): the rule engine's step that turns a kernel's literal knobs into
// tunables, so that `lathe tune` can search a kernel nobody wrote a [tune] section for. A knob is
// one of:
//
//   - an object-like `#define NAME 256` (already inside `#ifndef NAME` or not): the tunable is
//     NAME itself, and the define is wrapped in `#ifndef NAME … #endif` so that -DNAME=… wins;
//   - `constexpr <integer type> NAME = 32;` (int, unsigned, signed, long, short, size_t,
//     int32_t, int64_t, uint32_t, uint64_t; static, const, inline, __device__, __constant__
//     around them): the literal becomes the macro TUNE_NAME, defined (under #ifndef) after the
//     file's last active #include above its first knob;
//   - an unroll count, `#pragma unroll 4` (CUDA) or `#pragma GCC unroll 4`: neither compiler
//     expands macros in those pragmas, but both take a constant expression, so the count becomes
//     `lathe_knob_UNROLL_k`, a `static constexpr int` set from the macro UNROLL_k.
//
// Only code is looked at (never a comment, a string or an `#if 0` branch), literals are
// decimal integers 0..2^24 (unroll counts from 1), and a name already used in the bundle or the
// manifest is never reused for a new macro. Not knobs: a macro defined more than once (two files,
// `#ifdef` / `#else`) or #undef'd, since wrapping one definition would leave another in force; an
// include guard with a value; an unguarded #define that the manifest also defines ([defines] or a
// -D flag: which value wins is ambiguous). A guarded one that the manifest defines takes the
// manifest's value as its default, which is the value the kernel is built with. Which knobs matter is the search's business: by
// default the unroll counts and the names with a word that reads as a knob (BLOCK, THREADS, TILE,
// CHUNK, VEC, UNROLL…; words split at '_' and at case changes, so NROWS or WORKSPACE are not) are
// parameterized; a caller may name others. Every value keeps the literal as the
// default, so the parameterized kernel at its default is the kernel it came from; whether another
// value is still correct is what the gate checks, configuration by configuration.
//
// This is not one of the catalog's rules: it changes nothing a detector sees and makes no kernel
// faster by itself, so the optimizer's walks (catalog.h `applicable`) never propose it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/kernel.h"

namespace lathe::agent::rules {

enum class knob_kind : uint8_t { define, guarded_define, constexpr_value, unroll_count };
const char* to_string(knob_kind k);

struct knob {
  std::string name;  // the tunable: a macro name
  knob_kind kind = knob_kind::define;
  std::string file;                 // the bundle file it lies in
  uint32_t line = 0;                // 1-based
  std::string what;                 // "#define BLOCK 256", "constexpr int TILE = 32", "#pragma GCC unroll 4"
  std::string site;                 // the name in the source (BLOCK, TILE) or the pragma's words
  int64_t value = 0;                // the literal: the default
  std::vector<int64_t> values;      // the space proposed, ascending, the literal included
  bool knob_like = false;           // parameterized by default
};

// Every knob of the bundle's C++/CUDA files, in file and source order, whether parameterized by
// default or not. A bundle that already declares [tune] has none (its author chose its knobs).
std::vector<knob> find_knobs(const kernel_bundle& b);

// The bundle with `chosen` (a subset of find_knobs(b), by name) made tunables: the sources edited,
// [tune] declared with each knob's values and its literal as the default, the hash recomputed.
// A chosen constant may be named as the source spells it (TILE) or as its tunable (TUNE_TILE).
// Errors: invalid_argument (nothing chosen, a name that is not a knob of b, b already has [tune]).
result<kernel_bundle> parameterize(const kernel_bundle& b, const std::vector<knob>& chosen);

}  // namespace lathe::agent::rules
