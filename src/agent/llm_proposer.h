// The LLM proposer (docs/proposer.md): each operation renders its prompt template, asks the model
// for one JSON reply, and believes nothing it has not checked: the reply's schema, its feature
// names against the registry, its edits (applied exactly), its citations (verified against the
// source) and its rankings (every id once). Refused replies go back to the model with lathe's
// message, within one repair bound per operation. Budgets and call records are the provider's
// concern: give it an llm::metered_provider, and every call, repairs included, is reserved,
// committed and stored.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "agent/ask.h"
#include "agent/prompt.h"
#include "agent/proposer.h"
#include "agent/replies.h"
#include "agent/reply_edits.h"
#include "core/target.h"
#include "llm/config.h"
#include "llm/provider.h"

namespace lathe::agent {

// The sampling settings of one operation's requests, recorded with each call and in its cassette
// key (llm/cassette.h).
struct sampling_settings {
  double temperature = 0.0;
  std::optional<double> top_p;
  int64_t max_tokens = 16384;  // room for a whole-file edit of a large kernel
  bool operator==(const sampling_settings&) const = default;
};

// An operation's default: deterministic (temperature 0), so that audits, cards and backward
// steps repeat; mutate samples at Kernel-Smith's temperature 0.6 and top_p 0.95, where an
// evolutionary search needs varied children.
sampling_settings default_sampling(operation op);
// Each operation's settings from lathe.toml's [sampling.<operation>] over [sampling.default]
// over default_sampling.
std::map<operation, sampling_settings> sampling_from(const llm::config& cfg);

struct llm_options {
  int32_t max_repairs = 2;  // repair rounds per operation, schema and edits together
  // By operation; one missing takes default_sampling.
  std::map<operation, sampling_settings> sampling;
  size_t max_diagnostics_bytes = 16384;  // a repair prompt shows at most this much of the log
  const llm::cancel_token* cancel = nullptr;
  // Where the kernels run: the contract of v2 prompts (threads, the ISA a host runs, ceilings).
  target host;
  // The newest template version to use (0: the newest there is; 1: the v1 templates, so that
  // calls recorded with them replay). Each operation takes its newest version up to this one.
  int32_t prompt_version = 0;
};

// The entry file of a seed bundle and the placeholder the model replaces with `@@@ WHOLE`.
inline constexpr const char* seed_placeholder = "// lathe: replace this file with the kernel\n";
// A bundle in the task's language whose entry (`kernel.cpp` for CPU tasks, `kernel.cu` for CUDA)
// holds only the placeholder, flags -O3 (a bare file's defaults).
kernel_bundle seed_bundle(const task& t);

class llm_proposer final : public proposer {
 public:
  // `model` and `prompts` must outlive the proposer.
  llm_proposer(llm::provider& model, const prompt_library& prompts, llm_options options = {});

  provenance origin() const override;  // {"llm", model.name()}: "llm:openai/gpt-4.1"

  op_result<proposal> propose_backward(const backward_request& r) override;
  op_result<proposal> rederive_forward(const forward_request& r) override;
  op_result<audit_result> audit_features(const audit_request& r) override;
  op_result<skill_card> abstract_card(const card_request& r) override;
  op_result<proposal> materialize(const materialize_request& r) override;
  op_result<proposal> repair(const repair_request& r) override;
  op_result<proposal> seed_baseline(const seed_request& r) override;
  op_result<ranking> rank_paths(const rank_request& r) override;
  op_result<proposal> mutate(const mutate_request& r) override;
  // The proposer keeps no per-call state; the providers take concurrent calls (HTTP through the
  // client's slots, a command in its own working directory, cassettes by a locked counter) and
  // the ledger and the call log lock. Two identical prompts in flight at once may take a
  // cassette's recorded answers in either order.
  bool concurrent() const override { return true; }

  // The fields each operation renders its template with (docs/proposer.md "Prompts"); public so
  // that a test can render every shipped template with exactly these names.
  // Version 2 adds `contract` to the code-writing operations and `progress` to the search ones.
  static std::vector<std::string> field_names(operation op, int32_t version = 1);
  // The template version this proposer renders `op` with (0: none is shipped).
  int32_t version_for(operation op) const;

 private:
  struct answer {
    nlohmann::json value;
    int32_t calls = 0;
    std::optional<applied_edits> edited;  // code-writing operations
  };
  op_result<answer> ask(operation op, const prompt_fields& fields, const kernel_bundle* base,
                        const reply_check& extra);
  op_result<proposal> write_code(operation op, const prompt_fields& fields,
                                 const kernel_bundle& base);

  llm::provider& model_;
  const prompt_library& prompts_;
  llm_options options_;
};

}  // namespace lathe::agent
