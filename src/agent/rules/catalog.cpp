// The catalog's registry, the listing of every applicable rule × site, replay of a carrier on
// another kernel, and the carrier's JSON.
#include "agent/rules/catalog.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "agent/rules/catalog_detail.h"
#include "agent/rules/catalog_intrinsics.h"  // intrinsics_rules()

namespace lathe::agent::rules {

namespace {

// Site parameters that say *which* site (not how to apply there): on replay they come from the
// chosen site, never from the original kernel's invocation.
bool identity_param(const std::string& k) {
  return k == "file" || k == "pointer" || k == "at" || k == "directive";
}

std::vector<std::string> anchor_words(std::string_view a) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : a) {
    if (c == ':' || c == '@' || c == '/' || c == '#') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
      if (c == ':' && out.size() == 1) out[0] += ':';  // the kind, kept apart from names
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// How much a site looks like the invocation's anchor: the same kind of anchor first, then shared
// names (function, loop variables, parameter, pragma words) and identity parameters.
int likeness(const rule_invocation& inv, const rule_site& s) {
  const auto a = anchor_words(inv.anchor), b = anchor_words(s.anchor);
  int score = 0;
  if (!a.empty() && !b.empty() && a[0] == b[0]) score += 100;
  for (size_t i = 1; i < a.size(); ++i)
    if (std::find(b.begin() + (b.empty() ? 0 : 1), b.end(), a[i]) != b.end()) score += 10;
  for (const auto& [k, v] : s.params)
    if (identity_param(k) && inv.params.count(k) && inv.params.at(k) == v) score += 5;
  if (s.where == branch::active) score += 1;
  return score;
}

}  // namespace

const char* to_string(rule_direction d) {
  return d == rule_direction::backward ? "backward" : "forward";
}

const std::vector<const rule*>& catalog() {
  static const std::vector<const rule*> all = [] {
    std::vector<const rule*> out;
    for (auto family : {detail::unroll_rules, detail::restrict_rules, detail::launch_bounds_rules,
                        detail::read_only_rules, detail::fast_math_rules, detail::openmp_rules,
                        detail::vector_rules, detail::intrinsics_rules, detail::flag_rules,
                        detail::isa_rules, detail::cp_async_rules})
      for (const rule* r : family()) out.push_back(r);
    std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->name() < b->name(); });
    return out;
  }();
  return all;
}

const rule* find_rule(std::string_view name) {
  for (const rule* r : catalog())
    if (r->name() == name) return r;
  return nullptr;
}

std::vector<applicable_site> applicable(const kernel_bundle& b, rule_direction direction,
                                        const catalog_options& options) {
  std::vector<applicable_site> out;
  for (const rule* r : catalog()) {
    if (r->direction() != direction) continue;
    const bool fast = r->feature() == "fast_math" && direction == rule_direction::forward;
    if (fast && !options.allow_fast_math) continue;
    for (rule_site& s : r->sites(b)) {
      if (s.where == branch::inactive && !options.include_inactive) continue;
      applicable_site a{r, s, {std::string(r->name()), s.anchor, s.params}};
      if (fast) a.invocation.params["allow_fast_math"] = "true";
      out.push_back(std::move(a));
    }
  }
  return out;
}

result<rule_result> replay(const rule_invocation& inv, const kernel_bundle& b) {
  const rule* r = find_rule(inv.rule);
  if (!r) return fail(errc::not_found, "no rule named '" + inv.rule + "' in the catalog");
  auto first = r->apply(b, inv);
  if (first) {
    first->note = "replayed at the same anchor " + inv.anchor +
                  (first->note.empty() ? "" : "; " + first->note);
    return first;
  }
  if (first.error().code != errc::not_found && first.error().code != errc::invalid_argument)
    return first;
  std::vector<rule_site> sites = r->sites(b);
  std::erase_if(sites, [](const rule_site& s) { return s.where == branch::inactive; });
  std::stable_sort(sites.begin(), sites.end(), [&](const rule_site& x, const rule_site& y) {
    return likeness(inv, x) > likeness(inv, y);
  });
  std::string tried;
  for (const rule_site& s : sites) {
    rule_invocation again{inv.rule, s.anchor, s.params};
    for (const auto& [k, v] : inv.params)
      if (!identity_param(k)) again.params[k] = v;
    auto res = r->apply(b, again);
    if (res) {
      res->note = "anchor " + inv.anchor + " does not apply here (" + first.error().message +
                  "); used the rule's site " + s.anchor + " (the most similar of " +
                  std::to_string(sites.size()) + ")" + (res->note.empty() ? "" : "; " + res->note);
      return res;
    }
    tried += "\n  " + s.anchor + ": " + res.error().message;
  }
  return fail(
      first.error().code,
      first.error().message + (sites.empty() ? "; the rule has no other site in this kernel"
                                             : "; no other site of the rule applied:" + tried));
}

void to_json(nlohmann::json& j, const rule_invocation& inv) {
  j = nlohmann::json{{"rule", inv.rule}, {"anchor", inv.anchor}, {"params", inv.params}};
}

void from_json(const nlohmann::json& j, rule_invocation& inv) {
  inv.rule = j.at("rule").get<std::string>();
  inv.anchor = j.at("anchor").get<std::string>();
  inv.params.clear();
  if (j.contains("params")) inv.params = j.at("params").get<std::map<std::string, std::string>>();
}

std::string to_carrier(const rule_invocation& inv) {
  nlohmann::json j;
  to_json(j, inv);
  return j.dump();
}

result<rule_invocation> from_carrier(std::string_view text) {
  try {
    rule_invocation inv;
    from_json(nlohmann::json::parse(text), inv);
    if (inv.rule.empty()) return fail(errc::parse_error, "rule invocation: empty \"rule\"");
    return inv;
  } catch (const nlohmann::json::exception& e) {
    return fail(errc::parse_error, std::string("rule invocation JSON: ") + e.what());
  }
}

}  // namespace lathe::agent::rules
