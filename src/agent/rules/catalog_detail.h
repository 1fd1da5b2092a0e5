// Shared by the rule families of the catalog (catalog_*.cpp): a tokenized view of one bundle
// file, an edit under construction (byte replacements on token boundaries, flag and ISA changes)
// that becomes a rule_result, and the syntactic tests several rules share (canonical `for`
// headers, scalars a loop body assigns). Not part of the catalog's API.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "source/anchor.h"
#include "agent/rules/catalog.h"

namespace lathe::agent::rules::detail {

// One source file, tokenized and analyzed. Pinned in memory: the token list views `text`.
struct source_view {
  std::string file, text;
  token_list tl;
  structure st;
  source_view(std::string f, std::string t);
  source_view(const source_view&) = delete;
  source_view& operator=(const source_view&) = delete;
  std::string_view tok(size_t i) const { return tl.text(i); }
  std::string_view bytes(token_span s) const { return span_text(tl, s); }
};
std::unique_ptr<source_view> view_of(const kernel_bundle& b, const std::string& file);
// The bundle's C++/CUDA sources and headers, entry first.
std::vector<std::string> code_files(const kernel_bundle& b);
// The file an invocation targets: params["file"], else the entry file.
std::string target_file(const kernel_bundle& b, const rule_invocation& inv);
// Resolves an anchor, refusing targets in inactive branches (errc::unsupported).
result<anchor_target> locate(const source_view& v, const std::string& anchor);

// What every apply() starts from: the file the invocation targets, tokenized, and its anchor
// resolved there. `v` is pinned like any view (its target's spans index its tokens).
struct target {
  std::unique_ptr<source_view> v;
  anchor_target t;
};
// Errors: not_found (no such file in the bundle), then locate()'s.
result<target> open_anchor(const kernel_bundle& b, const rule_invocation& inv);
// open_anchor(), refusing (invalid_argument: "'ANCHOR' " + refusal) an anchor that is not a
// `kind` or for which `also` (when given) does not hold.
using target_test = std::function<bool(const source_view&, const anchor_target&)>;
result<target> open_target(const kernel_bundle& b, const rule_invocation& inv, anchor_kind kind,
                           std::string_view refusal, const target_test& also = {});
// The sites of every code file (code_files order): `visit` appends one file's sites to `out`;
// those outside the entry file then get the param file= (an invocation's default is the entry).
using site_visit = std::function<void(const source_view&, std::vector<rule_site>&)>;
std::vector<rule_site> file_sites(const kernel_bundle& b, const site_visit& visit);
// The invocation of `rule` at `anchor` that undoes a step made by `inv`: on the same file.
rule_invocation inverse_of(const rule_invocation& inv, std::string rule, std::string anchor,
                           std::map<std::string, std::string> params = {});
// Whether the invocation says the task allows approximate math (allow_fast_math=true).
bool allows_fast_math(const rule_invocation& inv);

// A rule's change of a bundle, built from byte replacements on token boundaries.
class change {
 public:
  explicit change(const kernel_bundle& b) : b_(b) {}
  void replace(const source_view& v, uint32_t begin, uint32_t end, std::string text);
  void insert(const source_view& v, uint32_t at, std::string text) { replace(v, at, at, text); }
  void add_flag(std::string f) { flags_.push_back({true, std::move(f)}); }
  void remove_flag(std::string f) { flags_.push_back({false, std::move(f)}); }
  void set_isa(std::string level) { isa_ = std::move(level); }  // the manifest's `isa`
  // Deletes the line of the `#pragma` token `directive`; returns the params (pragma=, indent=)
  // with which insert_pragma() gives that line back byte for byte.
  std::map<std::string, std::string> delete_pragma(const source_view& v, uint32_t directive);
  // Puts `#pragma BODY` on a line of its own before loop `l`, indented by the param indent= of
  // `inv` when given (an inverse restoring a deleted line), else as the loop's line.
  void insert_pragma(const source_view& v, const loop& l, const rule_invocation& inv,
                     const std::string& body);
  // The edited kernel and its docs/edits.md text, `meta`'s other fields kept. Refuses (errc::
  // unsupported) a change touching inactive code or adding tokenizer errors; a change touching
  // conditional code is made and the note says so.
  result<rule_result> finish(rule_result meta) const;

