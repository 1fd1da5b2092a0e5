#include "features/feature_audit.h"

#include <algorithm>
#include <map>

#include "core/text.h"

namespace lathe::lineages {
namespace {

std::set<std::string> keys_of(const std::vector<feature>& fs) {
  std::set<std::string> out;
  for (const auto& f : fs) out.insert(feature_key(f));
  return out;
}

std::set<std::string> audit_keys_of(const std::vector<feature>& fs) {
  std::set<std::string> out;
  for (const auto& f : fs) out.insert(audit_key(f));
  return out;
}

bool on_artifact(const feature& f) {
  return f.method == detection_method::ptx || f.method == detection_method::sass ||
         f.method == detection_method::disassembly;
}

std::string params_text(const feature& f) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : f.params) parts.push_back(k + "=" + v);
  return join(parts, ",");
}

}  // namespace

std::string feature_key(const feature& f) { return cat(f.name, "@", f.locus); }

std::string audit_key(const feature& f) { return on_artifact(f) ? cat(f.name, "@*") : feature_key(f); }

std::string feature_text(const feature& f) {
  return cat(f.name, " @ ", f.locus.empty() ? std::string("?") : f.locus);
}

std::vector<feature> features_of(const agent::rules::detections& d) {
  std::vector<feature> out;
  std::set<std::string> seen;
  for (const auto& x : d.found)
    if (seen.insert(feature_key(x.what)).second) out.push_back(x.what);
  return out;
}

std::set<std::string> written_names(const kernel_bundle& k) {
  std::set<std::string> out;
  for (const auto& d : agent::rules::detect_source(k)) out.insert(d.what.name);
  return out;
}

bool compiler_can_make(std::string_view name) {
  return name == "simd" || name == "read_only_load" || name == "vector_access";
}

std::vector<feature> written_features(const std::vector<feature>& all,
                                      const std::set<std::string>& written) {
  std::vector<feature> out;
  for (const auto& f : all)
    if (!(on_artifact(f) && compiler_can_make(f.name) && !written.count(f.name))) out.push_back(f);
  return out;
}

feature_diff diff_features(const std::vector<feature>& from, const std::vector<feature>& to) {
  const auto in_from = keys_of(from), in_to = keys_of(to);
  feature_diff d;
  for (const auto& f : to)
    if (!in_from.count(feature_key(f))) d.added.push_back(f);
  for (const auto& f : from)
    if (!in_to.count(feature_key(f))) d.removed.push_back(f);
  return d;
}

step_audit audit_step(const std::vector<std::string>& claimed, const std::vector<feature>& successor,
                      const std::vector<feature>& predecessor,
                      const std::vector<feature>& successor_all,
                      const std::vector<feature>& predecessor_all) {
  step_audit a;
  const std::string claim = join(claimed, " + ");
  const std::set<std::string> names(claimed.begin(), claimed.end());
  if (names.empty()) {
    a.reason = "it claims no feature removed";
    return a;
  }
  const auto succ_keys = audit_keys_of(successor), pred_keys = audit_keys_of(predecessor);
  for (const auto& n : names)
    if (std::none_of(successor.begin(), successor.end(), [&](const feature& f) { return f.name == n; })) {
      a.reason = "it claims to remove " + n + ", which the kernel does not hold as a written mechanism";
      return a;
    }

  std::vector<std::string> lost_other, gained;
  std::set<std::string> lost_names;
  std::set<std::string> lost_keys;  // an artifact name lost at all its loci is named once
  for (const auto& f : successor) {
    if (pred_keys.count(audit_key(f))) continue;
    if (names.count(f.name)) {
      a.removed.push_back(f);
      lost_names.insert(f.name);
    } else if (lost_keys.insert(audit_key(f)).second) {
      lost_other.push_back(on_artifact(f) ? f.name : feature_text(f));
    }
  }
  std::set<std::string> gained_keys;
  for (const auto& f : predecessor)
    if (!succ_keys.count(audit_key(f)) && gained_keys.insert(audit_key(f)).second)
      gained.push_back(on_artifact(f) ? f.name : feature_text(f));

  // Notes: what moved without counting (compiler-made features, parameters).
  const feature_diff soft = diff_features(successor_all, predecessor_all);
  const auto pred_written = keys_of(predecessor), succ_written = keys_of(successor);
  for (const auto& f : soft.added)  // in the predecessor only
    if (!pred_written.count(feature_key(f)))
      a.notes.push_back("compiler-made " + feature_text(f) + " appeared (not written in the source)");
  for (const auto& f : soft.removed)
    if (!succ_written.count(feature_key(f)))
      a.notes.push_back("compiler-made " + feature_text(f) + " went away (not written in the source)");
  std::map<std::string, std::string> succ_params;
  for (const auto& f : successor) succ_params[feature_key(f)] = params_text(f);
  for (const auto& f : predecessor)
    if (auto it = succ_params.find(feature_key(f)); it != succ_params.end() && it->second != params_text(f))
      a.notes.push_back(feature_text(f) + ": params " + it->second + " -> " + params_text(f));

  if (!lost_other.empty() || !gained.empty()) {
    std::vector<std::string> why;
    if (!lost_other.empty()) why.push_back("also removed " + join(lost_other, ", "));
    if (!gained.empty()) why.push_back("added " + join(gained, ", "));
    a.reason = "not exactly " + claim + ": the predecessor " + join(why, "; ");
    a.removed.clear();
    return a;
  }
  if (a.removed.empty()) {
    a.kind = audit_kind::partial;
    a.reason = claim + " is still present at every locus it held";
    return a;
  }
  std::vector<std::string> kept;
  for (const auto& n : names)
    if (!lost_names.count(n)) kept.push_back(n);
  if (!kept.empty()) {
    a.reason = "not exactly " + claim + ": " + join(kept, ", ") + " is still present at every locus it held";
    a.removed.clear();
    return a;
  }
  a.kind = audit_kind::removed;
  return a;
}

}  // namespace lathe::lineages
