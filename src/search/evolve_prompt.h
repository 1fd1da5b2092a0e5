// Internal to search/: the text an evolve run gives its proposer — a kernel's execution feedback,
// a child's direction (its place in the run, the parent's feedback, the inspirations and cards)
// — and the figures of a child it prints and scores by.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/card.h"
#include "core/kernel.h"
#include "search/archive.h"
#include "search/evolve.h"
#include "search/records.h"

namespace lathe::search::detail {

// The execution feedback of a kernel's last evaluation, as the proposer reads it.
std::string feedback_text(const measured& m);
// Non-blank source lines of a bundle (the `complexity` descriptor).
size_t source_lines(const kernel_bundle& k);
// Where a child went in the archive, in words.
std::string placement_text(const child_record& c);
// A child's mutate direction: its place in the run (so that siblings from one parent get
// different prompts), the parent's feedback, the inspirations, the retrieved cards, the reference.
std::string child_direction(const elite& parent, const std::string& parent_feedback,
                            const std::vector<const elite*>& insp, const std::vector<skill_card>& cards, int32_t g,
                            int32_t island, int32_t index, const std::string& reference_source);

}  // namespace lathe::search::detail
