// Imports from KLineage (klineage_import.h): its SKILL.md cards, card dictionaries and saved
// lineages, mapped onto lathe's cards and lineages field by field.
#include "skills/klineage_import.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>

#include "core/feature_registry.h"
#include "core/hash.h"
#include "skills/render.h"
#include "skills/render_yaml.h"

namespace lathe::skills {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const provenance imported{"import", "klineage", false};

// A list of strings under any of `keys` (a lone string counts as a list of one).
std::vector<std::string> strings(const json& j, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    if (!j.contains(k)) continue;
    const json& v = j.at(k);
    std::vector<std::string> out;
    if (v.is_string()) out.push_back(v.get<std::string>());
    if (v.is_array())
      for (const auto& x : v)
        if (x.is_string()) out.push_back(x.get<std::string>());
    return out;
  }
  return {};
}

std::string text_of(const json& j, const char* key) {
  return j.contains(key) && j.at(key).is_string() ? j.at(key).get<std::string>() : std::string();
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

bool wildcard(const std::vector<std::string>& v) {
  return v.empty() || std::all_of(v.begin(), v.end(), [](const std::string& s) { return s == "*"; });
}

// KLineage names platforms by device and toolkit ("nvidia-sm90a-cuda13", "sm120"); lathe's carrier
// keys name language and platform ("cuda/cuda", "cpp/cpu").
std::string platform_of(const std::string& p) {
  if (p.find("sm") != std::string::npos || p.find("nvidia") != std::string::npos ||
      p.find("cuda") != std::string::npos)
    return "cuda";
  if (p.find("x86") != std::string::npos || p.find("cpu") != std::string::npos) return "cpu";
  return p;
}

// "sm90a" / "sm_90" inside a platform name as lathe's isa constraint ("sm_90a").
std::string isa_of(const std::string& p) {
  for (size_t i = 0; i + 2 < p.size(); ++i) {
    if (p[i] != 's' || p[i + 1] != 'm') continue;
    size_t k = i + 2;
    if (k < p.size() && p[k] == '_') ++k;
    const size_t digits = k;
    while (k < p.size() && std::isdigit(static_cast<unsigned char>(p[k]))) ++k;
    if (k == digits) continue;
    std::string isa = "sm_" + p.substr(digits, k - digits);
    if (k < p.size() && p[k] == 'a') isa += 'a';
    return isa;
  }
  return "";
}

std::string feature_text(const json& f) {
  if (f.is_string()) return f.get<std::string>();
  return text_of(f, "name");
}

std::vector<feature> features_of(const json& j) {
  std::vector<feature> out;
  if (!j.is_array()) return out;
  for (const auto& f : j)
    if (f.is_object())
      out.push_back(feature{text_of(f, "locus"), text_of(f, "name"), {}, detection_method::proposer_audit});
  return out;
}

// KLineage's ValidationResult: passed when it compiled, was correct and was timed.
bool passed(const json& v) {
  return v.is_object() && v.value("compile_passed", false) && v.value("correctness_passed", false) &&
         v.value("profile_passed", false);
}

std::optional<double> latency(const json& v) {
  if (v.is_object() && v.contains("latency_ms") && v["latency_ms"].is_number())
    return v["latency_ms"].get<double>();
  return std::nullopt;
}

void note_unknown_keys(const json& j, const std::set<std::string>& known, const std::string& where,
                       std::vector<std::string>& unmapped) {
  for (auto& [k, v] : j.items())
    if (!known.count(k)) unmapped.push_back(where + k + ": not a KLineage field lathe knows; dropped");
}

// What every imported card shares: identity from its content, status, provenance and the log.
void finish_card(skill_card& c, const std::string& skill_id, const std::string& content,
                 const std::string& origin, const std::string& form, std::vector<std::string>& unmapped) {
  c.id = "klineage-" + content_hash(content);
  c.name = kebab_name(skill_id);
  if (c.name.empty()) c.name = "klineage-" + c.id.substr(9, 12);
  if (c.name != skill_id)
    unmapped.push_back("skill_id: '" + skill_id + "' is written '" + c.name + "' (card names are kebab-case)");
  c.status = card_status::candidate;
  c.status_reason = "imported from KLineage; not admitted here until it passes lathe's own admission";
  c.prov = imported;
  c.verification_log.insert(c.verification_log.begin(),
                            "imported from KLineage (" + form + ") " + origin + ", skill_id " + skill_id);
  if (!unmapped.empty())
    c.verification_log.push_back("KLineage fields with no place in a lathe card: " + join(unmapped, "; "));
}

void scope_into(skill_card& c, const json& scope, std::vector<std::string>& unmapped) {
  const auto cases = strings(scope, {"cases"});
  const auto languages = strings(scope, {"languages"});
  const auto platforms = strings(scope, {"platforms"});
  const auto prior = strings(scope, {"prior_actions"});
  c.scope = "KLineage scope: cases " + (cases.empty() ? "*" : join(cases, ", ")) + "; languages " +
            (languages.empty() ? "*" : join(languages, ", ")) + "; platforms " +
            (platforms.empty() ? "*" : join(platforms, ", "));
  if (!prior.empty()) c.scope += "; after the actions " + join(prior, ", ");
  if (!wildcard(cases)) {
    for (const auto& k : cases)
      if (k != "*") c.source_tasks.push_back(k);
    if (c.source_tasks.size() == 1) c.op = c.source_tasks[0];
  }
  if (!wildcard(platforms) && platforms.size() == 1) c.target = platforms[0];
  std::set<std::string> isas;
  for (const auto& p : platforms)
    if (auto isa = isa_of(p); !isa.empty()) isas.insert(isa);
  if (isas.size() == 1) {
    c.constraints.push_back({"isa", *isas.begin()});
  } else if (isas.size() > 1) {
    unmapped.push_back("scope.platforms: several architectures (" + join({isas.begin(), isas.end()}, ", ") +
                       "); no isa constraint derived");
  }
  if (scope.is_object())
    note_unknown_keys(scope, {"cases", "languages", "platforms", "prior_actions"}, "scope.", unmapped);
}

// The carrier key for the card's recipe: "<language>/<platform>", or "klineage" for a card
// scoped to every language.
std::string carrier_key(const json& scope) {
  const auto languages = strings(scope, {"languages"});
  const auto platforms = strings(scope, {"platforms"});
  if (wildcard(languages)) return "klineage";
  const std::string lang = languages[0] == "c++" ? "cpp" : languages[0];
  const std::string plat = wildcard(platforms) ? (lang == "cpp" ? "cpu" : lang) : platform_of(platforms[0]);
  return lang + "/" + plat;
}

void body_notes(const std::string& body, std::vector<std::string>& unmapped) {
  unmapped.push_back("body: kept whole as the carrier (KLineage's recipe: overview, example "
                     "configuration, before/after); its Precondition and Scope sections restate "
                     "the front matter");
  if (body.find("## Before") == std::string::npos || body.find("## After") == std::string::npos)
    unmapped.push_back("body: no '## Before' / '## After' snippet");
}

}  // namespace

