// Internal to search/: the key of one run event (journal.h), the one name by which a resumed run
// finds the action it recorded. The text is what stored runs hold in their events' "key" field,
// so it may never change: tests/search/event_key_test.cpp pins every form, and a new action gets
// a new form rather than a changed one. Keys are built only here, from numbers, so that two sites
// cannot spell the same action two ways.
//
// Forms (n: step, r: repair round, g: generation, i: island, k: index in the island):
//   both verbs     started, start, finished, resumed/<last seq>
//   optimize       k/n (ranking), p/seed/0/r, p/n/0/r (proposals), e/start/given, e/start/0/r,
//                  e/candidate/n/0/r, e/remeasure/n/0/0, e/final_best, e/final_expert
//                  (evaluations; <key>/u1, /u2… the retries of an unstable one), r/n/0 (rejected),
//                  a/n (accepted). The 0 after n is the attempt: one per step since the first
//                  stored runs, kept in the text.
//   evolve         t/i/k (translation), c/g/i/k (child; g = 0: the initial population),
//                  m/g/i (migrant into island i), g/g (generation)
#pragma once

#include <cstdint>
#include <string>

namespace lathe::search::detail {

class event_key {
 public:
  // The events a run writes once (start: the start kernel's event).
  static event_key started() { return event_key("started"); }
  static event_key start() { return event_key("start"); }
  static event_key finished() { return event_key("finished"); }
  // One per resume, after the last event recorded before it.
  static event_key resumed(int64_t last_seq);

  // optimize: the proposer's ranking of path options at step n.
  static event_key ranking(int32_t step);
  // optimize: a proposal at step n (round 0) or its repair rounds (1…).
  static event_key proposal(int32_t step, int32_t round);
  // optimize: the seeded start kernel (round 0) and its repairs.
  static event_key seed_proposal(int32_t round);
  // optimize: the checks of the start kernel: given (or naive), or seeded (its repair round).
  static event_key given_start_check();
  static event_key seeded_start_check(int32_t round);
  // optimize: the paired comparisons of step n's candidate (repair round) and its re-measure.
  static event_key candidate(int32_t step, int32_t round);
  static event_key remeasure(int32_t step);
  // optimize: the final paired measurements of the best kernel and of the expert.
  static event_key final_best();
  static event_key final_expert();
  // optimize: the verdict on step n: rejected (attempt) or accepted.
  static event_key rejected(int32_t step, int32_t attempt);
  static event_key accepted(int32_t step);

  // evolve: a translation of the reference, a child, a migrant, the end of a generation.
  static event_key translation(int32_t island, int32_t index);
  static event_key child(int32_t generation, int32_t island, int32_t index);
  static event_key migrant(int32_t generation, int32_t to_island);
  static event_key generation(int32_t generation);

  // The same evaluation asked again (the gate found the machine too noisy to decide): again >= 1.
  event_key retry(int32_t again) const;

  const std::string& text() const { return text_; }
  bool operator==(const event_key&) const = default;

 private:
  explicit event_key(std::string text) : text_(std::move(text)) {}
  std::string text_;
};

}  // namespace lathe::search::detail
