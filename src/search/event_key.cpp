#include "search/event_key.h"

#include "core/text.h"

namespace lathe::search::detail {

namespace {

std::string n(int64_t x) { return std::to_string(x); }

}  // namespace

event_key event_key::resumed(int64_t last_seq) { return event_key(cat("resumed/", n(last_seq))); }

event_key event_key::ranking(int32_t step) { return event_key(cat("k/", n(step))); }
event_key event_key::proposal(int32_t step, int32_t round) { return event_key(cat("p/", n(step), "/0/", n(round))); }
event_key event_key::seed_proposal(int32_t round) { return event_key(cat("p/seed/0/", n(round))); }
event_key event_key::given_start_check() { return event_key("e/start/given"); }
event_key event_key::seeded_start_check(int32_t round) { return event_key(cat("e/start/0/", n(round))); }
event_key event_key::candidate(int32_t step, int32_t round) {
  return event_key(cat("e/candidate/", n(step), "/0/", n(round)));
}
event_key event_key::remeasure(int32_t step) { return event_key(cat("e/remeasure/", n(step), "/0/0")); }
event_key event_key::final_best() { return event_key("e/final_best"); }
event_key event_key::final_expert() { return event_key("e/final_expert"); }
event_key event_key::rejected(int32_t step, int32_t attempt) { return event_key(cat("r/", n(step), "/", n(attempt))); }
event_key event_key::accepted(int32_t step) { return event_key(cat("a/", n(step))); }

event_key event_key::translation(int32_t island, int32_t index) {
  return event_key(cat("t/", n(island), "/", n(index)));
}
event_key event_key::child(int32_t generation, int32_t island, int32_t index) {
  return event_key(cat("c/", n(generation), "/", n(island), "/", n(index)));
}
event_key event_key::migrant(int32_t generation, int32_t to_island) {
  return event_key(cat("m/", n(generation), "/", n(to_island)));
}
event_key event_key::generation(int32_t generation) { return event_key(cat("g/", n(generation))); }

event_key event_key::retry(int32_t again) const { return event_key(cat(text_, "/u", n(again))); }

}  // namespace lathe::search::detail
