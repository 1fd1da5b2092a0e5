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

}  // namespace lathe
