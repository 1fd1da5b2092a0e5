// What a model is shown: tasks, targets, kernels, features, cards and lineage steps rendered as
// the text of prompt fields (docs/proposer.md "Prompts"). One renderer per concept, so that every
// operation shows a kernel the same way and a transcript reads the same everywhere.
#pragma once

#include <string>
#include <vector>

#include "agent/proposer.h"
#include "core/card.h"
#include "core/feature.h"
#include "core/kernel.h"
#include "core/lineage.h"
#include "core/target.h"
#include "core/task.h"

namespace lathe::agent {

// What an empty list or an absent value is rendered as: never an empty field.
inline constexpr const char* none_text = "(none)";

// name, operator, platform, description, inputs, outputs, scalars, shape sets, comparison and what
// the task allows (vendor libraries, fast math).
std::string task_text(const task& t);

// A target summary for the `target` field: platform, architecture, device and capabilities.
std::string target_text(const target& t);

// The manifest (language, entry, flags, defines, libraries, isa) and every file under a line
// "=== FILE <path> ===". `numbered`: each line as "%5d| code" (audit_features only), so that a
// citation names lines the model could see.
std::string kernel_text(const kernel_bundle& k, bool numbered = false);

// "name @ locus (k=v, …)"; one per line for a list.
std::string feature_text(const feature& f);
std::string features_text(const std::vector<feature>& fs);

// "name: definition (parameters: …)" from the feature registry; the name alone when it is not
// registered (the caller refuses those before asking).
std::string definition_text(const std::string& name);

// The feature registry's names that apply to `plat`, each with its definition, one per line.
std::string registry_text(platform plat);

// One "- item" line per entry.
std::string list_text(const std::vector<std::string>& items);
std::string notes_text(const std::vector<attempt_note>& notes);

// A card as materialize shows it: intent, anchor, the carrier for `lang` (every carrier when none
// is keyed by that language), preconditions, constraints, risk.
std::string card_text(const skill_card& c, language lang);

// A lineage step as abstract_card shows it: action, locus, features removed/added, speedup.
std::string step_text(const transition& s);

// At most `max_bytes` of `text`: the head and the tail, with what was cut said in between (a
// compile log of thousands of lines must not crowd the kernel out of a prompt).
std::string clipped(const std::string& text, size_t max_bytes);

// A proposer's rationale as a rejected note shows it: its lines joined, whole when it has at most
// `max_bytes`, else cut at the last sentence end (else word boundary) before that and marked
// "[… N more characters cut]". A note cut mid-word ("masked tai…") left a real model unable to
// tell what had been tried (issue 44, item 2).
std::string summary_text(const std::string& text, size_t max_bytes = 600);

// The carrier key of a language on a platform: "cpp/cpu", "cuda/cuda" (core/card.h:
// skill_card::carriers is keyed by language/platform).
std::string carrier_key(language lang, platform plat);

}  // namespace lathe::agent