result<klineage_card> klineage_card_from_skill_md(std::string_view text, const std::string& origin) {
  auto fm = read_front_matter(text);
  if (!fm) return fail(errc::parse_error, origin + ": " + fm.error().message);
  const json& f = fm->fields;
  const std::string skill_id = text_of(f, "skill_id");
  if (skill_id.empty())
    return fail(errc::parse_error, origin + ": a KLineage SKILL.md names its card in `skill_id`" +
                                       (f.contains("name") ? " (this one has `name`: an Agent Skills "
                                                             "folder, not a KLineage card)"
                                                           : ""));
  klineage_card out;
  skill_card& c = out.card;
  c.intent = text_of(f, "intent");
  if (c.intent.empty()) return fail(errc::parse_error, origin + ": `intent` is missing");
  c.preconditions = strings(f, {"preconditions", "precondition"});
  const json scope = f.value("scope", json::object());
  scope_into(c, scope, out.unmapped);
  std::string body = fm->body;
  while (!body.empty() && (body.front() == '\n' || body.front() == '\r')) body.erase(0, 1);
  if (!body.empty()) {
    c.carriers[carrier_key(scope)] = body;
    body_notes(body, out.unmapped);
  }
  note_unknown_keys(f, {"skill_id", "intent", "preconditions", "precondition", "scope"}, "front matter ",
                    out.unmapped);
  c.verification_log.push_back("KLineage's SKILL.md has no anchor, effect, risk or feature "
                               "contract: those fields are empty");
  finish_card(c, skill_id, std::string(text), origin, "SKILL.md", out.unmapped);
  return out;
}

