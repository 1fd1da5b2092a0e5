#include "cli/proposer_session.h"

#include <mutex>

#include "agent/llm_proposer.h"
#include "agent/rules/rules_proposer.h"
#include "llm/factory.h"
#include "llm/metered.h"
#include "llm/rerun.h"

namespace lathe::cli {

std::string proposer_session::label() const {
  if (decision.choice == proposer_choice::rules) return rules_engine_label;
  return "model results: " + decision.why;
}

result<std::unique_ptr<proposer_session>> open_proposer(context& ctx, const task& t,
                                                        std::string_view flag,
                                                        const std::optional<std::string>& run_id,
                                                        const budget& limits,
                                                        const llm::amounts& already_spent, bool resuming,
                                                        const std::optional<std::filesystem::path>& batch_dir) {
  const auto env = llm::process_env();
  auto decided = decide_proposer(flag, ctx.ws, env);
  if (!decided) return tl::unexpected(decided.error());
  auto s = std::make_unique<proposer_session>();
  s->decision = std::move(*decided);
  if (batch_dir && s->decision.choice == proposer_choice::rules)
    return fail(errc::invalid_argument,
                "batch mode (--propose-only, --gate-batch) needs the model that answers named in lathe.toml "
                "(docs/config.md; any provider: its calls are made through the folder), and --proposer llm or auto");
  if (s->decision.choice == proposer_choice::rules) {
    s->budget = std::make_unique<llm::ledger>(llm::limits{limits, std::nullopt}, already_spent);
    s->proposer = std::make_unique<agent::rules::rules_proposer>(agent::rules::options_for(t));
    return s;
  }
  const llm::config& cfg = *s->decision.cfg;
  auto prompts = agent::prompt_library::load(ctx.where.prompts_dir);
  if (!prompts) return tl::unexpected(prompts.error());
  s->prompts = std::move(*prompts);
  auto inner = llm::make_provider(cfg);
  if (!inner) return tl::unexpected(inner.error());
  if (batch_dir) {
    std::vector<llm_call> recorded;
    if (run_id && ctx.db) {
      auto got = ctx.db->llm_calls(*run_id);
      if (!got) return tl::unexpected(got.error());
      recorded = std::move(*got);
    }
    auto b = std::make_unique<llm::batch_dir_provider>(*batch_dir, (*inner)->name(), recorded);
    s->batch = b.get();
    *inner = std::move(b);
  }
  s->budget = std::make_unique<llm::ledger>(llm::with_overrides(cfg.caps, limits), already_spent);
  if (ctx.db)
    s->log = std::make_unique<llm::call_log>(*ctx.db, llm::identity_of(cfg, run_id),
                                             llm::secret_values(&cfg, env));
  s->model = std::make_unique<llm::metered_provider>(
      std::move(*inner), llm::meter_of(cfg, s->budget.get(), s->log.get()));
  // A resumed run: the calls it made before it stopped are answered from the call log.
  if (resuming && run_id && ctx.db) {
    auto recorded = ctx.db->llm_calls(*run_id);
    if (!recorded) return tl::unexpected(recorded.error());
    s->model = std::make_unique<llm::rerun_provider>(std::move(s->model), *recorded, s->budget.get());
  }
  agent::llm_options options;
  options.sampling = agent::sampling_from(cfg);
  options.prompt_version = cfg.prompt_version;
  options.host = t.plat == platform::cuda && ctx.gpu ? *ctx.gpu : ctx.tgt;
  s->proposer = std::make_unique<agent::llm_proposer>(*s->model, *s->prompts, options);
  return s;
}

lineages::gate_hooks make_gate_hooks(context& ctx, gate_settings s) {
  s.progress = false;
  lineages::gate_hooks h;
  h.config = [&ctx, s](const task& t, bool time) {
    gate_settings one = s;
    one.time = time && s.time;
    return make_gate_config(ctx, t, one);
  };
  // One writer at a time: evolve gates several children at once (its evaluations overlap in
  // their builds and checks), and the store's connection takes one transaction at a time.
  h.record = [&ctx](const kernel_bundle& k, evaluation& e) {
    static std::mutex mu;
    std::lock_guard<std::mutex> g(mu);
    return store_evaluation(ctx, k, e);
  };
  return h;
}

}  // namespace lathe::cli
