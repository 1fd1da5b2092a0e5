// Free to_json/from_json for the value types of core/. nlohmann's forward header only: the full
// header stays in the .cpp files (build time, PROTOCOL.md figures). Lineages, cards and runs have
// theirs in json_lineage.h, json_card.h and json_run.h, so that editing one of those types does
// not rebuild every reader of JSON.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "core/evaluation.h"
#include "core/expert.h"
#include "core/feature.h"
#include "core/kernel.h"
#include "core/provenance.h"
#include "core/target.h"
#include "core/task.h"

namespace lathe {

using json = nlohmann::json;

void to_json(json& j, const distribution& d);
void from_json(const json& j, distribution& d);
void to_json(json& j, const tensor_spec& t);
void from_json(const json& j, tensor_spec& t);
void to_json(json& j, const task& t);
void from_json(const json& j, task& t);
void to_json(json& j, const kernel_manifest& m);
void from_json(const json& j, kernel_manifest& m);
void to_json(json& j, const target& t);
void from_json(const json& j, target& t);
void to_json(json& j, const gpu_snapshot& s);
void from_json(const json& j, gpu_snapshot& s);
void to_json(json& j, const feature& f);
void from_json(const json& j, feature& f);
void to_json(json& j, const provenance& p);
void from_json(const json& j, provenance& p);
void to_json(json& j, const delegation_finding& f);
void from_json(const json& j, delegation_finding& f);
void to_json(json& j, const expert_check& c);
void from_json(const json& j, expert_check& c);
void to_json(json& j, const check_record& c);
void from_json(const json& j, check_record& c);
void to_json(json& j, const timing_policy& p);
void from_json(const json& j, timing_policy& p);
void to_json(json& j, const paired_series& s);
void from_json(const json& j, paired_series& s);
void to_json(json& j, const comparability_result& c);
void from_json(const json& j, comparability_result& c);
void to_json(json& j, const evaluation& e);  // the body of lathe.eval/1 (without "schema")
void from_json(const json& j, evaluation& e);

// An outcome field of a run record (outcome_text writes it): a missing key or "" is none; a name
// that is no outcome throws json's type_error 302, as every closed set's reader does.
std::optional<outcome> outcome_field(const json& j, const char* key);

}  // namespace lathe