result<klineage_card> klineage_card_from_json(const json& j, const std::string& origin) {
  if (!j.is_object()) return fail(errc::parse_error, origin + ": a card is a JSON object");
  const std::string skill_id = text_of(j, "skill_id");
  if (skill_id.empty()) return fail(errc::parse_error, origin + ": a card without `skill_id`");
  klineage_card out;
  skill_card& c = out.card;
  c.intent = text_of(j, "intent");
  c.anchor = text_of(j, "anchor");
  c.preconditions = strings(j, {"precondition", "preconditions"});
  c.effect = join(strings(j, {"effect", "effects"}), "; ");
  c.risk = join(strings(j, {"risk", "risks"}), "; ");
  const json scope = j.value("scope", json::object());
  scope_into(c, scope, out.unmapped);
  std::string recipe = text_of(j, "carrier");
  if (const std::string body = text_of(j, "body"); !body.empty()) {
    body_notes(body, out.unmapped);
    recipe += (recipe.empty() ? "" : "\n\n") + body;
  }
  if (!recipe.empty()) c.carriers[carrier_key(scope)] = recipe;
  std::vector<std::string> outside;
  for (const char* key : {"requires", "provides", "conflicts"}) {
    auto& into = std::string(key) == "requires" ? c.requires_features
                 : std::string(key) == "provides" ? c.provides_features
                                                  : c.conflicts_features;
    if (!j.contains(key) || !j[key].is_array()) continue;
    for (const auto& f : j[key]) {
      const std::string name = feature_text(f);
      if (name.empty()) continue;
      into.push_back(name);
      if (!find_feature(name)) outside.push_back(name);
      if (f.is_object() && !text_of(f, "locus").empty())
        out.unmapped.push_back(std::string(key) + ": the locus '" + text_of(f, "locus") + "' of " + name +
                               " (a card's contract names features, not places)");
    }
  }
  if (!outside.empty())
    out.unmapped.push_back("features outside lathe's registry, kept as KLineage named them: " +
                           join(outside, ", "));
  // Evidence: the transitions it was lifted from, with KLineage's measurements.
  std::vector<double> ratios;
  if (j.contains("evidence") && j["evidence"].is_array()) {
    for (const auto& e : j["evidence"]) {
      if (c.action.empty()) c.action = text_of(e, "action_category");
      if (c.anchor.empty()) c.anchor = text_of(e, "locus");
      auto before = latency(e.value("predecessor_validation", json()));
      auto after = latency(e.value("roundtrip_validation", json()));
      if (before && after && *after > 0) ratios.push_back(*before / *after);
    }
    if (!j["evidence"].empty())
      out.unmapped.push_back("evidence: KLineage's validations (timing samples, details) are not "
                             "lathe evaluations; only their latency ratios are kept");
  }
  if (!ratios.empty()) {
    double log_sum = 0;
    for (const double r : ratios) log_sum += std::log(r);
    c.declared_ratio = std::exp(log_sum / static_cast<double>(ratios.size()));
    c.effect += (c.effect.empty() ? "" : "; ") + std::string("KLineage measured a geometric-mean ratio of ") +
                std::to_string(*c.declared_ratio) + " (predecessor latency / round-trip latency; not re-measured by lathe)";
  }
  // KLineage's own trials stay text: lathe admits only on its own held-out trials.
  if (j.contains("verification_log") && j["verification_log"].is_array()) {
    for (const auto& t : j["verification_log"]) {
      const json target = t.value("target", json::object());
      c.verification_log.push_back(
          "KLineage trial (not a lathe trial): case " + text_of(target, "case") + " on " +
          text_of(target, "platform") + ", held out " + (t.value("held_out", false) ? "yes" : "no") +
          ", gates passed " + (passed(t.value("validation", json())) ? "yes" : "no") +
          ", declared effect observed " + (t.value("expected_effect_observed", false) ? "yes" : "no"));
    }
  }
  note_unknown_keys(j,
                    {"skill_id", "intent", "anchor", "carrier", "precondition", "preconditions",
                     "effect", "effects", "risk", "risks", "scope", "body", "evidence",
                     "verification_log", "requires", "provides", "conflicts"},
                    "", out.unmapped);
  finish_card(c, skill_id, j.dump(), origin, "card JSON", out.unmapped);
  return out;
}

