// to_json/from_json of skill cards and their trials (json.h has the rest of core/'s types).
#pragma once

#include "core/card.h"
#include "core/json.h"

namespace lathe {

void to_json(json& j, const constraint& k);
void from_json(const json& j, constraint& k);
void to_json(json& j, const card_trial& t);
void from_json(const json& j, card_trial& t);
void to_json(json& j, const card_tuning& t);
void from_json(const json& j, card_tuning& t);
void to_json(json& j, const skill_card& c);
void from_json(const json& j, skill_card& c);

}  // namespace lathe