 private:
  struct piece {
    std::string file;
    uint32_t begin, end;
    std::string text;
    branch where;
  };
  const kernel_bundle& b_;
  std::vector<piece> pieces_;
  std::vector<std::pair<bool, std::string>> flags_;
  std::optional<std::string> isa_;
};

// ---- bytes and lines ------------------------------------------------------------------------
uint32_t line_begin(std::string_view s, uint32_t at);
uint32_t line_end(std::string_view s, uint32_t at);      // after the '\n' (or the end)
std::string indent_at(std::string_view s, uint32_t at);  // the blanks that start at's line
// Bytes of a whole directive line (with its newline) for deletion.
std::pair<uint32_t, uint32_t> directive_line(const source_view& v, uint32_t token);

// ---- names and anchors ----------------------------------------------------------------------
std::string func_ref(const function& f);  // "gemm_kernel", "gemm_kernel#2"
std::string loop_ref(const loop& l);      // "gemm_kernel/m/k"
bool has_qualifier(const function& f, std::string_view prefix);
bool device_code(const function& f);  // __global__ or __device__
bool is_cuda(const kernel_bundle& b);
bool has_flag(const kernel_bundle& b, std::string_view f);
// The call whose name token starts at byte `at`, or -1.
int32_t call_at(const source_view& v, uint32_t at);
int32_t function_named(const source_view& v, std::string_view ref);  // by func_ref, -1 none

// Names whose value the tokens show is a compile-time constant: constexpr variables, #define'd
// names, non-type template parameters of function `fn` (-1: none).
std::set<std::string> constants(const source_view& v, int32_t fn);

// ---- loops ----------------------------------------------------------------------------------
struct for_parts {
  token_span init, cond, incr;  // without the `;`
};
std::optional<for_parts> split_for(const source_view& v, const loop& l);
// `for (INT iv = …; iv < / <= BOUND; ++iv | iv++ | iv += STEP)`: the OpenMP canonical form.
bool canonical_for(const source_view& v, const loop& l);
bool has_child_loop(const structure& st, size_t loop_index);
bool contains_word(const source_view& v, token_span s, std::initializer_list<std::string_view> w);
// Scalars (bare names) the span assigns that are not declared inside it: name -> operators
// ("+=", "=", "++"). The induction variable is left out.
std::map<std::string, std::set<std::string>> outer_assignments(const source_view& v, token_span s,
                                                               const std::string& induction);
// Whether any loop pragma of `l` starts with one of `words` ("omp", "unroll", "GCC unroll").
bool has_pragma(const source_view& v, const loop& l, std::string_view prefix);

// ---- rule boilerplate -----------------------------------------------------------------------
struct rule_info {
  std::string_view name, feature;
  rule_direction direction;
  std::string_view description, preconditions;
  std::vector<std::string> assumed;
};

class basic_rule : public rule {
 public:
  explicit basic_rule(rule_info i) : info_(std::move(i)) {}
  std::string_view name() const override { return info_.name; }
  rule_direction direction() const override { return info_.direction; }
  std::string_view feature() const override { return info_.feature; }
  std::string_view description() const override { return info_.description; }
  std::string_view preconditions() const override { return info_.preconditions; }
  std::vector<std::string> assumed() const override { return info_.assumed; }

 protected:
  // A rule_result skeleton: removes/adds from direction and feature, assumed, `used`.
  rule_result start(const rule_invocation& inv, std::string locus) const;
  rule_site site(const source_view& v, std::string anchor, std::string locus, branch where,
                 std::string what) const;
  // A site per call in a function body, in every code file, that `pick` accepts: the call's
  // anchor, its function as locus, its text as `what`.
  std::vector<rule_site> call_sites(
      const kernel_bundle& b,
      const std::function<bool(const source_view&, const call&)>& pick) const;
  rule_info info_;
};

// The families (one file each).
std::vector<const rule*> unroll_rules();
std::vector<const rule*> restrict_rules();
std::vector<const rule*> launch_bounds_rules();
std::vector<const rule*> read_only_rules();
std::vector<const rule*> fast_math_rules();
std::vector<const rule*> openmp_rules();
std::vector<const rule*> vector_rules();
std::vector<const rule*> flag_rules();
std::vector<const rule*> isa_rules();
std::vector<const rule*> cp_async_rules();

}  // namespace lathe::agent::rules::detail