namespace {

// Kernels by KLineage's fingerprints, which the transitions carry (states do not store theirs).
result<void> chain_kernels(lineage& l, const json& transitions, const json& last, const std::string& origin) {
  for (size_t i = 0; i < transitions.size(); ++i) {
    const std::string before = text_of(transitions[i], "before_fingerprint");
    const std::string after = text_of(transitions[i], "after_fingerprint");
    if (before.empty() || after.empty())
      return fail(errc::parse_error, origin + ": transition " + std::to_string(i) + " has no fingerprints");
    if (i == 0) l.kernels.push_back("klineage:" + before);
    else if (l.kernels.back() != "klineage:" + before)
      return fail(errc::parse_error, origin + ": transition " + std::to_string(i) +
                                         " does not start where transition " + std::to_string(i - 1) + " ends");
    l.kernels.push_back("klineage:" + after);
  }
  if (transitions.empty()) l.kernels.push_back("klineage:" + content_hash(text_of(last, "source")));
  return {};
}

// Step `i` of lineage `l` (its kernels and features read already) from KLineage's transition `t`.
transition step_of(const lineage& l, size_t i, const json& t, const json& states) {
  transition s;
  s.from_kernel = l.kernels[i];
  s.to_kernel = l.kernels[i + 1];
  s.action = text_of(t, "action_category");
  s.locus = text_of(t, "locus");
  s.edit = text_of(t, "backward_edit");
  s.prov = imported;
  // Features: the states' audits, else the transition's own lists.
  std::vector<feature> from = l.features[i], to = l.features[i + 1];
  if (from.empty() && to.empty()) {
    from = features_of(t.value("before_features", json::array()));
    to = features_of(t.value("after_features", json::array()));
  }
  auto same = [](const feature& a, const feature& b) { return a.locus == b.locus && a.name == b.name; };
  for (const auto& f : to)
    if (std::none_of(from.begin(), from.end(), [&](const feature& g) { return same(f, g); })) s.added.push_back(f);
  for (const auto& f : from)
    if (std::none_of(to.begin(), to.end(), [&](const feature& g) { return same(f, g); })) s.removed.push_back(f);
  const auto slow = latency(states[i].value("validation", json()));
  const auto fast = latency(states[i + 1].value("validation", json()));
  if (slow && fast && *fast > 0) s.speedup = *slow / *fast;
  if (const std::string fwd = text_of(t, "forward_edit"); !fwd.empty()) {
    const json rt = t.value("roundtrip_validation", json());
    s.forward.status = passed(rt) ? forward_status::accepted : forward_status::rejected;
    s.forward.prov = imported;
    s.forward.reason = std::string("KLineage's round trip ") + (passed(rt) ? "passed" : "failed") +
                       " its gates (imported, not re-gated by lathe): " + fwd;
  }
  return s;
}

void note_lineage_unmapped(const json& j, const json& transitions, const std::set<std::string>& outside,
                           std::vector<std::string>& unmapped) {
  unmapped.push_back("states[].source, source_files: kernel sources are not stored (KLineage's "
                     "kernel ABI is not lathe's; lathe's gate could not build them); kernels "
                     "are named by KLineage's fingerprints");
  unmapped.push_back("states[].validation, problem, abi, artifact_path, context.prior_actions, "
                     "context.capabilities: KLineage's evidence and contracts; only latency "
                     "ratios are kept (as step speedups)");
  if (!transitions.empty())
    unmapped.push_back("transitions[].forward_edit, predecessor_validation, roundtrip_validation: "
                       "kept as each step's forward reason and verdict, not as lathe evaluations");
  if (!outside.empty())
    unmapped.push_back("features outside lathe's registry, kept as KLineage named them: " +
                       join({outside.begin(), outside.end()}, ", "));
  note_unknown_keys(j, {"states", "transitions", "skills", "termination", "reason"}, "", unmapped);
}

// Its cards, with their evidence pointed at this lineage's steps.
result<void> import_lineage_cards(const json& j, const std::string& origin, klineage_lineage& out) {
  const lineage& l = out.l;
  for (const auto& card : j.value("skills", json::array())) {
    auto c = klineage_card_from_json(card, origin);
    if (!c) return tl::unexpected(c.error());
    for (const auto& e : card.value("evidence", json::array())) {
      const std::string before = "klineage:" + text_of(e, "before_fingerprint");
      const std::string after = "klineage:" + text_of(e, "after_fingerprint");
      for (size_t i = 0; i < l.steps.size(); ++i)
        if (l.steps[i].from_kernel == before && l.steps[i].to_kernel == after)
          c->card.sources.push_back(l.id + "#" + std::to_string(i));
    }
    if (!c->card.source_tasks.empty() || l.task.empty()) {
      // Its scope named the cases.
    } else {
      c->card.source_tasks.push_back(l.task);
      if (c->card.op.empty()) c->card.op = l.op;
    }
    out.cards.push_back(std::move(*c));
  }
  return {};
}

}  // namespace

