// to_json/from_json of budgets and runs (json.h has the rest of core/'s types).
#pragma once

#include "core/run.h"
#include "core/json.h"

namespace lathe {

void to_json(json& j, const budget& b);
void from_json(const json& j, budget& b);
void to_json(json& j, const run& r);
void from_json(const json& j, run& r);

}  // namespace lathe
