#include "cli/proposer_choice.h"

namespace lathe::cli {

const char* to_string(proposer_choice c) { return c == proposer_choice::llm ? "llm" : "rules"; }

result<proposer_choice> choose_proposer(std::string_view flag, bool model_configured) {
  if (flag == "rules") return proposer_choice::rules;
  if (flag == "llm") {
    if (!model_configured)
      return fail(errc::invalid_argument,
                  "--proposer llm: no model is configured (write a lathe.toml, docs/config.md; "
                  "`lathe doctor` shows where it is looked for), or use --proposer rules");
    return proposer_choice::llm;
  }
  if (flag == "auto") return model_configured ? proposer_choice::llm : proposer_choice::rules;
  return fail(errc::invalid_argument,
              "--proposer '" + std::string(flag) + "': expected rules, llm or auto");
}

result<llm::found_config> find_model_config(const workspace& ws, const llm::env_lookup& env) {
  return llm::find_config(ws.root, env);
}

result<proposer_decision> decide_proposer(std::string_view flag, const workspace& ws,
                                          const llm::env_lookup& env) {
  proposer_decision d;
  if (flag == "rules") {
    d.why = "rules engine (--proposer rules)";
    d.config_source = "not read (--proposer rules)";
    return d;
  }
  if (flag != "llm" && flag != "auto") {
    auto c = choose_proposer(flag, false);
    return tl::unexpected(c.error());
  }
  auto found = find_model_config(ws, env);
  if (!found) return tl::unexpected(found.error());
  auto c = choose_proposer(flag, found->cfg.has_value());
  if (!c) return tl::unexpected(c.error());
  d.choice = *c;
  if (d.choice == proposer_choice::llm) {
    d.cfg = found->cfg;
    d.why = "model " + d.cfg->provenance_detail() + " from " + d.cfg->file.string();
    d.config_source = d.cfg->file.string();
  } else {
    std::string where;
    for (const auto& p : found->searched) where += (where.empty() ? "" : ", ") + p.string();
    d.why = "rules engine (no model configured; lathe.toml looked for in " + where + ")";
    d.config_source = "none (looked for in " + where + ")";
  }
  return d;
}

}  // namespace lathe::cli
