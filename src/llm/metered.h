// A provider that meters every call (docs/proposer.md "Budgets and the call record"): before a
// call it reserves the call's worst case in the run's budget ledger and refuses the call
// (call_error::budget) when the ledger says no; afterwards it commits what the call used, and it
// stores every call, failed and refused ones included, through the call log. It wraps any
// provider, passing a kernel bundle on to one that works on files, so that the agent never has to
// remember to account for a repair round.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "llm/budget.h"
#include "llm/call_log.h"
#include "llm/command.h"
#include "llm/config.h"
#include "llm/provider.h"

namespace lathe::llm {

struct meter {
  ledger* budget = nullptr;   // optional: no ledger, no limits
  call_log* log = nullptr;    // optional: no log, no records
  std::optional<price> cost;  // the configured model's price (nullopt: unknown)
  double max_seconds = 0;     // a call's worst-case wall time (config::call_seconds_bound)
  bool command = false;       // counted by calls and wall time only (worst_case_command)
};

// The meter a lathe.toml describes: its model's price, its call time bound, and whether the
// provider is an agent CLI.
meter meter_of(const config& c, ledger* budget, call_log* log);

// What a failed call is charged. The call itself always counts. Tokens and money count at their
// worst case only when the model may have worked on the request before the call failed (a timeout,
// a server error, a reply that did not parse, a cancellation in flight): the provider reports no
// usage then, and charging nothing would make the budget look larger than it is. A call refused
// before any work (401, 400, 429, no connection, no cassette) is charged the call alone.
amounts used_by_failure(const call_failure& f, const amounts& worst_case);

class metered_provider final : public workspace_provider {
 public:
  metered_provider(std::unique_ptr<provider> inner, meter m);
  std::string name() const override;  // the inner provider's: metering changes no provenance
  call_result call(const request& r, const cancel_token* cancel = nullptr) override;
  call_result call_in(const request& r, const kernel_bundle& bundle,
                      const cancel_token* cancel = nullptr) override;

 private:
  call_result metered(const request& r, const kernel_bundle* bundle, const cancel_token* cancel);
  std::unique_ptr<provider> inner_;
  meter meter_;
};

}  // namespace lathe::llm
