#include "agent/schema.h"

#include <nlohmann/json.hpp>

namespace lathe::agent {
namespace {

using nlohmann::json;

const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "integer";
    case json::value_t::number_float: return "number";
    case json::value_t::string: return "string";
    case json::value_t::array: return "array";
    case json::value_t::object: return "object";
    default: return "other";
  }
}

bool has_type(const json& v, const std::string& t) {
  if (t == "number") return v.is_number();
  if (t == "integer") {
    if (v.is_number_integer()) return true;
    // 3.0 is an integer in JSON Schema's sense.
    return v.is_number_float() && v.get<double>() == static_cast<double>(static_cast<int64_t>(v.get<double>()));
  }
  return t == type_name(v);
}

const char* const known[] = {"type",      "properties", "required",  "additionalProperties",
                             "enum",      "items",      "minItems",  "maxItems",
                             "minimum",   "maximum",    "minLength", "maxLength",
                             "description", "title", "$schema"};

struct walker {
  std::vector<schema_error> out;

  void add(const std::string& path, std::string msg) { out.push_back({path, std::move(msg)}); }

  void check(const json& s, const json& v, const std::string& path) {
    if (!s.is_object()) {
      add(path, "schema is not an object");
      return;
    }
    for (const auto& [k, _] : s.items()) {
      bool ok = false;
      for (const char* n : known) ok = ok || k == n;
      if (!ok) add(path, "schema keyword '" + k + "' is not supported by lathe's validator");
    }
    if (auto t = s.find("type"); t != s.end()) {
      bool match = false;
      std::string want;
      if (t->is_string()) {
        match = has_type(v, *t);
        want = *t;
      } else if (t->is_array()) {
        for (const auto& x : *t) {
          match = match || (x.is_string() && has_type(v, x));
          want += (want.empty() ? "" : " or ") + x.get<std::string>();
        }
      }
      if (!match) {
        add(path, "expected " + want + ", got " + type_name(v));
        return;  // the other keywords assume the type
      }
    }
    if (auto e = s.find("enum"); e != s.end() && e->is_array()) {
      bool found = false;
      for (const auto& x : *e) found = found || x == v;
      if (!found) {
        std::string list;
        for (const auto& x : *e) list += (list.empty() ? "" : ", ") + (x.is_string() ? x.get<std::string>() : x.dump());
        add(path, "not one of [" + list + "]");
      }
    }
    if (v.is_number()) {
      const double x = v.get<double>();
      if (auto m = s.find("minimum"); m != s.end() && x < m->get<double>())
        add(path, "below the minimum " + m->dump());
      if (auto m = s.find("maximum"); m != s.end() && x > m->get<double>())
        add(path, "above the maximum " + m->dump());
    }
    if (v.is_string()) {
      const size_t n = v.get_ref<const std::string&>().size();
      if (auto m = s.find("minLength"); m != s.end() && n < m->get<size_t>())
        add(path, "shorter than " + m->dump() + " characters");
      if (auto m = s.find("maxLength"); m != s.end() && n > m->get<size_t>())
        add(path, "longer than " + m->dump() + " characters");
    }
    if (v.is_array()) {
      if (auto m = s.find("minItems"); m != s.end() && v.size() < m->get<size_t>())
        add(path, "fewer than " + m->dump() + " items");
      if (auto m = s.find("maxItems"); m != s.end() && v.size() > m->get<size_t>())
        add(path, "more than " + m->dump() + " items");
      if (auto items = s.find("items"); items != s.end())
        for (size_t i = 0; i < v.size(); ++i) check(*items, v[i], path + "[" + std::to_string(i) + "]");
    }
    if (v.is_object()) {
      const json* props = s.contains("properties") ? &s["properties"] : nullptr;
      if (auto r = s.find("required"); r != s.end() && r->is_array())
        for (const auto& name : *r)
          if (name.is_string() && !v.contains(name.get<std::string>()))
            add(path + "." + name.get<std::string>(), "required");
      for (const auto& [k, x] : v.items()) {
        if (props && props->contains(k)) {
          check((*props)[k], x, path + "." + k);
        } else if (auto a = s.find("additionalProperties"); a != s.end() && a->is_boolean() && !a->get<bool>()) {
          add(path + "." + k, "not allowed (no such field)");
        }
      }
    }
  }
};

}  // namespace

std::vector<schema_error> validate(const nlohmann::json& schema, const nlohmann::json& value) {
  walker w;
  w.check(schema, value, "$");
  return w.out;
}

std::string describe(const std::vector<schema_error>& errors, size_t limit) {
  std::string s;
  for (size_t i = 0; i < errors.size() && i < limit; ++i)
    s += (i ? "; " : "") + errors[i].path + ": " + errors[i].message;
  if (errors.size() > limit) s += "; … (" + std::to_string(errors.size() - limit) + " more)";
  return s;
}

}  // namespace lathe::agent
