#include "core/lineage.h"

namespace lathe {

const char* to_string(termination t) {
  switch (t) {
    case termination::complete:
      return "complete";
    case termination::step_limit:
      return "step_limit";
    case termination::rejection_limit:
      return "rejection_limit";
    case termination::unknown:
      return "unknown";
  }
  return "?";
}

const char* to_string(forward_status s) {
  switch (s) {
    case forward_status::not_tried:
      return "not_tried";
    case forward_status::accepted:
      return "accepted";
    case forward_status::rejected:
      return "rejected";
    case forward_status::identity_roundtrip:
      return "identity_roundtrip";
    case forward_status::undecided:
      return "undecided";
  }
  return "?";
}

}  // namespace lathe
