// A tune run's winner as a tuned-knobs card (skills/tuned.h, docs/tune.md "The winner as a
// card"), read from the run's result as lathe.tune/1 says it: one path for `lathe tune` at the
// end of a run and `lathe skills from-tune RUN` afterwards (a run stored before tune made cards,
// or a card made again), so that both make the same card from the same run.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "cli/verbs.h"
#include "core/error.h"
#include "core/target.h"
#include "core/task.h"
#include "skills/tuned.h"
#include "store/store.h"

namespace lathe::cli {

// The win a finished tune run's result (`lathe.tune/1`: its `improved`, `crown`, `best`,
// `default`, `default_hash`, `winner`, `kernel` and `run`) stands for, measured on `tgt` for a
// kernel in `lang`. An error saying what is missing when the result crowned no winner: the
// default stood, or the crown has no paired ratio.
result<skills::tune_win> win_of_tune(const nlohmann::json& result, const task& t, const target& tgt,
                                     language lang);

// The card of the win (skills::card_from_tune), stored as tune stores it (store_tuned_card: the
// same values crowned again keep their status and trials). Returns {"id", "name", "evidence"}.
result<nlohmann::json> store_tune_card(const skills::tune_win& w, store& db);

// lathe skills from-tune RUN [--json]: the card of a stored tune run's winner.
void add_skills_from_tune(CLI::App* skills, const common_options& common, int& exit_code);

}  // namespace lathe::cli
