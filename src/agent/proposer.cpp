// Names of the proposer interface's closed sets, and the audit's verdict (agent/proposer.h).
#include "agent/proposer.h"

#include <algorithm>

namespace lathe::agent {

const char* to_string(failure_kind k) {
  switch (k) {
    case failure_kind::call:
      return "call";
    case failure_kind::budget:
      return "budget";
    case failure_kind::waiting:
      return "waiting";
    case failure_kind::invalid_reply:
      return "invalid_reply";
    case failure_kind::edit_not_applied:
      return "edit_not_applied";
    case failure_kind::unsupported:
      return "unsupported";
    case failure_kind::refused:
      return "refused";
  }
  return "?";
}

const char* to_string(presence p) {
  switch (p) {
    case presence::present:
      return "present";
    case presence::absent:
      return "absent";
    case presence::unknown:
      return "unknown";
  }
  return "?";
}

bool audit_result::passed() const {
  return std::none_of(verdicts.begin(), verdicts.end(),
                      [](const feature_verdict& v) { return v.status == presence::unknown; });
}

}  // namespace lathe::agent
