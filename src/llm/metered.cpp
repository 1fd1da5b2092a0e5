// Budget reservation and the call record around every model call (llm/metered.h).
#include "llm/metered.h"

#include <chrono>
#include <cmath>

namespace lathe::llm {

meter meter_of(const config& c, ledger* budget, call_log* log) {
  meter m;
  m.budget = budget;
  m.log = log;
  m.cost = c.model_price();
  m.max_seconds = c.call_seconds_bound();
  m.command = c.provider == provider_kind::command;
  return m;
}

amounts used_by_failure(const call_failure& f, const amounts& worst_case) {
  amounts used;
  if (f.kind == call_error::waiting) return used;  // nothing was asked yet (batch mode)
  used.calls = 1;
  switch (f.kind) {
    case call_error::timeout:
    case call_error::server:
    case call_error::malformed:
    case call_error::cancelled:
      used.tokens = worst_case.tokens;
      // No price: the worst case is +infinity, and what a call without a price costs is unknown
      // (used_by_call charges it 0 too; only ledgers without a usd limit admit such calls).
      used.usd = std::isfinite(worst_case.usd) ? worst_case.usd : 0.0;
      break;
    default:
      break;
  }
  return used;
}

metered_provider::metered_provider(std::unique_ptr<provider> inner, meter m)
    : inner_(std::move(inner)), meter_(m) {}

std::string metered_provider::name() const {
  return inner_->name();
}

call_result metered_provider::call(const request& r, const cancel_token* cancel) {
  return metered(r, nullptr, cancel);
}

call_result metered_provider::call_in(const request& r, const kernel_bundle& bundle,
                                      const cancel_token* cancel) {
  return metered(r, &bundle, cancel);
}

call_result metered_provider::metered(const request& r, const kernel_bundle* bundle,
                                      const cancel_token* cancel) {
  auto keep = [&](const call_result& res, double seconds) {
    // A record that cannot be stored does not fail the call: the reply is good, and the store
    // reports its own errors on the next write a run makes.
    if (meter_.log) (void)meter_.log->record(r, res, seconds);
  };
  const amounts worst = meter_.command ? worst_case_command(meter_.max_seconds)
                                       : worst_case_call(r, meter_.cost, meter_.max_seconds);
  std::optional<reservation> held;
  if (meter_.budget) {
    auto got = meter_.budget->reserve(worst);
    if (!got) {
      call_result refused =
          tl::unexpected(call_failure{call_error::budget, got.error().message, 0, 0});
      keep(refused, 0);
      return refused;
    }
    held.emplace(std::move(*got));
  }
  // Cancelled before it started: nothing was sent, nothing is charged.
  if (cancel && cancel->cancelled.load()) {
    if (held) meter_.budget->release(std::move(*held));
    call_result cancelled =
        tl::unexpected(call_failure{call_error::cancelled, "cancelled before the call", 0, 0});
    keep(cancelled, 0);
    return cancelled;
  }
  const auto start = std::chrono::steady_clock::now();
  auto* files = bundle ? dynamic_cast<workspace_provider*>(inner_.get()) : nullptr;
  call_result res = files ? files->call_in(r, *bundle, cancel) : inner_->call(r, cancel);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (held) {
    amounts used = res ? used_by_call(*res, meter_.cost) : used_by_failure(res.error(), worst);
    meter_.budget->commit(std::move(*held), used);
  }
  keep(res, seconds);
  return res;
}

}  // namespace lathe::llm
