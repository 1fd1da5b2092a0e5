// JSON of tasks, kernels and targets. Enums travel as their names, never as numbers, so a
// reordered enum cannot silently change stored records.
#include <cstdint>
#include "core/json.h"

#include "core/json_detail.h"

namespace lathe {

using namespace json_detail;

void to_json(json& j, const distribution& d) {
  j = json{{"kind", to_string(d.kind)}};
  switch (d.kind) {
    case distribution_kind::uniform:
    case distribution_kind::integers:
      j["low"] = d.low;
      j["high"] = d.high;
      break;
    case distribution_kind::normal:
      j["mean"] = d.mean;
      j["stddev"] = d.stddev;
      break;
    case distribution_kind::constant:
      j["value"] = d.value;
      break;
  }
}

void from_json(const json& j, distribution& d) {
  d = distribution{};
  get_enum(j, "kind", d.kind, distribution_kind::constant);
  get_double(j, "low", d.low);
  get_double(j, "high", d.high);
  get_double(j, "mean", d.mean);
  get_double(j, "stddev", d.stddev);
  get_double(j, "value", d.value);
}

void to_json(json& j, const tensor_spec& t) {
  json shape = json::array();
  for (const auto& d : t.shape) {
    if (d.symbol.empty())
      shape.push_back(d.value);
    else
      shape.push_back(d.symbol);
  }
  j = json{{"name", t.name},
           {"dtype", std::string(to_string(t.type))},
           {"shape", std::move(shape)},
           {"distribution", t.dist}};
}

void from_json(const json& j, tensor_spec& t) {
  t = tensor_spec{};
  get(j, "name", t.name);
  if (auto it = j.find("dtype"); it != j.end() && !it->is_null()) {
    const auto name = it->get<std::string>();
    auto dt = parse_dtype(name);
    if (!dt) bad_value(j, "dtype", "unknown dtype '" + name + "'");
    t.type = *dt;
  }
  if (auto it = j.find("shape"); it != j.end() && it->is_array()) {
    for (const auto& e : *it) {
      dim d;
      if (e.is_string())
        d.symbol = e.get<std::string>();
      else
        d.value = e.get<int64_t>();
      t.shape.push_back(std::move(d));
    }
  }
  get(j, "distribution", t.dist);
}

namespace {

json to_json_shapes(const std::vector<shape_set>& sets) {
  json a = json::array();
  for (const auto& s : sets)
    a.push_back({{"name", s.name}, {"symbols", s.symbols}, {"time", s.time}});
  return a;
}

json to_json_scalars(const std::vector<scalar_spec>& scalars) {
  json a = json::array();
  for (const auto& s : scalars) a.push_back({{"name", s.name}, {"value", s.value}});
  return a;
}

}  // namespace

void to_json(json& j, const task& t) {
  json cmp{{"kind", to_string(t.compare.kind)}};
  put_opt(cmp, "rtol", t.compare.tol.rtol);
  put_opt(cmp, "atol", t.compare.tol.atol);
  put_opt(cmp, "nerr", t.compare.tol.nerr);
  j = json{{"name", t.name},
           {"operator", t.op},
           {"platform", to_string(t.plat)},
           {"role", to_string(t.role)},
           {"description", t.description},
           {"baseline", t.baseline},
           {"dir", t.dir.generic_string()},
           {"reference", t.reference.generic_string()},
           {"inputs", t.inputs},
           {"outputs", t.outputs},
           {"scalars", to_json_scalars(t.scalars)},
           {"shapes", to_json_shapes(t.shapes)},
           {"perturbations", {{"scale", t.perturb.scale}, {"shift", t.perturb.shift}}},
           {"comparison", std::move(cmp)},
           {"cost", {{"flops", t.cost.flops}, {"bytes", t.cost.bytes}}},
           {"allow_libraries", t.allow_libraries},
           {"allow_fast_math", t.allow_fast_math}};
  if (!t.problem.empty())
    j["problem"] = json{{"file", t.problem.generic_string()},
                        {"format", word_or_empty(t.problem_format)},
                        {"runtime", t.problem_runtime}};
  if (!t.problem_model.empty()) j["problem"]["model"] = json::parse(t.problem_model, nullptr, false);
}

void from_json(const json& j, task& t) {
  t = task{};
  get(j, "name", t.name);
  get(j, "operator", t.op);
  get_enum(j, "platform", t.plat, platform::cuda);
  get_enum(j, "role", t.role, task_role::heldout);
  get(j, "description", t.description);
  get(j, "baseline", t.baseline);
  std::string path;
  get(j, "dir", path);
  t.dir = path;
  path.clear();
  get(j, "reference", path);
  t.reference = path;
  if (auto it = j.find("problem"); it != j.end() && it->is_object()) {
    path.clear();
    get(*it, "file", path);
    t.problem = path;
    get_word(*it, "format", t.problem_format, problem_format::klineage_definition);
    get(*it, "runtime", t.problem_runtime);
    if (auto m = it->find("model"); m != it->end() && m->is_object()) t.problem_model = m->dump();
  }
  get(j, "inputs", t.inputs);
  get(j, "outputs", t.outputs);
  if (auto it = j.find("scalars"); it != j.end() && it->is_array()) {
    for (const auto& s : *it) {
      scalar_spec sc;
      get(s, "name", sc.name);
      get_double(s, "value", sc.value);
      t.scalars.push_back(std::move(sc));
    }
  }
  if (auto it = j.find("shapes"); it != j.end() && it->is_array()) {
    for (const auto& s : *it) {
      shape_set set;
      get(s, "name", set.name);
      get(s, "symbols", set.symbols);
      get(s, "time", set.time);
      t.shapes.push_back(std::move(set));
    }
  }
  if (auto it = j.find("perturbations"); it != j.end() && it->is_object()) {
    get(*it, "scale", t.perturb.scale);
    get(*it, "shift", t.perturb.shift);
  }
  if (auto it = j.find("comparison"); it != j.end() && it->is_object()) {
    get_enum(*it, "kind", t.compare.kind, comparison_kind::topk);
    get_opt(*it, "rtol", t.compare.tol.rtol);
    get_opt(*it, "atol", t.compare.tol.atol);
    get_opt(*it, "nerr", t.compare.tol.nerr);
  }
  if (auto it = j.find("cost"); it != j.end() && it->is_object()) {
    get(*it, "flops", t.cost.flops);
    get(*it, "bytes", t.cost.bytes);
  }
  get(j, "allow_libraries", t.allow_libraries);
  get(j, "allow_fast_math", t.allow_fast_math);
}

void to_json(json& j, const kernel_manifest& m) {
  j = json{{"language", to_string(m.lang)},
           {"entry", m.entry},
           {"files", m.files},
           {"flags", m.flags},
           {"defines", m.defines},
           {"libraries", m.libraries},
           {"isa", m.isa}};
  if (!m.tune.empty()) {  // only then: the JSON of a manifest without tunables stays as it was
    json params = json::array();
    for (const auto& p : m.tune.params) params.push_back({{"name", p.name}, {"values", p.values}});
    j["tune"] = {{"params", params}, {"constraints", m.tune.constraints}, {"default", m.tune.defaults}};
  }
}

void from_json(const json& j, kernel_manifest& m) {
  m = kernel_manifest{};
  get_enum(j, "language", m.lang, language::python);
  get(j, "entry", m.entry);
  get(j, "files", m.files);
  get(j, "flags", m.flags);
  get(j, "defines", m.defines);
  get(j, "libraries", m.libraries);
  get(j, "isa", m.isa);
  if (auto it = j.find("tune"); it != j.end() && it->is_object()) {
    for (const auto& p : it->value("params", json::array()))
      if (p.is_object()) m.tune.params.push_back({p.value("name", std::string()), p.value("values", std::vector<int64_t>{})});
    get(*it, "constraints", m.tune.constraints);
    get(*it, "default", m.tune.defaults);
  }
}

void to_json(json& j, const target& t) {
  j = json{{"platform", to_string(t.plat)},
           {"arch", t.arch},
           {"device", t.device},
           {"capabilities", t.capabilities},
           {"cores", t.cores},
           {"llc_bytes", t.llc_bytes},
           {"copy_bytes_per_s", t.copy_bytes_per_s},
           {"cache_bytes_per_s", t.cache_bytes_per_s},
           {"flops_per_s", t.flops_per_s}};
  if (t.l2_bytes_per_s > 0) j["l2_bytes_per_s"] = t.l2_bytes_per_s;  // measured since 2026-11-30
  // The device fields only where they mean something: a CPU target's JSON stays as it was.
  if (t.plat == platform::cuda) {
    j["uuid"] = t.uuid;
    j["cc_major"] = t.cc_major;
    j["cc_minor"] = t.cc_minor;
    j["memory_bytes"] = t.memory_bytes;
    j["smem_optin_bytes"] = t.smem_optin_bytes;
    j["smem_per_sm_bytes"] = t.smem_per_sm_bytes;
    j["registers_per_sm"] = t.registers_per_sm;
    j["sm_clock_mhz"] = t.sm_clock_mhz;
    j["mem_clock_mhz"] = t.mem_clock_mhz;
    j["memory_bus_bits"] = t.memory_bus_bits;
    j["driver_version"] = t.driver_version;
    j["runtime_version"] = t.runtime_version;
    j["tensor_flops_per_s"] = t.tensor_flops_per_s;
  }
}

void from_json(const json& j, target& t) {
  t = target{};
  get_enum(j, "platform", t.plat, platform::cuda);
  get(j, "arch", t.arch);
  get(j, "device", t.device);
  get(j, "capabilities", t.capabilities);
  get(j, "cores", t.cores);
  get(j, "llc_bytes", t.llc_bytes);
  get_double(j, "copy_bytes_per_s", t.copy_bytes_per_s);
  get_double(j, "cache_bytes_per_s", t.cache_bytes_per_s);
  get_double(j, "l2_bytes_per_s", t.l2_bytes_per_s);
  get_double(j, "flops_per_s", t.flops_per_s);
  get(j, "uuid", t.uuid);
  get(j, "cc_major", t.cc_major);
  get(j, "cc_minor", t.cc_minor);
  get(j, "memory_bytes", t.memory_bytes);
  get(j, "smem_optin_bytes", t.smem_optin_bytes);
  get(j, "smem_per_sm_bytes", t.smem_per_sm_bytes);
  get(j, "registers_per_sm", t.registers_per_sm);
  get(j, "sm_clock_mhz", t.sm_clock_mhz);
  get(j, "mem_clock_mhz", t.mem_clock_mhz);
  get(j, "memory_bus_bits", t.memory_bus_bits);
  get(j, "driver_version", t.driver_version);
  get(j, "runtime_version", t.runtime_version);
  get_double(j, "tensor_flops_per_s", t.tensor_flops_per_s);
}

void to_json(json& j, const gpu_snapshot& s) {
  j = json{{"sm_clock_mhz", s.sm_clock_mhz},   {"mem_clock_mhz", s.mem_clock_mhz},
           {"temperature_c", s.temperature_c}, {"power_w", s.power_w},
           {"throttle_reasons", s.throttle_reasons}, {"time", s.time}};
}

void from_json(const json& j, gpu_snapshot& s) {
  s = gpu_snapshot{};
  get(j, "sm_clock_mhz", s.sm_clock_mhz);
  get(j, "mem_clock_mhz", s.mem_clock_mhz);
  get(j, "temperature_c", s.temperature_c);
  get_double(j, "power_w", s.power_w);
  get(j, "throttle_reasons", s.throttle_reasons);
  get(j, "time", s.time);
}

}  // namespace lathe
