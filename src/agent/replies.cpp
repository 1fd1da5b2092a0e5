// Reply schemas and checks per operation (agent/replies.h).
#include "agent/replies.h"

#include <map>
#include <set>

#include "core/feature_registry.h"

namespace lathe::agent {
namespace {

using nlohmann::json;

json text() {
  return {{"type", "string"}};
}
json words() {  // a non-empty string: an action, a locus
  return {{"type", "string"}, {"minLength", 1}};
}
json names(int min, int max) {
  return {{"type", "array"},
          {"minItems", min},
          {"maxItems", max},
          {"items", {{"type", "string"}, {"minLength", 1}}}};
}
json object(json properties) {
  json required = json::array();
  for (const auto& [k, v] : properties.items()) required.push_back(k);
  return {{"type", "object"},
          {"properties", std::move(properties)},
          {"required", std::move(required)},
          {"additionalProperties", false}};
}

json make_schema(operation op) {
  // `edits` may be empty: an agent CLI (the command provider) changes files instead, and its
  // changes arrive as edit blocks after the JSON. A reply with no edit anywhere is refused later,
  // as edit_not_applied, with the format's own message.
  switch (op) {
    case operation::propose_backward:
      return object({{"action", words()},
                     {"locus", words()},
                     {"removes", names(1, 3)},
                     {"rationale", text()},
                     {"edits", text()}});
    case operation::rederive_forward:
    case operation::materialize:
      return object({{"action", words()},
                     {"locus", words()},
                     {"adds", names(1, 3)},
                     {"rationale", text()},
                     {"edits", text()}});
    case operation::mutate:
      // A mutation may retune what is there (a tile size): it need not add or remove a mechanism.
      return object({{"action", words()},
                     {"locus", words()},
                     {"adds", names(0, 3)},
                     {"removes", names(0, 3)},
                     {"rationale", text()},
                     {"edits", text()}});
    case operation::repair:
      return object({{"diagnosis", text()}, {"rationale", text()}, {"edits", text()}});
    case operation::seed_baseline:
      return object({{"rationale", text()}, {"edits", text()}});
    case operation::audit_features: {
      json cite = object({{"file", words()},
                          {"first", {{"type", "integer"}, {"minimum", 1}}},
                          {"last", {{"type", "integer"}, {"minimum", 1}}}});
      json verdict =
          object({{"name", words()},
                  {"status", {{"type", "string"}, {"enum", {"present", "absent", "unknown"}}}},
                  {"locus", text()},
                  {"citations", {{"type", "array"}, {"items", cite}}},
                  {"note", text()}});
      return object({{"verdicts", {{"type", "array"}, {"items", verdict}}}});
    }
    case operation::abstract_card: {
      json strings = {{"type", "array"}, {"items", text()}};
      // The checkable kinds of core/card.h's constraint: anything else could not be checked.
      json kinds = {"capability", "smem_bytes", "dtype", "alignment", "divisibility"};
      json constraint =
          object({{"what", {{"type", "string"}, {"enum", kinds}}}, {"value", words()}});
      return object({{"intent", words()},
                     {"anchor", words()},
                     {"carrier", words()},
                     {"preconditions", strings},
                     {"constraints", {{"type", "array"}, {"items", constraint}}},
                     {"effect", text()},
                     {"risk", text()},
                     {"scope", text()},
                     {"requires", names(0, 8)},
                     {"provides", names(1, 3)},
                     {"conflicts", names(0, 8)}});
    }
    case operation::rank_paths: {
      json entry = object({{"id", words()}, {"reason", text()}});
      return object({{"order", {{"type", "array"}, {"items", entry}}}});
    }
  }
  return json::object();
}

}  // namespace

const char* to_string(operation op) {
  switch (op) {
    case operation::propose_backward:
      return "propose_backward";
    case operation::rederive_forward:
      return "rederive_forward";
    case operation::audit_features:
      return "audit_features";
    case operation::abstract_card:
      return "abstract_card";
    case operation::materialize:
      return "materialize";
    case operation::repair:
      return "repair";
    case operation::seed_baseline:
      return "seed_baseline";
    case operation::rank_paths:
      return "rank_paths";
    case operation::mutate:
      return "mutate";
  }
  return "?";
}

const json& reply_schema(operation op) {
  static const std::map<operation, json> schemas = [] {
    std::map<operation, json> m;
    for (operation o : all_operations) m[o] = make_schema(o);
    return m;
  }();
  return schemas.at(op);
}

bool writes_code(operation op) {
  return op != operation::audit_features && op != operation::abstract_card &&
         op != operation::rank_paths;
}

std::optional<std::string> unregistered_names(const json& reply) {
  std::vector<std::string> bad;
  auto check = [&](const std::string& where, const json& name) {
    if (name.is_string() && !find_feature(name.get<std::string>()))
      bad.push_back(where + " '" + name.get<std::string>() + "'");
  };
  for (const char* key : {"removes", "adds", "requires", "provides", "conflicts"})
    if (reply.contains(key) && reply[key].is_array())
      for (size_t i = 0; i < reply[key].size(); ++i)
        check(std::string("$.") + key + "[" + std::to_string(i) + "]", reply[key][i]);
  if (reply.contains("verdicts") && reply["verdicts"].is_array())
    for (size_t i = 0; i < reply["verdicts"].size(); ++i)
      if (reply["verdicts"][i].is_object() && reply["verdicts"][i].contains("name"))
        check("$.verdicts[" + std::to_string(i) + "].name", reply["verdicts"][i]["name"]);
  if (bad.empty()) return std::nullopt;
  std::string msg = "feature names must come from lathe's feature registry; not registered:";
  for (const auto& b : bad) msg += " " + b + ";";
  msg += " registry names:";
  for (const auto& d : feature_registry()) msg += " " + std::string(d.name);
  return msg;
}

std::optional<std::string> ranking_problem(const json& reply,
                                           const std::vector<path_option>& given) {
  std::map<std::string, int> seen;
  std::set<std::string> known;
  for (const auto& p : given) known.insert(p.id);
  std::vector<std::string> unknown;
  for (const auto& e : reply.at("order")) {
    const std::string id = e.at("id").get<std::string>();
    if (!known.count(id)) unknown.push_back(id);
    ++seen[id];
  }
  std::vector<std::string> missing, twice;
  for (const auto& p : given) {
    if (!seen.count(p.id))
      missing.push_back(p.id);
    else if (seen[p.id] > 1)
      twice.push_back(p.id);
  }
  if (missing.empty() && twice.empty() && unknown.empty()) return std::nullopt;
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  std::string msg = "the order must name every given path id exactly once";
  if (!missing.empty()) msg += "; missing: " + join(missing);
  if (!twice.empty()) msg += "; named more than once: " + join(twice);
  if (!unknown.empty()) msg += "; not among the given ids: " + join(unknown);
  return msg;
}

std::vector<std::string> string_list(const json& reply, const char* key) {
  std::vector<std::string> out;
  if (reply.contains(key))
    for (const auto& v : reply.at(key)) out.push_back(v.get<std::string>());
  return out;
}

std::vector<feature_verdict> verdicts_of(const json& reply) {
  std::vector<feature_verdict> out;
  for (const auto& v : reply.at("verdicts")) {
    feature_verdict f;
    f.name = v.at("name").get<std::string>();
    const std::string s = v.at("status").get<std::string>();
    f.status = s == "present"  ? presence::present
               : s == "absent" ? presence::absent
                               : presence::unknown;
    f.locus = v.at("locus").get<std::string>();
    for (const auto& c : v.at("citations"))
      f.citations.push_back({c.at("file").get<std::string>(), c.at("first").get<int32_t>(),
                             c.at("last").get<int32_t>()});
    f.note = v.at("note").get<std::string>();
    out.push_back(std::move(f));
  }
  return out;
}

skill_card card_of(const json& reply, const std::string& carrier_key) {
  skill_card c;
  c.intent = reply.at("intent").get<std::string>();
  c.anchor = reply.at("anchor").get<std::string>();
  c.carriers[carrier_key] = reply.at("carrier").get<std::string>();
  c.preconditions = string_list(reply, "preconditions");
  for (const auto& k : reply.at("constraints"))
    c.constraints.push_back({k.at("what").get<std::string>(), k.at("value").get<std::string>()});
  c.effect = reply.at("effect").get<std::string>();
  c.risk = reply.at("risk").get<std::string>();
  c.scope = reply.at("scope").get<std::string>();
  c.requires_features = string_list(reply, "requires");
  c.provides_features = string_list(reply, "provides");
  c.conflicts_features = string_list(reply, "conflicts");
  c.status = card_status::candidate;  // only an admission trial admits a card
  return c;
}

ranking ranking_of(const json& reply) {
  ranking r;
  for (const auto& e : reply.at("order")) {
    r.order.push_back(e.at("id").get<std::string>());
    r.reasons.push_back(e.at("reason").get<std::string>());
  }
  return r;
}

}  // namespace lathe::agent
