#include "cli/lineage_view.h"

#include <cstdio>

#include "core/text.h"
#include "spec/tune.h"

namespace lathe::cli {

std::string ratio_text(const std::optional<double>& r) {
  if (!r) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.3fx", *r);
  return b;
}

namespace {

std::string names(const std::vector<feature>& fs) {
  std::vector<std::string> out;
  for (const auto& f : fs) out.push_back(f.name + (f.locus.empty() ? "" : " @ " + f.locus));
  return out.empty() ? std::string("-") : join(out, ", ");
}

std::string kernel_name(const store& db, const std::string& hash) {
  if (auto k = db.get_kernel(hash)) return k->name + " [" + hash.substr(0, 8) + "]";
  return "[" + hash.substr(0, 8) + "]";
}

}  // namespace

void print_expert_check(const expert_check& c) {
  std::printf("task      %s\n", c.task.c_str());
  std::printf("expert    %s  [%.12s] on %s\n", c.kernel_name.c_str(), c.kernel.c_str(), c.target.c_str());
  std::printf("verdict   %s: %s\n", c.accepted ? "accepted" : "refused", c.reason.c_str());
  std::printf("speed     %s against %s; re-measured %s\n", ratio_text(c.ratio).c_str(),
              c.measured_against.empty() ? "the baseline" : c.measured_against.c_str(),
              ratio_text(c.remeasured_ratio).c_str());
  if (c.library_ratio) std::printf("library   %s against the task's vendor-library baseline (recorded, no bar)\n",
                                   ratio_text(c.library_ratio).c_str());
  for (const auto& f : c.findings)
    std::printf("screen    %s %s (%s)%s\n", f.what.c_str(), f.name.c_str(), f.where.c_str(),
                f.allowed ? " allowed by the task" : "");
  std::printf("features  ");
  if (c.features.empty()) std::printf("none detected");
  for (size_t i = 0; i < c.features.size(); ++i)
    std::printf("%s%s @ %s (%s)", i ? "\n          " : "", c.features[i].name.c_str(),
                c.features[i].locus.c_str(), to_string(c.features[i].method));
  std::printf("\n");
  if (!c.unknown_features.empty()) std::printf("undecided %s\n", join(c.unknown_features, ", ").c_str());
  std::printf("stored    expert check #%lld; evaluations", static_cast<long long>(c.id));
  for (auto id : c.evaluations) std::printf(" #%lld", static_cast<long long>(id));
  std::printf("\n");
}

void print_lineage(const lineage& l, const store& db) {
  std::printf("lineage   %s (%s, %s on %s)\n", l.id.c_str(), l.task.c_str(), l.expert.c_str(), l.target.c_str());
  std::printf("ends      %s: %s\n", to_string(l.term), l.reason.c_str());
  if (!l.remaining_features.empty())
    std::printf("remaining %s (in K0: the walk could not remove them)\n", join(l.remaining_features, ", ").c_str());
  if (l.kernels.empty()) return;
  std::printf("K0        %s\n", kernel_name(db, l.kernels.front()).c_str());
  for (size_t i = 0; i < l.steps.size(); ++i) {
    const transition& s = l.steps[i];
    std::printf("K%-2zu <- K%-2zu %-28s adds %-34s %9s  forward %-18s %s\n", i + 1, i, s.action.c_str(),
                names(s.added).c_str(), ratio_text(s.speedup).c_str(), to_string(s.forward.status),
                to_string(s.prov).c_str());
    if (!s.rejected.empty()) std::printf("          %zu rejected attempt(s) at this step\n", s.rejected.size());
  }
  std::printf("K%-8zu %s (the expert)\n", l.kernels.size() - 1, kernel_name(db, l.kernels.back()).c_str());
  std::printf("speedups are paired ratios time(K_i) / time(K_i+1) on this machine\n");
}

void print_cards_brief(const std::vector<skill_card>& cards) {
  if (cards.empty()) {
    std::printf("cards     none induced\n");
    return;
  }
  std::printf("cards     %zu induced (status candidate until `lathe skills admit`):\n", cards.size());
  for (const auto& c : cards)
    std::printf("          %-40s provides %-18s %s  %s\n", c.name.c_str(), join(c.provides_features, ",").c_str(),
                ratio_text(c.declared_ratio).c_str(), to_string(c.prov).c_str());
}

void print_card(const skill_card& c) {
  std::printf("card      %s  [%s]\n", c.name.c_str(), c.id.c_str());
  std::printf("status    %s%s%s\n", to_string(c.status), c.status_reason.empty() ? "" : ": ", c.status_reason.c_str());
  std::printf("intent    %s\n", c.intent.c_str());
  std::printf("anchor    %s\n", c.anchor.c_str());
  std::printf("action    %s (operator %s; from %s)\n", c.action.c_str(), c.op.c_str(), join(c.source_tasks, ", ").c_str());
  std::printf("contract  requires [%s] provides [%s] conflicts [%s]\n", join(c.requires_features, ", ").c_str(),
              join(c.provides_features, ", ").c_str(), join(c.conflicts_features, ", ").c_str());
  for (const auto& p : c.preconditions) std::printf("precond   %s\n", p.c_str());
  for (const auto& k : c.constraints) std::printf("constrain %s = %s\n", k.what.c_str(), k.value.c_str());
  std::printf("effect    %s (declared %s, measured on %s)\n", c.effect.c_str(), ratio_text(c.declared_ratio).c_str(),
              c.target.c_str());
  std::printf("risk      %s\n", c.risk.c_str());
  std::printf("scope     %s\n", c.scope.c_str());
  for (const auto& [key, carrier] : c.carriers) {
    std::string text = carrier.size() > 400 ? carrier.substr(0, 400) + "\n          …" : carrier;
    std::printf("carrier   (%s)\n%s\n", key.c_str(), text.c_str());
  }
  if (c.tuned) {
    char interval[64] = "";
    if (c.tuned->lo && c.tuned->hi) std::snprintf(interval, sizeof interval, " [%.3f, %.3f]", *c.tuned->lo, *c.tuned->hi);
    std::printf("tuned     %s over the default %s%s (kernel %s, run %s)\n", config_label(c.tuned->values).c_str(),
                config_label(c.tuned->defaults).c_str(), interval, c.tuned->kernel.c_str(), c.tuned->run.c_str());
  }
  std::vector<std::string> ids;
  for (int64_t e : c.evidence) ids.push_back(std::to_string(e));
  std::printf("evidence  %zu evaluation(s) of %s kernels%s; sources %s\n", c.evidence.size(),
              std::string(to_string(c.evidence_lang)).c_str(), ids.empty() ? "" : (" (" + join(ids, ", ") + ")").c_str(),
              join(c.sources, ", ").c_str());
  std::printf("provenance %s\n", to_string(c.prov).c_str());
  for (const auto& n : c.verification_log) std::printf("log       %s\n", n.c_str());
  for (const auto& t : c.trials)
    std::printf("trial     %s %s %s %s (%s, %s kernel)%s%s\n", t.created_at.c_str(), t.task.c_str(), to_string(t.verdict),
                ratio_text(t.ratio).c_str(), to_string(t.prov).c_str(), std::string(to_string(t.lang)).c_str(),
                t.reason.empty() ? "" : ": ", t.reason.c_str());
}

}  // namespace lathe::cli
