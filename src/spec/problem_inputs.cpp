#include "spec/problem_inputs.h"

#include <nlohmann/json.hpp>

namespace lathe {

problem_input_roles problem_inputs(const task& t) {
  problem_input_roles r;
  r.forward = t.inputs.size();
  if (t.problem_model.empty()) return r;
  const nlohmann::json m = nlohmann::json::parse(t.problem_model, nullptr, false);
  if (!m.is_object()) return r;
  r.forward = 0;
  for (const auto& f : m.value("forward", nlohmann::json::array())) r.forward += f.contains("input") ? 1 : 0;
  r.state = m.value("state", std::vector<std::string>{});
  return r;
}

std::vector<std::string> problem_ops(const task& t) {
  if (t.problem_model.empty()) return {};
  const nlohmann::json m = nlohmann::json::parse(t.problem_model, nullptr, false);
  std::vector<std::string> out;
  if (!m.is_object() || !m.contains("ops") || !m["ops"].is_array()) return out;
  for (const auto& op : m["ops"])
    if (op.is_string()) out.push_back(op.get<std::string>());
  return out;
}

}  // namespace lathe
