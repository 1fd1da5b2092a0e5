#include "core/card.h"

namespace lathe {

const char* to_string(trial_verdict v) {
  switch (v) {
    case trial_verdict::reproduced:
      return "reproduced";
    case trial_verdict::not_reproduced:
      return "not_reproduced";
    case trial_verdict::gate_failed:
      return "gate_failed";
    case trial_verdict::not_applicable:
      return "not_applicable";
  }
  return "?";
}

const char* to_string(card_status s) {
  switch (s) {
    case card_status::candidate:
      return "candidate";
    case card_status::admitted:
      return "admitted";
    case card_status::replay_admitted:
      return "replay-admitted";
    case card_status::refused:
      return "refused";
  }
  return "?";
}

}  // namespace lathe
