// to_json/from_json of lineages and their transitions (json.h has the rest of core/'s types).
#pragma once

#include "core/lineage.h"
#include "core/json.h"

namespace lathe {

void to_json(json& j, const forward_result& f);
void from_json(const json& j, forward_result& f);
void to_json(json& j, const transition& t);
void from_json(const json& j, transition& t);
void to_json(json& j, const lineage& l);
void from_json(const json& j, lineage& l);

}  // namespace lathe
