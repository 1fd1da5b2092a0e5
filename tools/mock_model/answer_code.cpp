// propose_backward, rederive_forward, materialize, mutate and repair: one catalog change chosen
// from the kernel (catalog.h), possibly made wrong on purpose (wrong.h).
#include <algorithm>
#include <set>

#include "answers.h"
#include "catalog.h"
#include "core/feature_registry.h"
#include "source.h"
#include "wrong.h"

namespace lathe::mock {
namespace {

std::string field_or_empty(const prompt& p, std::string_view name) {
  auto v = field(p.user, name, p.operation);
  return v ? *v : std::string();
}

// Changes a rejected note already names (its feature and its function), unless that leaves
// nothing: "do not repeat it" is a preference, not a reason to give up.
std::vector<change> without_rejected(std::vector<change> cands, const std::string& rejected) {
  if (rejected.empty() || trim(rejected) == "(none)") return cands;
  std::vector<change> kept;
  for (const auto& c : cands) {
    bool named = false;
    for (const auto& line : split_lines(rejected))
      named =
          named || (!find_words(line, c.feature).empty() && !find_words(line, c.function).empty());
    if (!named) kept.push_back(c);
  }
  return kept.empty() ? cands : kept;
}

std::vector<change> only_feature(const std::vector<change>& cands, std::string_view name) {
  std::vector<change> out;
  for (const auto& c : cands)
    if (c.feature == name) out.push_back(c);
  return out;
}

// Prefer sites at the given locus ("f" or "f/loop"): exact, then same function, then any.
std::vector<change> at_locus(const std::vector<change>& cands, const std::string& locus) {
  if (locus.empty()) return cands;
  std::vector<change> exact, same;
  const std::string fn = locus.substr(0, locus.find('/'));
  for (const auto& c : cands) {
    if (c.locus == locus) exact.push_back(c);
    if (c.function == fn) same.push_back(c);
  }
  return !exact.empty() ? exact : !same.empty() ? same : cands;
}

// One feature, uniformly among the distinct ones: a feature with many sites is not favoured
// over one with a single site.
std::string pick_feature(const std::vector<change>& cands, const context& c) {
  std::vector<std::string> names;
  for (const auto& x : cands)
    if (std::find(names.begin(), names.end(), x.feature) == names.end()) names.push_back(x.feature);
  auto fs = c.choose.for_purpose("feature");
  return names[fs.below(names.size())];
}

const change& pick_site(const std::vector<change>& cands, const context& c) {
  auto ss = c.choose.for_purpose("site");
  return cands[ss.below(cands.size())];
}

change pick(const std::vector<change>& cands, const context& c) {
  return pick_site(only_feature(cands, pick_feature(cands, c)), c);
}

// The chosen changes applied in order, then the slip when this answer is to be wrong.
answer code_answer(const context& c, const mock_bundle& kernel, const std::vector<change>& chs) {
  answer a;
  a.has_edits = true;
  a.before = kernel;
  a.after = kernel;
  for (const auto& ch : chs) {
    a.after = apply_change(a.after, ch);
    a.notes.push_back(ch.action + " at " + ch.locus + ": " + ch.what);
  }
  if (c.f.wrong) {
    auto ws = c.choose.for_purpose("wrong_kind");
    if (auto w = make_wrong(a.after, chs.front().function, c.opt.only_kind, ws)) {
      a.after.files[w->path] = w->text;
      a.notes.push_back(std::string("wrong answer (") + to_string(w->kind) + ") at " + w->where +
                        ": " + w->what);
    } else {
      a.notes.push_back(
          "wrong answer asked for, but no kind of wrongness applies: answered correctly");
    }
  }
  return a;
}

answer code_answer(const context& c, const mock_bundle& kernel, const change& ch) {
  return code_answer(c, kernel, std::vector<change>{ch});
}

std::string sentence(const change& ch) {
  std::string s = ch.what;
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s + ".";
}

}  // namespace

answer refusal(const prompt& p, const std::string& why, std::vector<std::string> names) {
  if (names.empty()) names.push_back("loop_unroll");  // the schema wants a name; see the rationale
  if (names.size() > 3) names.resize(3);
  answer a;
  a.has_edits = true;
  const std::string rationale = "refused: " + why;
  auto& b = a.body;
  const std::string& op = p.operation;
  if (op == "repair") {
    b["diagnosis"] = why;
    b["rationale"] = rationale;
  } else if (op == "seed_baseline") {
    b["rationale"] = rationale;
  } else {
    b["action"] = "none";
    b["locus"] = "(none)";  // the schema wants a non-empty locus
    if (op == "propose_backward")
      b["removes"] = names;
    else
      b["adds"] = names;
    if (op == "mutate") b["removes"] = nlohmann::ordered_json::array();
    b["rationale"] = rationale;
  }
  a.notes.push_back(rationale);
  return a;
}

answer_result answer_backward(const context& c) {
  auto kernel = operation_kernel(c.p, c.dir, true);
  if (!kernel) return tl::unexpected(kernel.error());
  const auto listed = feature_lines(field_or_empty(c.p, "features"));
  const auto prior = registry_names_in(field_or_empty(c.p, "action_prior"));
  auto cands =
      without_rejected(all_changes(*kernel, direction::remove), field_or_empty(c.p, "rejected"));
  std::vector<std::string> listed_names;
  for (const auto& l : listed) listed_names.push_back(l.name);
  // The prior orders the listed features; without a list, it orders everything.
  std::vector<change> chosen;
  for (const auto& name : prior) {
    if (!listed_names.empty() &&
        std::find(listed_names.begin(), listed_names.end(), name) == listed_names.end())
      continue;
    if (chosen = only_feature(cands, name); !chosen.empty()) break;
  }
  if (chosen.empty())
    for (const auto& c2 : cands)
      if (listed_names.empty() ||
          std::find(listed_names.begin(), listed_names.end(), c2.feature) != listed_names.end())
        chosen.push_back(c2);
  if (chosen.empty() && !listed_names.empty() && !cands.empty()) {
    // Nothing listed can be removed mechanically; something else can.
    chosen = cands;
  }
  if (chosen.empty())
    return refusal(c.p,
                   "nothing to remove: the kernel holds none of the mechanisms the mock can "
                   "take out mechanically",
                   listed_names);
  const std::string feature = pick_feature(chosen, c);
  chosen = only_feature(chosen, feature);
  for (const auto& l : listed)
    if (l.name == feature) chosen = at_locus(chosen, l.locus);
  const change& ch = pick_site(chosen, c);
  answer a = code_answer(c, *kernel, ch);
  a.body["action"] = ch.action;
  a.body["locus"] = ch.locus;
  a.body["removes"] = {ch.feature};
  a.body["rationale"] = sentence(ch) + " The kernel computes the same result without the " +
                        ch.feature + " mechanism; only its speed may change.";
  return a;
}

answer_result answer_forward(const context& c) {
  auto kernel = operation_kernel(c.p, c.dir, true);
  if (!kernel) return tl::unexpected(kernel.error());
  const std::string restore = field_or_empty(c.p, "restore");
  const auto lines = feature_lines(restore);
  std::string name, locus;
  if (!lines.empty()) {
    name = lines.front().name;
    locus = lines.front().locus;
  } else if (const auto names = registry_names_in(restore); !names.empty()) {
    name = names.front();
  }
  if (name.empty()) return refusal(c.p, "the restore field names no registry feature", {});
  auto cands = at_locus(without_rejected(catalog_changes(*kernel, name, direction::add),
                                         field_or_empty(c.p, "rejected")),
                        locus);
  if (cands.empty())
    return refusal(c.p, "no place in the kernel where the mock can add " + name, {name});
  const change ch = pick(cands, c);
  answer a = code_answer(c, *kernel, ch);
  a.body["action"] = ch.action;
  a.body["locus"] = ch.locus;
  a.body["adds"] = {ch.feature};
  a.body["rationale"] = sentence(ch) + " This re-applies " + ch.feature + " (" +
                        std::string(find_feature(ch.feature)->definition) + ").";
  return a;
}

answer_result answer_materialize(const context& c) {
  auto kernel = operation_kernel(c.p, c.dir, true);
  if (!kernel) return tl::unexpected(kernel.error());
  const std::string cards = field_or_empty(c.p, "cards");
  // The cards' `provides` first (in card order), then any name they mention.
  std::vector<std::string> names;
  for (const auto& line : split_lines(cards))
    if (line.find("provides") != std::string::npos)
      for (const auto& n : registry_names_in(line.substr(line.find("provides"))))
        if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  for (const auto& n : registry_names_in(cards))
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  for (const auto& name : names) {
    auto cands = without_rejected(catalog_changes(*kernel, name, direction::add),
                                  field_or_empty(c.p, "rejected"));
    if (cands.empty()) continue;
    const change ch = pick(cands, c);
    answer a = code_answer(c, *kernel, ch);
    a.body["action"] = ch.action;
    a.body["locus"] = ch.locus;
    a.body["adds"] = {ch.feature};
    a.body["rationale"] = sentence(ch) + " Applies the card providing " + ch.feature + ".";
    return a;
  }
  return refusal(c.p, "no card applies: the mock cannot add what the cards provide to this kernel",
                 names);
}

// The mutations the mock knows for `kernel`: additions (a registry name in `direction` first),
// else every addition and every tuning.
namespace {
std::vector<change> mutations(const context& c, const mock_bundle& kernel) {
  std::vector<change> cands;
  for (const auto& name : registry_names_in(field_or_empty(c.p, "direction"))) {
    cands = catalog_changes(kernel, name, direction::add);
    if (!cands.empty()) break;
  }
  if (cands.empty()) {
    cands = all_changes(kernel, direction::add);
    const auto t = tuning_changes(kernel);
    cands.insert(cands.end(), t.begin(), t.end());
  }
  return without_rejected(cands, field_or_empty(c.p, "rejected"));
}
}  // namespace

answer_result answer_mutate(const context& c) {
  auto kernel = operation_kernel(c.p, c.dir, true);
  if (!kernel) return tl::unexpected(kernel.error());
  auto cands = mutations(c, *kernel);
  if (cands.empty()) return refusal(c.p, "no mutation the mock knows applies to this kernel", {});
  // Mutations are drawn over all sites (tunings included), not feature first. With
  // --mutation-changes N, 1 to N of them are drawn one after another, each from the kernel the
  // previous ones left (a model rarely changes one thing at a time).
  auto ss = c.choose.for_purpose("mutation");
  std::vector<change> applied{cands[ss.below(cands.size())]};
  const size_t more = c.opt.mutation_changes > 1
                          ? c.choose.for_purpose("mutation_count").below(static_cast<size_t>(c.opt.mutation_changes))
                          : 0;
  // A later change may not lead back to a kernel the answer already passed through (a block size
  // retuned 128 -> 256 -> 128): the composed answer would undo itself, or be no edit at all.
  std::vector<mock_bundle> visited{*kernel, apply_change(*kernel, applied.front())};
  for (size_t i = 0; i < more; ++i) {
    std::vector<change> next;
    for (auto& ch : mutations(c, visited.back()))
      if (std::find(visited.begin(), visited.end(), apply_change(visited.back(), ch)) == visited.end())
        next.push_back(std::move(ch));
    if (next.empty()) break;
    applied.push_back(next[ss.below(next.size())]);
    visited.push_back(apply_change(visited.back(), applied.back()));
  }
  answer a = code_answer(c, *kernel, applied);
  const change& first = applied.front();
  a.body["action"] = first.action;
  a.body["locus"] = first.locus;
  // A tuning retunes a mechanism that is there: it adds none.
  auto adds = nlohmann::ordered_json::array();
  std::string why;
  for (const auto& ch : applied) {
    if (!ch.action.starts_with("tune_") && adds.size() < 3 &&
        std::find(adds.begin(), adds.end(), ch.feature) == adds.end())
      adds.push_back(ch.feature);
    why += (why.empty() ? "" : " ") + sentence(ch);
  }
  a.body["adds"] = adds;
  a.body["removes"] = nlohmann::ordered_json::array();
  a.body["rationale"] = why;
  return a;
}

answer_result answer_repair(const context& c) {
  auto kernel = operation_kernel(c.p, c.dir, true);
  if (!kernel) return tl::unexpected(kernel.error());
  const auto undo = undo_wrong(*kernel);
  if (!undo)
    return refusal(c.p,
                   "found none of the slips the mock knows how to undo (a bound one short, "
                   "a scaled store, a perturbed constant)",
                   {});
  answer a;
  a.has_edits = true;
  a.before = *kernel;
  a.after = *kernel;
  a.after.files[undo->path] = undo->text;
  a.notes.push_back("repair (" + std::string(to_string(undo->kind)) + ") at " + undo->where + ": " +
                    undo->what);
  std::string diagnosis;
  switch (undo->kind) {
    case wrong_kind::bound:
      diagnosis =
          "a loop bound or index guard stops one short, so the last outputs are never "
          "written (" +
          undo->where + ")";
      break;
    case wrong_kind::store:
      diagnosis = "a store scales its value by 1.0625, so the outputs are off by 6.25% (" +
                  undo->where + ")";
      break;
    case wrong_kind::constant:
      diagnosis = "a constant was perturbed by 0.0625 (" + undo->where + ")";
      break;
  }
  if (c.f.wrong) {
    auto ws = c.choose.for_purpose("wrong_kind");
    if (auto w = make_wrong(a.after, "", c.opt.only_kind, ws)) {
      a.after.files[w->path] = w->text;
      a.notes.push_back(std::string("wrong answer (") + to_string(w->kind) + ") at " + w->where +
                        ": " + w->what);
    }
  }
  a.body["diagnosis"] = diagnosis;
  a.body["rationale"] = undo->what + " (" + undo->where + ").";
  return a;
}

}  // namespace lathe::mock
