#include "search/export.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "core/hash.h"
#include "core/json.h"
#include "core/text.h"

namespace lathe::search {

using nlohmann::json;

const char* to_string(drop_reason r) {
  switch (r) {
    case drop_reason::failed: return "failed";
    case drop_reason::not_faster: return "not_faster";
    case drop_reason::not_best_step: return "not_best_step";
    case drop_reason::leaked: return "leaked";
    case drop_reason::too_long: return "too_long";
    case drop_reason::migrant: return "migrant";
    case drop_reason::duplicate: return "duplicate";
  }
  return "?";
}

namespace {

std::set<std::string> line_set(const kernel_bundle& k) {
  std::set<std::string> out;
  for (const auto& [path, text] : k.sources) {
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) {
      const size_t a = l.find_first_not_of(" \t\r");
      if (a == std::string::npos) continue;
      const size_t b = l.find_last_not_of(" \t\r");
      out.insert(l.substr(a, b - a + 1));
    }
  }
  return out;
}

std::string sources_text(const kernel_bundle& k) {
  std::string s;
  for (const auto& [path, text] : k.sources) s += "=== FILE " + path + " ===\n" + text + (text.ends_with('\n') ? "" : "\n");
  return s;
}

std::string prompt_of(const step_source& s) {
  std::string p = "## task\n" + s.task_text + "\n";
  if (s.parent) p += "\n## parent kernel\n" + sources_text(*s.parent);
  for (size_t i = 0; i < s.inspirations.size(); ++i)
    if (s.inspirations[i]) p += "\n## inspiration " + std::to_string(i + 1) + "\n" + sources_text(*s.inspirations[i]);
  if (!s.child.prompt_context.empty()) p += "\n## direction\n" + s.child.prompt_context + "\n";
  return p;
}

constexpr const char* system_text =
    "You are an expert GPU and CPU kernel engineer. Rewrite the parent kernel into a faster one that "
    "computes the same results, keeping lathe's C ABI (lathe_launch). Answer with the complete new "
    "kernel source.";

}  // namespace

double source_similarity(const kernel_bundle& a, const kernel_bundle& b) {
  const auto x = line_set(a), y = line_set(b);
  if (x.empty() && y.empty()) return 1.0;
  size_t common = 0;
  for (const auto& l : x) common += y.count(l);
  return static_cast<double>(common) / static_cast<double>(x.size() + y.size() - common);
}

std::optional<double> step_speedup(const child_record& c) {
  if (c.contest_ratio) return c.contest_ratio;
  if (c.speedup && c.parent_speedup && *c.parent_speedup > 0) return *c.speedup / *c.parent_speedup;
  return std::nullopt;
}

bool training_grade(const std::string& label) {
  return label.rfind("rules", 0) != 0 && label.find("mock") == std::string::npos &&
         label.rfind("replay", 0) != 0 && label.find("cassette") == std::string::npos;
}

std::optional<drop_reason> judge(const step_source& s, const export_options& o) {
  const child_record& c = s.child;
  if (c.kind == child_kind::migrant) return drop_reason::migrant;
  if (!s.kernel || c.outcome != outcome::ok) return drop_reason::failed;
  const bool translation = c.kind == child_kind::translation;
  if (!translation) {
    const auto sp = step_speedup(c);
    if (!sp || *sp <= 1.0 + o.epsilon) return drop_reason::not_faster;
    if (o.best_steps) {
      // Best steps: the parent already had a speedup over the baseline, and the child leaves room
      // to the run's best (it is not the run's last word).
      const bool had = c.parent_speedup && *c.parent_speedup > 1.0 + o.epsilon;
      const bool room = s.run_best_speedup && c.speedup && *c.speedup * (1.0 + o.epsilon) < *s.run_best_speedup;
      if (!had || !room) return drop_reason::not_best_step;
    }
  }
  for (const kernel_bundle* in : s.inspirations) {
    if (!in) continue;
    const double to_insp = source_similarity(*s.kernel, *in);
    const double to_parent = s.parent ? source_similarity(*s.kernel, *s.parent) : 0.0;
    if (to_insp >= o.leak_similarity && to_insp > to_parent) return drop_reason::leaked;
  }
  if (o.max_chars > 0 && prompt_of(s).size() + sources_text(*s.kernel).size() > o.max_chars)
    return drop_reason::too_long;
  return std::nullopt;
}

export_result export_steps(const std::vector<step_source>& steps, const export_options& o) {
  export_result out;
  std::set<std::string> seen;  // hashes of the kept samples' messages
  for (const auto& s : steps) {
    ++out.steps;
    if (auto why = judge(s, o)) {
      ++out.dropped[to_string(*why)];
      continue;
    }
    if (!seen.insert(content_hash(prompt_of(s) + '\0' + sources_text(*s.kernel))).second) {
      ++out.dropped[to_string(drop_reason::duplicate)];
      continue;
    }
    const child_record& c = s.child;
    const auto sp = step_speedup(c);
    json sample{
        {"messages", json::array({{{"role", "system"}, {"content", system_text}},
                                  {{"role", "user"}, {"content", prompt_of(s)}},
                                  {{"role", "assistant"}, {"content", sources_text(*s.kernel)}}})},
        {"reward", c.kind == child_kind::translation ? json(1.0) : json(sp ? *sp : 0.0)},
        {"kind", c.kind == child_kind::translation ? "translation" : "optimization"},
        {"provenance",
         {{"run", s.run}, {"generation", c.generation}, {"island", c.island}, {"parent", c.parent},
          {"child", c.kernel}, {"inspirations", c.inspirations}, {"cards", c.cards},
          {"proposer", c.prov}, {"evaluations", c.evaluations}, {"speedup_over_baseline", c.speedup ? json(*c.speedup) : json(nullptr)},
          {"training_grade", s.training_grade}}}};
    out.samples.push_back(std::move(sample));
  }
  return out;
}

}  // namespace lathe::search
