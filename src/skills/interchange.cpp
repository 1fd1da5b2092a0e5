// The library as one JSON document (interchange.h).
#include "skills/interchange.h"
#include "core/text.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/json_card.h"
#include "core/json_lineage.h"
#include "spec/bundle.h"

namespace lathe::skills {

using nlohmann::json;

namespace {

bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

constexpr char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64(std::string_view in) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (const char c : in) {
    acc = (acc << 8) | static_cast<unsigned char>(c);
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += b64[(acc >> bits) & 0x3F];
    }
  }
  if (bits > 0) out += b64[(acc << (6 - bits)) & 0x3F];
  while (out.size() % 4) out += '=';
  return out;
}

std::string unbase64(std::string_view in) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (const char c : in) {
    if (c == '=') break;
    const char* p = std::strchr(b64, c);
    if (!p || !*p) throw std::runtime_error("a kernel source's base64 holds '" + std::string(1, c) + "'");
    acc = (acc << 6) | static_cast<uint32_t>(p - b64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

// Sources are bytes: a file that is not UTF-8 (a latin-1 comment) travels as {"base64": …}, so
// that it comes back byte for byte and still hashes to the kernel's name.
json bundle_json(const kernel_bundle& k) {
  json sources = json::object();
  for (const auto& [path, text] : k.sources)
    sources[path] = valid_utf8(text) ? json(text) : json{{"base64", base64(text)}};
  return json{{"hash", k.hash}, {"name", k.name}, {"manifest", k.manifest}, {"sources", sources}};
}

kernel_bundle bundle_of(const json& j) {
  kernel_bundle k;
  k.hash = j.at("hash").get<std::string>();
  k.name = j.value("name", std::string());
  j.at("manifest").get_to(k.manifest);
  for (auto& [path, v] : j.at("sources").items())
    k.sources[path] = v.is_string() ? v.get<std::string>() : unbase64(v.at("base64").get<std::string>());
  return k;
}

json note_json(const evaluation_note& n) {
  json j{{"id", n.id},         {"created_at", n.created_at}, {"task", n.task},
         {"kernel_hash", n.kernel_hash}, {"kernel_name", n.kernel_name},
         {"outcome", n.outcome}, {"provenance", n.provenance}, {"target", n.target}};
  j["speedup"] = n.speedup ? json(*n.speedup) : json(nullptr);
  return j;
}

evaluation_note note_of(const json& j) {
  evaluation_note n;
  n.id = j.value("id", int64_t{0});
  for (auto [field, key] : {std::pair{&n.created_at, "created_at"}, {&n.task, "task"},
                            {&n.kernel_hash, "kernel_hash"}, {&n.kernel_name, "kernel_name"},
                            {&n.outcome, "outcome"}, {&n.provenance, "provenance"},
                            {&n.target, "target"}})
    *field = j.value(key, std::string());
  if (j.contains("speedup") && j["speedup"].is_number()) n.speedup = j["speedup"].get<double>();
  return n;
}

// Records compare as their JSON: the form they are stored and exchanged in.
json card_body(skill_card c) {
  c.trials.clear();
  return json(c);
}

json trial_body(card_trial t) {
  t.created_at.clear();
  return json(t);
}

std::string ids_text(const std::vector<int64_t>& ids) {
  std::string out;
  for (const auto id : ids) out += (out.empty() ? "" : ", ") + std::to_string(id);
  return out;
}

// The card as the importing store keeps it: evaluation ids dropped (they name rows of the
// exporting store), one log line saying where it came from and what the ids were.
skill_card card_for_import(const skill_card& c, const library_document& d) {
  skill_card out = c;
  std::string line = "imported from " + (d.source.empty() ? std::string("a lathe library") : d.source) +
                     " (" + library_schema + ", exported " + d.exported_at + ")";
  if (!c.evidence.empty())
    line += "; its gate evaluations there: " + ids_text(c.evidence);
  out.evidence.clear();
  if (std::find(out.verification_log.begin(), out.verification_log.end(), line) ==
      out.verification_log.end())
    out.verification_log.push_back(line);
  for (auto& t : out.trials) {
    std::string where = " [trial recorded " + (t.created_at.empty() ? "?" : t.created_at) + " in " +
                        (d.source.empty() ? std::string("the exporting workspace") : d.source);
    if (!t.evaluations.empty()) where += ", evaluations " + ids_text(t.evaluations);
    t.reason += where + "]";
    t.evaluations.clear();
  }
  return out;
}

lineage lineage_for_import(const lineage& l) {
  lineage out = l;
  for (auto& s : out.steps) {
    s.evaluations.clear();
    s.forward.evaluations.clear();
  }
  return out;
}

void collect_kernels(const lineage& l, std::set<std::string>& out) {
  for (const auto& k : l.kernels) out.insert(k);
  for (const auto& s : l.steps) {
    out.insert(s.from_kernel);
    out.insert(s.to_kernel);
    out.insert(s.forward.kernel);
  }
}

void collect_evaluations(const lineage& l, std::set<int64_t>& out) {
  for (const auto& s : l.steps) {
    out.insert(s.evaluations.begin(), s.evaluations.end());
    out.insert(s.forward.evaluations.begin(), s.forward.evaluations.end());
  }
}

}  // namespace

const char* to_string(import_action a) {
  switch (a) {
    case import_action::added: return "added";
    case import_action::unchanged: return "unchanged";
    case import_action::updated: return "updated";
    case import_action::kept_different: return "kept_different";
    case import_action::name_clash: return "name_clash";
    case import_action::refused: return "refused";
  }
  return "?";
}

size_t import_report::count(const std::string& kind, import_action a) const {
  return static_cast<size_t>(std::count_if(entries.begin(), entries.end(), [&](const import_entry& e) {
    return e.kind == kind && e.action == a;
  }));
}

bool import_report::has(import_action a) const {
  return std::any_of(entries.begin(), entries.end(), [&](const import_entry& e) { return e.action == a; });
}

void to_json(json& j, const import_report& r) {
  json entries = json::array();
  std::map<std::string, std::map<std::string, int>> counts;
  for (const auto& e : r.entries) {
    entries.push_back(json{{"kind", e.kind}, {"id", e.id}, {"name", e.name},
                           {"action", to_string(e.action)}, {"reason", e.reason},
                           {"unmapped", e.unmapped}});
    ++counts[e.kind][to_string(e.action)];
  }
  j = json{{"schema", import_schema}, {"format", r.format}, {"source", r.source},
           {"entries", entries}, {"counts", counts}};
}

void to_json(json& j, const library_document& d) {
  json kernels = json::array();
  for (const auto& k : d.kernels) kernels.push_back(bundle_json(k));
  json notes = json::array();
  for (const auto& n : d.evaluations) notes.push_back(note_json(n));
  j = json{{"schema", library_schema},     {"source", d.source},     {"exported_at", d.exported_at},
           {"lineages", d.lineages},       {"cards", d.cards},       {"kernels", kernels},
           {"evaluations", notes},         {"missing_kernels", d.missing_kernels}};
}

std::string library_text(const library_document& d) {
  // Record text from a model may hold invalid UTF-8; it is replaced rather than refused (kernel
  // sources, the only bytes that must survive exactly, travel as base64 when they are not text).
  return json(d).dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

result<library_document> parse_library(std::string_view text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const std::exception& e) {
    return fail(errc::parse_error, std::string("not a JSON document: ") + e.what());
  }
  if (!j.is_object()) return fail(errc::parse_error, "a library document is a JSON object");
  const std::string schema = j.value("schema", std::string());
  if (schema != library_schema)
    return fail(errc::unsupported, "expected \"schema\": \"" + std::string(library_schema) +
                                       "\", found " + (schema.empty() ? "none" : "\"" + schema + "\""));
  library_document d;
  try {
    d.source = j.value("source", std::string());
    d.exported_at = j.value("exported_at", std::string());
    for (const auto& l : j.value("lineages", json::array())) d.lineages.push_back(l.get<lineage>());
    for (const auto& c : j.value("cards", json::array())) d.cards.push_back(c.get<skill_card>());
    for (const auto& k : j.value("kernels", json::array())) d.kernels.push_back(bundle_of(k));
    for (const auto& n : j.value("evaluations", json::array())) d.evaluations.push_back(note_of(n));
    d.missing_kernels = j.value("missing_kernels", std::vector<std::string>{});
  } catch (const std::exception& e) {
    return fail(errc::parse_error, std::string("lathe.library/1: ") + e.what());
  }
  for (const auto& c : d.cards)
    if (c.id.empty() || c.name.empty())
      return fail(errc::parse_error, "lathe.library/1: a card without an id or a name");
  for (const auto& l : d.lineages)
    if (l.id.empty()) return fail(errc::parse_error, "lathe.library/1: a lineage without an id");
  return d;
}

result<library_document> export_library(const store& s, const export_request& r) {
  library_document d;
  d.source = r.source;
  d.exported_at = utc_now();
  std::set<std::string> lineage_ids;
  auto add_lineage = [&](const lineage& l) {
    if (lineage_ids.insert(l.id).second) d.lineages.push_back(l);
  };
  if (r.lineages.empty() && r.cards.empty()) {
    auto ls = s.list_lineages("");
    if (!ls) return tl::unexpected(ls.error());
    for (const auto& l : *ls) add_lineage(l);
    auto cs = s.list_cards("");
    if (!cs) return tl::unexpected(cs.error());
    d.cards = std::move(*cs);
  }
  for (const auto& id : r.lineages) {
    auto l = s.get_lineage(id);
    if (!l) return tl::unexpected(l.error());
    if (!*l) return fail(errc::not_found, "no lineage '" + id + "' in the store");
    add_lineage(**l);
  }
  std::set<std::string> card_ids;
  for (const auto& c : d.cards) card_ids.insert(c.id);
  for (const auto& name : r.cards) {
    auto c = s.get_card(name);
    if (!c) return tl::unexpected(c.error());
    if (!*c) return fail(errc::not_found, "no card '" + name + "' in the store");
    if (card_ids.insert((*c)->id).second) d.cards.push_back(std::move(**c));
  }
  if (r.with_source_lineages) {
    for (const auto& c : d.cards)
      for (const auto& src : c.sources) {
        const auto hash = src.rfind('#');
        auto l = s.get_lineage(hash == std::string::npos ? src : src.substr(0, hash));
        if (!l) return tl::unexpected(l.error());
        if (*l) add_lineage(**l);
      }
  }

  // Everything the records name: kernels by content hash, evaluations by id.
  std::set<std::string> kernels;
  std::set<int64_t> evaluations;
  for (const auto& l : d.lineages) {
    collect_kernels(l, kernels);
    collect_evaluations(l, evaluations);
  }
  for (const auto& c : d.cards) {
    evaluations.insert(c.evidence.begin(), c.evidence.end());
    for (const auto& t : c.trials) {
      kernels.insert(t.kernel_before);
      kernels.insert(t.kernel_after);
      evaluations.insert(t.evaluations.begin(), t.evaluations.end());
    }
  }
  kernels.erase("");
  for (const auto& h : kernels) {
    auto k = s.get_kernel(h);
    if (k) {
      d.kernels.push_back(std::move(*k));
    } else if (k.error().code == errc::not_found) {
      d.missing_kernels.push_back(h);
    } else {
      return tl::unexpected(k.error());
    }
  }
  for (const auto id : evaluations) {
    auto e = s.get_evaluation(id);
    if (!e) {
      if (e.error().code == errc::not_found) continue;  // cited but gone: nothing to say about it
      return tl::unexpected(e.error());
    }
    evaluation_note n;
    n.id = id;
    n.task = e->task;
    n.kernel_hash = e->kernel_hash;
    n.kernel_name = e->kernel_name;
    n.outcome = to_string(e->result);
    n.provenance = to_string(e->prov);
    n.target = e->tgt.arch;
    if (e->paired) n.speedup = e->paired->ratio;
    d.evaluations.push_back(std::move(n));
  }
  return d;
}

result<import_entry> import_card(store& s, const skill_card& c, const skill_card* as_sent,
                                 const import_options& o) {
  import_entry e{"card", c.id, c.name, import_action::added, "", {}};
  auto here = s.get_card(c.id);
  if (!here) return tl::unexpected(here.error());
  if (*here && (*here)->id == c.id) {
    const json mine = card_body(**here);
    if (mine == card_body(c) || (as_sent && mine == card_body(*as_sent))) {
      e.action = import_action::unchanged;
      return e;
    }
    if (!o.replace_changed) {
      e.action = import_action::kept_different;
      e.reason = "a card with this id is here with other content (status " +
                 std::string(to_string((*here)->status)) + "); kept: import with replace to take the file's";
      return e;
    }
    e.action = import_action::updated;
  } else {
    auto by_name = s.get_card(c.name);
    if (!by_name) return tl::unexpected(by_name.error());
    if (*by_name) {
      e.action = import_action::name_clash;
      e.reason = "the name '" + c.name + "' is held here by card " + (*by_name)->id +
                 "; not imported (rename one of them)";
      return e;
    }
  }
  if (auto w = s.put_card(c); !w) return tl::unexpected(w.error());
  return e;
}

result<import_entry> import_lineage(store& s, const lineage& l, const lineage* as_sent,
                                    const import_options& o) {
  import_entry e{"lineage", l.id, l.task, import_action::added, "", {}};
  auto here = s.get_lineage(l.id);
  if (!here) return tl::unexpected(here.error());
  if (*here) {
    const json mine = json(**here);
    if (mine == json(l) || (as_sent && mine == json(*as_sent))) {
      e.action = import_action::unchanged;
      return e;
    }
    if (!o.replace_changed) {
      e.action = import_action::kept_different;
      e.reason = "a lineage with this id is here with other content (" +
                 std::to_string((*here)->steps.size()) + " steps here, " +
                 std::to_string(l.steps.size()) + " in the file); kept";
      return e;
    }
    e.action = import_action::updated;
  }
  if (auto w = s.put_lineage(l); !w) return tl::unexpected(w.error());
  return e;
}

result<std::vector<import_entry>> import_trials(store& s, const std::string& card_id,
                                                const std::vector<card_trial>& trials) {
  auto card = s.get_card(card_id);
  if (!card) return tl::unexpected(card.error());
  if (!*card) return fail(errc::not_found, "no card '" + card_id + "' to add trials to");
  std::vector<json> existing;
  for (const auto& t : (*card)->trials) existing.push_back(trial_body(t));
  std::vector<import_entry> out;
  for (const auto& t : trials) {
    const json body = trial_body(t);
    if (auto it = std::find(existing.begin(), existing.end(), body); it != existing.end()) {
      existing.erase(it);  // each trial here matches one trial of the file
      continue;
    }
    if (auto w = s.add_card_trial(card_id, t); !w) return tl::unexpected(w.error());
    out.push_back({"trial", card_id, t.task, import_action::added, to_string(t.verdict), {}});
  }
  return out;
}

result<import_report> import_library(store& s, const library_document& d, const import_options& o) {
  import_report r;
  r.format = library_schema;
  r.source = d.source;
  // Kernels first: lineages and trials name them. A bundle whose sources do not hash to its
  // name is refused: it is not the kernel the records measured.
  for (const auto& k : d.kernels) {
    import_entry e{"kernel", k.hash, k.name, import_action::added, "", {}};
    auto here = s.get_kernel(k.hash);
    if (here) {
      e.action = import_action::unchanged;
    } else if (here.error().code != errc::not_found) {
      return tl::unexpected(here.error());
    } else if (const std::string h = bundle_hash(k); h != k.hash) {
      e.action = import_action::refused;
      e.reason = "its manifest and sources hash to " + h + ", not to its name";
    } else if (auto w = s.put_kernel(k); !w) {
      return tl::unexpected(w.error());
    }
    r.entries.push_back(std::move(e));
  }
  for (const auto& h : d.missing_kernels)
    r.entries.push_back({"kernel", h, "", import_action::refused,
                         "named by the records but not in the exporting store", {}});
  for (const auto& l : d.lineages) {
    auto e = import_lineage(s, lineage_for_import(l), &l, o);
    if (!e) return tl::unexpected(e.error());
    r.entries.push_back(std::move(*e));
  }
  for (const auto& c : d.cards) {
    const skill_card mine = card_for_import(c, d);
    auto e = import_card(s, mine, &c, o);
    if (!e) return tl::unexpected(e.error());
    const import_action a = e->action;
    r.entries.push_back(std::move(*e));
    if (a == import_action::name_clash || a == import_action::kept_different) continue;
    // The trials as the exporting store had them, in case this is a restore into it.
    auto here = s.get_card(c.id);
    if (!here) return tl::unexpected(here.error());
    bool restored = *here && (*here)->trials.size() == c.trials.size();
    for (size_t i = 0; restored && i < c.trials.size(); ++i)
      restored = trial_body((*here)->trials[i]) == trial_body(c.trials[i]);
    if (restored) continue;
    auto t = import_trials(s, c.id, mine.trials);
    if (!t) return tl::unexpected(t.error());
    for (auto& e2 : *t) r.entries.push_back(std::move(e2));
  }
  return r;
}

}  // namespace lathe::skills
