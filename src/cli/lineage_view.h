// How lineages, expert checks and cards read on a terminal (the cli is the only layer that
// prints). Shared by init, decompose and skills.
#pragma once

#include <vector>

#include "core/card.h"
#include "core/expert.h"
#include "core/lineage.h"
#include "store/store.h"

namespace lathe::cli {

void print_expert_check(const expert_check& c);
// One line per step in the optimizing direction, K0 (naive end) first, with provenance.
void print_lineage(const lineage& l, const store& db);
void print_cards_brief(const std::vector<skill_card>& cards);
void print_card(const skill_card& c);

// "1.234x" or "-".
std::string ratio_text(const std::optional<double>& r);

}  // namespace lathe::cli
