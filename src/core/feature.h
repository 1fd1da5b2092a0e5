// Vocabulary types of the lineage side of lathe (DESIGN.md). They are defined here, in core/, so
// that skills/ reads lineages through store/ without depending on lineage/. Later issues fill
// them with behaviour; the shapes and their JSON are contracts now.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lathe {

// How a detection was made.
enum class detection_method : uint8_t { source, ptx, sass, disassembly, proposer_audit };

struct feature {
  std::string locus;  // "function" or "function/loop-path" ("gemm_kernel/k")
  std::string name;   // from the feature registry ("smem_tiling", "simd"…)
  std::map<std::string, std::string> params;  // width, stages…
  detection_method method = detection_method::source;
};

// Provenance: who produced a piece of work. Kind + detail, rendered "llm:openai/gpt-x",
// "rules:unroll", "replay:cassette", "human"; `mechanical` marks a byte-identical forward step.
struct provenance {
  std::string kind;    // llm | rules | replay | human
  std::string detail;  // provider/model, rule name, cassette
  bool mechanical = false;
};
std::string to_string(const provenance& p);

enum class termination : uint8_t { complete, step_limit, rejection_limit, unknown };

struct transition {
  std::string from_kernel, to_kernel;  // kernel hashes
  std::string action;                  // action category
  std::string locus;
  std::string edit;                    // the edit as applied (diff or rule invocation)
  std::vector<feature> removed, added;
  std::optional<double> speedup;       // measured paired ratio, to over from
  std::vector<int64_t> evaluations;    // gate evidence (evaluation ids)
  std::vector<std::string> rejected;   // rejected attempts (summaries)
  provenance prov;
};

struct lineage {
  std::string task;
  std::vector<std::string> kernels;  // naive = K0 … Kn = expert (hashes)
  std::vector<transition> steps;
  termination term = termination::unknown;
  std::string reason;
  std::vector<std::string> remaining_features;
};

struct constraint {
  std::string what;  // "capability", "smem_bytes", "dtype", "alignment", "divisibility"
  std::string value;
};

struct skill_card {
  std::string id;
  std::string intent;
  std::string anchor;
  std::map<std::string, std::string> carriers;  // language/platform -> carrier
  std::vector<std::string> preconditions;       // prose
  std::vector<constraint> constraints;          // checkable preconditions
  std::string effect, risk, scope;
  std::vector<int64_t> evidence;                // evaluation ids
  std::vector<std::string> verification_log;
  std::vector<std::string> requires_features, provides_features, conflicts_features;
  bool admitted = false;
};

// A budget: each action reserves its worst case first and commits what it used.
struct budget {
  std::optional<int64_t> steps, evals, tokens;
  std::optional<double> usd, seconds;
};

enum class run_kind : uint8_t { decompose, optimize, evolve, bench };
enum class run_state : uint8_t { running, finished, failed, interrupted };

struct run {
  std::string id;
  run_kind kind = run_kind::optimize;
  std::string task;
  run_state state = run_state::running;
  budget limits;
  std::string created_at;
};

const char* to_string(detection_method m);
const char* to_string(termination t);
const char* to_string(run_kind k);
const char* to_string(run_state s);

}  // namespace lathe
