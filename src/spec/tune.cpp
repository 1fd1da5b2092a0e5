#include "spec/tune.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "core/expr.h"
#include "spec/bundle.h"
#include "spec/python_knobs.h"
#include "spec/toml_read.h"

namespace lathe {
namespace {

using detail::is_identifier;
using detail::line_of;

struct reader {
  std::string file;
  tl::unexpected<error> err(const toml::node& at, const std::string& what) const {
    return fail(errc::parse_error, file + ":" + std::to_string(line_of(at)) + ": tune: " + what);
  }
};

std::optional<int64_t> integer(const toml::node* n) {
  if (n == nullptr || !n->is_integer()) return std::nullopt;
  return n->as_integer()->get();
}

// A list ([64, 128, 256]) or a range ({ from = 1, to = 8 } with `step` (default 1) or `times`
// (a geometric range: 1, 2, 4, 8)).
result<std::vector<int64_t>> read_values(const std::string& name, const toml::node& n, const reader& r) {
  std::vector<int64_t> out;
  if (const toml::array* a = n.as_array()) {
    for (const toml::node& e : *a) {
      auto v = integer(&e);
      if (!v) return r.err(e, "'" + name + "': values must be integers");
      if (std::find(out.begin(), out.end(), *v) != out.end())
        return r.err(e, "'" + name + "': value " + std::to_string(*v) + " given twice");
      out.push_back(*v);
      if (out.size() > max_tunable_values)
        return r.err(n, "'" + name + "': more than " + std::to_string(max_tunable_values) + " values");
    }
  } else if (const toml::table* t = n.as_table()) {
    for (const auto& [k, v] : *t)
      if (k.str() != "from" && k.str() != "to" && k.str() != "step" && k.str() != "times")
        return r.err(v, "'" + name + "': unknown key '" + std::string(k.str()) + "' (a range has from, to and step or times)");
    auto from = integer(t->get("from")), to = integer(t->get("to"));
    if (!from || !to) return r.err(n, "'" + name + "': a range needs integer `from` and `to`");
    if (*from > *to) return r.err(n, "'" + name + "': `from` " + std::to_string(*from) + " is above `to` " + std::to_string(*to));
    if (t->get("step") && t->get("times")) return r.err(n, "'" + name + "': a range has `step` or `times`, not both");
    if (const toml::node* tn = t->get("times")) {
      auto times = integer(tn);
      if (!times || *times < 2) return r.err(*tn, "'" + name + "': `times` must be an integer of at least 2");
      if (*from < 1) return r.err(n, "'" + name + "': a geometric range (`times`) starts at 1 or above");
      for (int64_t v = *from; v <= *to; v *= *times) {
        out.push_back(v);
        if (v > *to / *times) break;  // the next would pass `to` (or overflow)
      }
    } else {
      auto step = t->get("step") ? integer(t->get("step")) : std::optional<int64_t>{1};
      if (!step || *step < 1) return r.err(n, "'" + name + "': `step` must be a positive integer");
      // In 128 bits: `to - from` of two int64 values can overflow 64.
      const __int128 span = static_cast<__int128>(*to) - static_cast<__int128>(*from);
      if (span / *step >= static_cast<__int128>(max_tunable_values))
        return r.err(n, "'" + name + "': more than " + std::to_string(max_tunable_values) + " values");
      for (__int128 v = *from; v <= *to; v += *step) out.push_back(static_cast<int64_t>(v));
    }
  } else {
    return r.err(n, "'" + name + "' must be a list of integers or a range { from = …, to = … }");
  }
  if (out.empty()) return r.err(n, "'" + name + "' has no value");
  return out;
}

}  // namespace

namespace detail {

result<tune_space> read_tune_section(const toml::node& node, const std::map<std::string, std::string>& defines,
                                     const std::string& file) {
  const reader r{file};
  const toml::table* t = node.as_table();
  if (t == nullptr) return r.err(node, "[tune] must be a table");
  for (const auto& [k, v] : *t)
    if (k.str() != "params" && k.str() != "constraints" && k.str() != "default")
      return r.err(v, "unknown key '" + std::string(k.str()) + "' (expected params, constraints, default)");
  tune_space s;
  const toml::table* params = t->get("params") ? t->get("params")->as_table() : nullptr;
  if (params == nullptr || params->empty())
    return r.err(t->get("params") ? *t->get("params") : node, "[tune.params] must name at least one tunable");
  for (const auto& [k, v] : *params) {
    const std::string name(k.str());
    if (!is_identifier(name)) return r.err(v, "'" + name + "' is not a macro name");
    auto values = read_values(name, v, r);
    if (!values) return tl::unexpected(values.error());
    s.params.push_back({name, std::move(*values)});
  }
  std::sort(s.params.begin(), s.params.end(), [](const tunable& a, const tunable& b) { return a.name < b.name; });
  if (const toml::node* c = t->get("constraints")) {
    const toml::array* a = c->as_array();
    if (a == nullptr) return r.err(*c, "`constraints` must be a list of strings");
    if (a->size() > max_tune_constraints)
      return r.err(*c, "more than " + std::to_string(max_tune_constraints) + " constraints");
    for (const toml::node& e : *a) {
      if (!e.is_string()) return r.err(e, "`constraints` must hold strings only");
      if (e.as_string()->get().size() > max_constraint_chars)
        return r.err(e, "a constraint longer than " + std::to_string(max_constraint_chars) + " characters");
      s.constraints.push_back(e.as_string()->get());
    }
  }
  const toml::table* given = nullptr;
  if (const toml::node* d = t->get("default")) {
    given = d->as_table();
    if (given == nullptr) return r.err(*d, "`default` must be a table { NAME = value, … }");
    for (const auto& [k, v] : *given)
      if (std::none_of(s.params.begin(), s.params.end(), [&](const tunable& p) { return p.name == k.str(); }))
        return r.err(v, "default: '" + std::string(k.str()) + "' is not a tunable of [tune.params]");
  }
  for (const tunable& p : s.params) {
    std::optional<int64_t> value;
    const toml::node* at = &node;
    if (given && given->get(p.name)) {
      at = given->get(p.name);
      value = integer(at);
      if (!value) return r.err(*at, "default: '" + p.name + "' must be an integer");
    }
    if (auto d = defines.find(p.name); d != defines.end()) {
      int64_t from_define = 0;
      try {
        size_t used = 0;
        from_define = std::stoll(d->second, &used);
        if (used != d->second.size()) throw std::invalid_argument("trailing");
      } catch (const std::exception&) {
        return r.err(node, "'" + p.name + "' is also in [defines] as '" + d->second + "', which is not an integer");
      }
      if (value && *value != from_define)
        return r.err(*at, "default: '" + p.name + "' is " + std::to_string(*value) + " here and " + d->second +
                              " in [defines]; give one default");
      value = from_define;
    }
    if (!value) value = p.values.front();
    if (std::find(p.values.begin(), p.values.end(), *value) == p.values.end())
      return r.err(*at, "the default of '" + p.name + "', " + std::to_string(*value) + ", is not one of its values");
    s.defaults[p.name] = *value;
  }
  return s;
}

toml::table tune_table(const tune_space& s) {
  toml::table params, defaults;
  for (const tunable& p : s.params) {
    toml::array values;
    for (int64_t v : p.values) values.push_back(v);
    params.insert(p.name, std::move(values));
  }
  for (const auto& [k, v] : s.defaults) defaults.insert(k, v);
  toml::array constraints;
  for (const auto& c : s.constraints) constraints.push_back(c);
  toml::table t;
  t.insert("params", std::move(params));
  t.insert("constraints", std::move(constraints));
  t.insert("default", std::move(defaults));
  return t;
}

}  // namespace detail

std::string config_label(const tune_config& c) {
  std::string out;
  for (const auto& [k, v] : c) out += (out.empty() ? "" : ",") + k + "=" + std::to_string(v);
  return out;
}

result<kernel_bundle> configure(const kernel_bundle& b, const tune_config& c) {
  const tune_space& s = b.manifest.tune;
  if (s.empty()) return fail(errc::invalid_argument, b.name + " declares no tunables ([tune] in kernel.toml, docs/tune.md)");
  for (const auto& [k, v] : c)
    if (std::none_of(s.params.begin(), s.params.end(), [&](const tunable& p) { return p.name == k; }))
      return fail(errc::invalid_argument, "'" + k + "' is not a tunable of " + b.name);
  kernel_bundle out = b;
  for (const tunable& p : s.params) {
    auto it = c.find(p.name);
    if (it == c.end()) return fail(errc::invalid_argument, "the configuration gives no value for '" + p.name + "'");
    if (std::find(p.values.begin(), p.values.end(), it->second) == p.values.end())
      return fail(errc::invalid_argument, "'" + p.name + "' = " + std::to_string(it->second) + " is not one of its values");
    // A Python kernel's knobs are literals in its entry file (spec/python_knobs.h); C++ and CUDA's
    // are -D flags.
    if (b.manifest.lang != language::python) out.manifest.defines[p.name] = std::to_string(it->second);
  }
  if (b.manifest.lang == language::python) {
    auto& entry = out.sources[b.manifest.entry];
    auto set = set_python_knobs(entry, c);
    if (!set) return fail(set.error().code, b.name + ": " + set.error().message);
    entry = std::move(*set);
  }
  // The configured bundle's default is its configuration: written (write_bundle) and loaded again,
  // its [defines] and [tune].default agree, and it has the same hash.
  out.manifest.tune.defaults = c;
  out.name = b.name + "[" + config_label(c) + "]";
  out.hash = bundle_hash(out);
  return out;
}

std::map<std::string, int64_t> target_limits(const target& t) {
  std::map<std::string, int64_t> out;
  auto put = [&](const char* name, uint64_t v) {
    if (v > 0) out[name] = static_cast<int64_t>(v);
  };
  put("TARGET_CORES", t.cores);
  put("TARGET_LLC_BYTES", t.llc_bytes);
  put("TARGET_SMEM_BYTES", t.smem_optin_bytes);
  put("TARGET_SMEM_PER_SM_BYTES", t.smem_per_sm_bytes);
  put("TARGET_REGISTERS_PER_SM", t.registers_per_sm);
  return out;
}

std::vector<std::pair<std::string, std::map<std::string, int64_t>>> constraint_symbols(const task& t,
                                                                                      const target& tgt) {
  const auto limits = target_limits(tgt);
  std::vector<std::pair<std::string, std::map<std::string, int64_t>>> sets;
  for (const shape_set& ss : t.shapes) {
    auto m = limits;
    m.insert(ss.symbols.begin(), ss.symbols.end());
    sets.emplace_back(ss.name, std::move(m));
  }
  if (sets.empty()) sets.emplace_back("", limits);
  return sets;
}

result<void> tunable_names_free(const tune_space& s, const task& t, const target& tgt) {
  const auto limits = target_limits(tgt);
  for (const tunable& p : s.params) {
    if (limits.count(p.name)) return fail(errc::invalid_argument, "tunable '" + p.name + "' has the name of a target limit");
    for (const shape_set& ss : t.shapes)
      if (ss.symbols.count(p.name))
        return fail(errc::invalid_argument, "tunable '" + p.name + "' has the name of a shape symbol of task " + t.name +
                                                " (shape set '" + ss.name + "'): rename it");
  }
  return {};
}

result<tune_enumeration> enumerate_configs(const tune_space& s, const task& t, const target& tgt) {
  if (s.empty()) return fail(errc::invalid_argument, "no tunables to enumerate");
  if (auto free = tunable_names_free(s, t, tgt); !free) return tl::unexpected(free.error());
  size_t total = 1;
  for (const tunable& p : s.params) {
    if (p.values.empty()) return fail(errc::invalid_argument, "tunable '" + p.name + "' has no value");
    if (total > max_tune_configs / p.values.size())
      return fail(errc::invalid_argument, "the tune space holds more than " + std::to_string(max_tune_configs) +
                                              " configurations: narrow the values or split the search");
    total *= p.values.size();
  }
  // The symbols of each shape set, with the limits; a task without shapes still checks once.
  auto sets = constraint_symbols(t, tgt);
  // Each configuration is checked by every constraint on every shape set: that work is bounded too.
  if (static_cast<double>(total) * static_cast<double>(sets.size()) * static_cast<double>(s.constraints.size()) >
      static_cast<double>(max_constraint_checks))
    return fail(errc::invalid_argument, "checking " + std::to_string(total) + " configurations against " +
                                            std::to_string(s.constraints.size()) + " constraints on " +
                                            std::to_string(sets.size()) + " shape sets is more than " +
                                            std::to_string(max_constraint_checks) + " checks: narrow the values");

  // Checks one configuration: empty when admitted; the refusal otherwise; an error when a
  // constraint cannot be evaluated.
  auto check = [&](const tune_config& c) -> result<std::optional<tune_refusal>> {
    for (auto& [set, syms] : sets) {
      for (const auto& [k, v] : c) syms[k] = v;
      for (const std::string& con : s.constraints) {
        auto ok = eval_condition(con, syms);
        if (!ok)
          return fail(errc::invalid_argument, "constraint '" + con + "'" + (set.empty() ? "" : " on shape set '" + set + "'") +
                                                  ": " + ok.error().message);
        if (!*ok) return std::optional<tune_refusal>{tune_refusal{c, con, set}};
      }
    }
    return std::optional<tune_refusal>{};
  };
  auto def = check(s.defaults);
  if (!def) return tl::unexpected(def.error());
  if (*def)
    return fail(errc::invalid_argument, "the default configuration " + config_label(s.defaults) + " violates '" +
                                            (*def)->constraint + "'" +
                                            ((*def)->shape_set.empty() ? "" : " on shape set '" + (*def)->shape_set + "'"));
  tune_enumeration out;
  std::vector<size_t> at(s.params.size(), 0);
  for (size_t n = 0; n < total; ++n) {
    tune_config c;
    for (size_t i = 0; i < s.params.size(); ++i) c[s.params[i].name] = s.params[i].values[at[i]];
    auto r = check(c);
    if (!r) return tl::unexpected(r.error());
    if (*r) {
      if (out.refused.size() < max_refusals_kept) out.refused.push_back(std::move(**r));
      ++out.refused_count;
    } else
      out.configs.push_back(std::move(c));
    for (size_t i = s.params.size(); i-- > 0;) {  // the last tunable varies fastest
      if (++at[i] < s.params[i].values.size()) break;
      at[i] = 0;
    }
  }
  return out;
}

}  // namespace lathe
