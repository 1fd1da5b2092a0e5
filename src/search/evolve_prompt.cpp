// The text an evolve run gives its proposer (evolve_prompt.h).
#include "search/evolve_prompt.h"

#include <sstream>

#include "core/text.h"

namespace lathe::search::detail {
namespace {

std::string head(const std::string& s, size_t max) { return s.size() <= max ? s : s.substr(0, max) + "…"; }

}  // namespace

// The execution feedback of a kernel's last evaluation, as the proposer reads it.
std::string feedback_text(const measured& m) {
  std::string s = cat("outcome ", outcome_text(m.outcome), ": ", m.message);
  if (m.v.speedup) s += cat("\nspeedup over the task's baseline: ", std::to_string(*m.v.speedup), "x (paired)");
  if (!m.inspection.empty()) s += "\ntiming and resources: " + m.inspection;
  if (!m.diagnostics.empty() && m.outcome != outcome::ok) s += "\ndiagnostics:\n" + head(m.diagnostics, 1200);
  return s;
}

size_t source_lines(const kernel_bundle& k) {
  size_t n = 0;
  for (const auto& [path, text] : k.sources) {
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);)
      if (l.find_first_not_of(" \t\r") != std::string::npos) ++n;
  }
  return n;
}

std::string placement_text(const child_record& c) {
  if (c.placement == placement::contest)
    return cat("contest ", c.placed ? "won" : "lost",
               c.contest_ratio ? cat(" (", std::to_string(*c.contest_ratio), "x against the incumbent)") : "");
  return to_string(c.placement) + std::string(c.placed ? " (placed)" : "");
}

std::string child_direction(const elite& parent, const std::string& parent_feedback,
                            const std::vector<const elite*>& insp, const std::vector<skill_card>& cards, int32_t g,
                            int32_t island, int32_t index, const std::string& reference_source) {
  // The child's place in the run is part of the prompt: siblings asked from one parent with the
  // same inspirations get different prompts (a deterministic proposer, like the mock model,
  // would otherwise write the same kernel for each).
  std::string s = cat("Evolutionary search, generation ", std::to_string(g), ", island ", std::to_string(island),
                      ", child ", std::to_string(index),
                      ". Make one focused change to the parent that could make it faster while keeping "
                      "it correct.\n\nThe parent's last evaluation (composite score ",
                      std::to_string(parent.score), "):\n", parent_feedback);
  if (!insp.empty()) {
    s += "\n\nInspirations (other elites of the archive, shown under `inspirations`):";
    for (const elite* e : insp)
      s += cat("\n- ", e->hash.substr(0, 12), ": score ", std::to_string(e->score),
               e->verdict.speedup ? cat(", ", std::to_string(*e->verdict.speedup), "x over the baseline") : "");
  }
  if (!cards.empty()) {
    s += "\n\nSkill cards retrieved for the parent's verified features (apply at most one, where its "
         "preconditions hold):";
    for (const auto& c : cards) s += cat("\n- ", c.name, ": ", c.intent);
  }
  if (!reference_source.empty())
    s += "\n\nThe task's reference (what the kernel must compute):\n" + head(reference_source, 4000);
  return s;
}

}  // namespace lathe::search::detail