result<klineage_lineage> klineage_lineage_from_json(const json& j, const std::string& origin) {
  if (!j.is_object() || !j.contains("states") || !j["states"].is_array() || j["states"].empty())
    return fail(errc::parse_error, origin + ": a KLineage lineage has a non-empty `states` list");
  const json& states = j["states"];
  const json transitions = j.value("transitions", json::array());
  if (!transitions.is_array() || transitions.size() + 1 != states.size())
    return fail(errc::parse_error, origin + ": " + std::to_string(states.size()) + " states need " +
                                       std::to_string(states.size() - 1) + " transitions");
  klineage_lineage out;
  lineage& l = out.l;
  const json last = states.back();
  const json context = last.value("context", json::object());
  l.task = text_of(context, "case");
  l.op = l.task;
  l.expert = text_of(last, "name");
  l.target = text_of(context, "platform");
  l.run_id = "import:klineage";
  if (auto chained = chain_kernels(l, transitions, last, origin); !chained) return tl::unexpected(chained.error());
  for (const auto& s : states) l.features.push_back(features_of(s.value("features", json::array())));
  std::set<std::string> outside;
  for (const auto& fs_ : l.features)
    for (const auto& f : fs_)
      if (!find_feature(f.name)) outside.insert(f.name);

  for (size_t i = 0; i < transitions.size(); ++i) l.steps.push_back(step_of(l, i, transitions[i], states));
  const std::string term = text_of(j, "termination");
  l.term = term == "complete"          ? termination::complete
           : term == "step_limit"      ? termination::step_limit
           : term == "rejection_limit" ? termination::rejection_limit
                                       : termination::unknown;
  l.reason = text_of(j, "reason");
  if (l.term != termination::complete)
    for (const auto& f : l.features.front()) l.remaining_features.push_back(f.locus + "/" + f.name);
  const std::string tip = l.kernels.back().substr(9, 12);
  l.id = "klineage/" + (l.task.empty() ? std::string("unknown") : l.task) + "/" + tip;

  note_lineage_unmapped(j, transitions, outside, out.unmapped);
  if (auto cards = import_lineage_cards(j, origin, out); !cards) return tl::unexpected(cards.error());
  return out;
}

