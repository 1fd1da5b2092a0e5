// The rule catalog (issue 5): small, named source transformations of the offline rule engine, each
// with a backward form (de-optimize: remove a mechanism) and a forward form (optimize: add it),
// made on the front end's tokens (token.h, anchor.h) so that nothing is ever edited inside a
// comment, a string or an inactive `#if` branch.
//
// A rule is syntactic. It checks what the tokens show (a `#pragma unroll` before this loop, a
// `const` pointee, a literal block size) and records what it cannot check — no loop-carried
// dependence, alignment, no aliasing — as `assumed`: the gate checks those by building, running
// and comparing the result. Nothing here is claimed as proven.
//
// The carrier of a rule step is its invocation (rule name, anchor, parameters): JSON, replayable
// on another kernel by running the rule there (`replay`). The text diff of the step (`edits`,
// docs/edits.md format) is kept as a hint for an LLM, never as the carrier.
//
// Names: `<feature>.remove` (backward) / `<feature>.add` (forward); a flag-only form of a feature
// is `<feature>_flag.*`; `opt_level.*` changes -O levels and `isa.*` the manifest's x86-64 level,
// and neither has a feature. docs/rules.md, "Catalog", lists every rule with its sites,
// preconditions and assumptions.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "source/token.h"
#include "core/error.h"
#include "core/kernel.h"

namespace lathe::agent::rules {

enum class rule_direction : uint8_t { backward, forward };
const char* to_string(rule_direction d);

// Where a rule applies. `anchor` is in the front end's grammar (docs/rules.md, "Anchors"), with
// two extensions for the manifest, which the front end never sees: `flags:FLAG` (`flags:-O3`) and
// `isa:LEVEL` (`isa:x86-64-v3`, the manifest's `isa`).
// Some sites need parameters to tell them apart inside one anchor (the pointer a read-only rule
// rewrites); they are in `params` and belong in the invocation.
struct rule_site {
  std::string anchor;  // "pragma:unroll@gemm_kernel/k", "param:relu/x", "flags:--use_fast_math"
  std::string file;    // the bundle file it lies in; empty for flags and the ISA
  std::string locus;   // the feature's locus: "gemm_kernel/k", "relu", "<flags>", "<isa>"
  branch where = branch::active;              // inactive sites are listed and refused by apply()
  std::map<std::string, std::string> params;  // what apply() uses (factor, threads, pointer…)
  std::string what;  // in words: "#pragma unroll 4 before loop:gemm_kernel/k"
};

// The carrier of a rule step: replayable on this or another kernel.
struct rule_invocation {
  std::string rule;    // "loop_unroll.remove"
  std::string anchor;  // as in rule_site
  // Site parameters and options: `file` (when not the entry file), `factor`, `threads`,
  // `allow_fast_math` ("true": the task allows approximate math)…; each rule lists its own.
  std::map<std::string, std::string> params;
  bool operator==(const rule_invocation&) const = default;
};

struct rule_result {
  kernel_bundle kernel;  // the edited bundle (hash recomputed, no origin)
  std::string edits;     // the change in docs/edits.md text: a hint for an LLM, not the carrier
  std::vector<std::string> removes, adds;  // registry feature names
  std::string locus;                       // the feature's locus at the site
  // Semantic preconditions this step relies on and does not check: "assumed; checked by the
  // gate" (no aliasing, alignment, independent iterations).
  std::vector<std::string> assumed;
  std::string note;         // what was done, and whether the site lies in a conditional #if branch
  rule_invocation used;     // the invocation applied (replay may have picked another site)
  rule_invocation inverse;  // the opposite rule's invocation on `kernel` that undoes this step;
                            // empty rule when there is none
};

class rule {
 public:
  virtual ~rule() = default;
  virtual std::string_view name() const = 0;
  virtual rule_direction direction() const = 0;
  // The registry name (core/feature_registry.h) it removes or adds; empty for none (opt_level,
  // isa).
  virtual std::string_view feature() const = 0;
  virtual std::string_view description() const = 0;
  // Syntactic preconditions, in prose: what sites() checks on the tokens.
  virtual std::string_view preconditions() const = 0;
  // Semantic preconditions it assumes (the gate checks them): may be empty.
  virtual std::vector<std::string> assumed() const { return {}; }
  // Every place it applies in `b`, inactive #if branches included (marked so), in source order.
  virtual std::vector<rule_site> sites(const kernel_bundle& b) const = 0;
  // Applies one invocation. Errors: not_found (the anchor names nothing here, with what exists),
  // invalid_argument (bad parameters, the site does not meet the preconditions), unsupported (the
  // site lies in an inactive branch; the result would add tokenizer errors; a forward fast-math
  // step without allow_fast_math).
  virtual result<rule_result> apply(const kernel_bundle& b, const rule_invocation& inv) const = 0;
};

// Every rule, sorted by name. The rules are stateless constants (like the feature registry), so
// one immutable table serves every caller.
const std::vector<const rule*>& catalog();
// nullptr when no rule has that name.
const rule* find_rule(std::string_view name);

struct catalog_options {
  bool allow_fast_math = false;   // the task allows approximate math: fast_math forward rules
  bool include_inactive = false;  // list sites in inactive #if branches too
};

struct applicable_site {
  const rule* what = nullptr;
  rule_site site;
  rule_invocation invocation;  // ready to apply (allow_fast_math set when the options allow)
};

// Every rule × site of `direction` on `b`.
std::vector<applicable_site> applicable(const kernel_bundle& b, rule_direction direction,
                                        const catalog_options& options = {});

// Re-runs an invocation on `b` (another kernel, or the same one): by name and anchor first; when
// the anchor does not resolve there (or its site does not qualify), on the rule's site that looks
// most like it (same kind of anchor, same function or loop names), active sites first. The
// result's `used` and `note` say which site was used and why.
result<rule_result> replay(const rule_invocation& inv, const kernel_bundle& b);

// JSON of the carrier: {"rule": …, "anchor": …, "params": {…}}.
void to_json(nlohmann::json& j, const rule_invocation& inv);
void from_json(const nlohmann::json& j, rule_invocation& inv);
std::string to_carrier(const rule_invocation& inv);  // compact JSON text
result<rule_invocation> from_carrier(std::string_view text);

}  // namespace lathe::agent::rules
