// The proposer a verb runs with, built from `--proposer` (proposer_choice.h) and kept alive with
// everything it needs: for the rule engine, its options from the task; for a model, the provider
// wrapped in the budget ledger and the call log (every call reserved, committed and stored under
// the run's id), and the prompt templates. One object, so that a verb holds one thing.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "agent/prompt.h"
#include "agent/proposer.h"
#include "cli/context.h"
#include "cli/proposer_choice.h"
#include "core/budget.h"
#include "core/error.h"
#include "llm/batch_dir.h"
#include "llm/budget.h"
#include "llm/call_log.h"
#include "llm/provider.h"
#include "verify/verifier.h"

namespace lathe::cli {

// What every table of rule-engine results says beside them (DESIGN.md "Two proposers").
inline constexpr const char* rules_engine_label =
    "rule-engine results (mechanical rewrites): they show the machinery works, not what a model would find";

struct proposer_session {
  proposer_decision decision;
  std::optional<agent::prompt_library> prompts;
  std::unique_ptr<llm::ledger> budget;
  std::unique_ptr<llm::call_log> log;
  std::unique_ptr<llm::provider> model;    // metered
  std::unique_ptr<agent::proposer> proposer;
  llm::batch_dir_provider* batch = nullptr;  // batch mode's provider (inside `model`), else null
  // The label every table prints beside results (DESIGN.md: rule results show the machinery).
  std::string label() const;
};

// `flag`: rules | llm | auto. `run_id` tags every model call in the store; `limits` is the run's
// --budget (over lathe.toml's [limits] for a model); `already_spent`: what a resumed run used
// before (its seconds). `batch_dir`: batch mode (llm/batch_dir.h), the model answering through
// that folder; it needs a model in lathe.toml, whose name the work is credited to. The session's ledger holds them for every proposer, the rule engine too
// (optimize reserves its steps and evaluations there). `resuming`: the model calls `run_id` made
// before are answered from the store's call log (llm/rerun.h), not asked again.
result<std::unique_ptr<proposer_session>> open_proposer(context& ctx, const task& t,
                                                        std::string_view flag,
                                                        const std::optional<std::string>& run_id,
                                                        const budget& limits = {},
                                                        const llm::amounts& already_spent = {},
                                                        bool resuming = false,
                                                        const std::optional<std::filesystem::path>& batch_dir = {});

// The gate as lineage/ and skills/ reach it from a verb: this context's gate configuration for
// each task (`s`, with `time` per call) and its store for every evaluation. One place, so that
// decompose and admission measure alike. `s.time` false makes every call checks only, a compare
// included (`lathe evolve --no-time`).
lineages::gate_hooks make_gate_hooks(context& ctx, gate_settings s);

}  // namespace lathe::cli