result<import_report> import_klineage(store& s, const fs::path& path, const import_options& o) {
  import_report r;
  r.source = path.string();
  auto read = [](const fs::path& p) -> result<std::string> {
    std::ifstream in(p, std::ios::binary);
    if (!in) return fail(errc::io_error, p.string() + ": cannot read");
    return std::string{std::istreambuf_iterator<char>(in), {}};
  };
  auto add_card = [&](const klineage_card& c) -> result<void> {
    auto e = import_card(s, c.card, nullptr, o);
    if (!e) return tl::unexpected(e.error());
    e->unmapped = c.unmapped;
    r.entries.push_back(std::move(*e));
    return {};
  };
  // Records name where they came from by the card's folder and file, not the absolute path: the
  // same card imported from another checkout is the same card.
  auto skill_md_file = [&](const fs::path& file) -> result<void> {
    auto text = read(file);
    if (!text) return tl::unexpected(text.error());
    const fs::path origin = file.parent_path().filename() / file.filename();
    auto c = klineage_card_from_skill_md(*text, origin.string());
    if (!c) return tl::unexpected(c.error());
    return add_card(*c);
  };

  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    r.format = "klineage/skill";
    if (fs::is_regular_file(path / "SKILL.md", ec)) {
      if (auto x = skill_md_file(path / "SKILL.md"); !x) return tl::unexpected(x.error());
      return r;
    }
    std::vector<fs::path> folders;
    for (const auto& d : fs::directory_iterator(path, ec))
      if (d.is_directory() && fs::is_regular_file(d.path() / "SKILL.md")) folders.push_back(d.path());
    if (ec) return fail(errc::io_error, path.string() + ": " + ec.message());
    if (folders.empty())
      return fail(errc::not_found, path.string() + ": no SKILL.md in it or in its folders");
    std::sort(folders.begin(), folders.end());  // the same order on every machine
    for (const auto& f : folders)
      if (auto x = skill_md_file(f / "SKILL.md"); !x) return tl::unexpected(x.error());
    return r;
  }
  if (path.extension() == ".md") {
    r.format = "klineage/skill";
    if (auto x = skill_md_file(path); !x) return tl::unexpected(x.error());
    return r;
  }
  auto text = read(path);
  if (!text) return tl::unexpected(text.error());
  json j;
  try {
    j = json::parse(*text);
  } catch (const std::exception& e) {
    return fail(errc::parse_error, path.string() + ": not JSON: " + e.what());
  }
  if (j.is_array()) {
    r.format = "klineage/memory";
    for (size_t i = 0; i < j.size(); ++i) {
      auto c = klineage_card_from_json(j[i], path.filename().string() + "[" + std::to_string(i) + "]");
      if (!c) return tl::unexpected(c.error());
      if (auto x = add_card(*c); !x) return tl::unexpected(x.error());
    }
    return r;
  }
  if (j.is_object() && j.contains("skill_id")) {
    r.format = "klineage/skill";
    auto c = klineage_card_from_json(j, path.filename().string());
    if (!c) return tl::unexpected(c.error());
    if (auto x = add_card(*c); !x) return tl::unexpected(x.error());
    return r;
  }
  r.format = "klineage/lineage";
  auto l = klineage_lineage_from_json(j, path.filename().string());
  if (!l) return tl::unexpected(l.error());
  auto e = import_lineage(s, l->l, nullptr, o);
  if (!e) return tl::unexpected(e.error());
  e->unmapped = l->unmapped;
  r.entries.push_back(std::move(*e));
  for (const auto& c : l->cards)
    if (auto x = add_card(c); !x) return tl::unexpected(x.error());
  return r;
}

}  // namespace lathe::skills
