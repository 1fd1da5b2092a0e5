// Budgets (DESIGN.md vocabulary): a thread-safe ledger over a run's limits. Every action reserves
// its worst case before it starts and commits what it used when it ends; a reservation that does
// not fit is refused, naming the limit.
//
// The rule, per resource (docs/config.md "Budgets" says the same for users):
//
//   exact counters (steps, evals, calls): admitted iff  spent + in_flight + asked <= limit.
//     A limit of N steps allows exactly N steps, however many threads ask at once.
//
//   tokens, usd: admitted iff  spent + in_flight + asked <= limit            (it fits), or
//                              nothing of that resource is in flight and
//                              spent < limit                                 (the last call).
//   seconds (the wall clock since the ledger began, plus `already_spent`, not a sum of
//            durations: actions in flight overlap in time):
//                admitted iff  elapsed + asked <= limit, or
//                              no action holding seconds is in flight and elapsed < limit.
//
//   A request of 0 of a resource is always admitted for that resource (a gate evaluation asks
//   for no tokens and runs after the tokens are gone).
//
// Why the "last call" allowance: worst cases are pessimistic (max_tokens, one token per byte of
// prompt), so a strict fit would leave the tail of every budget unusable. Why the bound holds:
// the allowance is given only with nothing of that resource in flight, and while such a call is
// in flight nothing else that could pass the limit is admitted (tokens, usd: spent + in_flight
// already passes it; seconds: only actions that end before it fit). Every call admitted by
// fitting stays within the limit; spending past it happens one lone call at a time, and stops
// once spent >= limit. Hence tokens, money and wall time end at most one call's use above their
// limit (its worst case, when its use stays within it), and not at all when every call fits.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "core/budget.h"
#include "llm/provider.h"

namespace lathe::llm {

// What an action may use (a worst case) or has used, per resource.
struct amounts {
  int64_t steps = 0, evals = 0, calls = 0, tokens = 0;
  double usd = 0, seconds = 0;
};

// The amounts the search loops reserve, commit and charge again on resume, by name: a positional
// {0, 1, 0, 0, 0, 0} reads the same whichever field it means.
inline constexpr amounts one_step{.steps = 1};
inline constexpr amounts one_evaluation{.evals = 1};
// n gate evaluations at once (optimize holds its final measurements from the start).
constexpr amounts evaluations(int64_t n) { return {.evals = n}; }
// One step and the wall time it may take (its worst case against the time limit).
constexpr amounts one_step_taking(double seconds) { return {.steps = 1, .seconds = seconds}; }

enum class resource : uint8_t { steps, evals, calls, tokens, usd, seconds };
const char* to_string(resource r);

// The limits a ledger enforces: core's budget (steps, evals, tokens, usd, seconds) and the number
// of model calls, which is what `command` providers are counted by (they report no tokens).
struct limits {
  budget run;
  std::optional<int64_t> calls;
};

// The limits of a run: lathe.toml's [limits], each field replaced by the run's own (--budget)
// where that sets it.
limits with_overrides(const limits& from_file, const budget& from_run);

// A run's --budget: comma-separated `name=value` items, names steps, evals, tokens, usd, time.
// steps, evals, tokens: whole numbers (tokens may end in k or M); usd: a number; time: seconds,
// or a number ending in s, m or h. "steps=20,evals=40,time=10m". Errors name the item.
tl::expected<budget, std::string> parse_budget(std::string_view text);
// The same text back ("steps=20,evals=40,time=600s"); "none" when nothing is set.
std::string budget_text(const budget& b);

// USD per million tokens, from lathe.toml's [prices."<model>"].
struct price {
  double input_per_million = 0, output_per_million = 0;
};
double cost_usd(const price& p, int64_t tokens_in, int64_t tokens_out);

// An upper bound on a request's input tokens: one per byte of its text (a byte-level tokenizer
// never makes more tokens than bytes), plus a margin per message for the chat framing. It is
// pessimistic (about 4x for English), which the "last call" allowance makes up for.
int64_t input_token_bound(const request& r);

// The worst case of one model call: 1 call, input bound + max_tokens tokens, their price, and
// `max_seconds` (the transport's total time, retries included). With no price the money is
// unbounded (+infinity): a ledger with a usd limit refuses it, one without ignores it.
amounts worst_case_call(const request& r, const std::optional<price>& p, double max_seconds);
// What a finished call used; `cost` is nullopt when no price is known (then 0 is charged: only
// a ledger without a usd limit admits such calls).
amounts used_by_call(const response& resp, const std::optional<price>& p);
// A `command` provider's call: counted by calls and wall time only.
amounts worst_case_command(double timeout_seconds);

struct refusal {
  resource limit = resource::steps;
  double limit_value = 0;  // the limit
  double spent = 0;        // used so far (seconds: elapsed)
  double in_flight = 0;    // reserved by actions in flight (seconds: not added, they overlap)
  double asked = 0;        // this reservation's worst case
  std::string message;     // "budget: tokens limit 1000 reached: 900 spent, 300 in flight, …"
};

class ledger;

// A reservation held by an action in flight. Move-only. One that is destroyed without commit()
// or release() is charged its whole worst case: an action whose use is unknown (an exception
// path) must not make the budget look larger than it is. The ledger must outlive it.
class reservation {
 public:
  reservation(reservation&& o) noexcept;
  reservation& operator=(reservation&& o) noexcept;
  reservation(const reservation&) = delete;
  reservation& operator=(const reservation&) = delete;
  ~reservation();

  const amounts& worst_case() const { return worst_; }
  bool active() const { return owner_ != nullptr; }

 private:
  friend class ledger;
  reservation(ledger* owner, const amounts& worst) : owner_(owner), worst_(worst) {}
  ledger* owner_ = nullptr;
  amounts worst_;
};

class ledger {
 public:
  // Monotonic seconds; tests pass a fake clock.
  using clock_fn = std::function<double()>;

  // `already_spent`: what earlier sessions of a resumed run used (seconds included).
  explicit ledger(const limits& l, const amounts& already_spent = {}, clock_fn clock = {});
  ledger(const ledger&) = delete;
  ledger& operator=(const ledger&) = delete;

  // Negative or NaN amounts are a programmer error (std::invalid_argument).
  tl::expected<reservation, refusal> reserve(const amounts& worst_case);
  // Releases the reservation and charges `used`. Using more steps, evaluations or calls than
  // were reserved is a programmer error (std::logic_error; nothing is charged): those limits are
  // exact only because every action reserves them. Tokens and money may exceed the worst case
  // (estimates) and are charged in full. `used.seconds` is not charged: the clock is the measure.
  void commit(reservation&& r, const amounts& used);
  // The action never started (cancelled before the call, the edit did not apply before the
  // gate): the reservation is released and nothing is charged.
  void release(reservation&& r);

  amounts spent() const;      // seconds: elapsed since the ledger began, plus already_spent
  amounts in_flight() const;  // the worst cases of the reservations in flight, summed
  int64_t actions_in_flight() const;
  const limits& bounds() const { return bounds_; }

 private:
  friend class reservation;
  void abandon(const amounts& worst);  // ~reservation of an uncommitted one
  double elapsed_locked() const;
  void unreserve_locked(const amounts& worst);

  limits bounds_;
  clock_fn clock_;
  double start_ = 0;
  mutable std::mutex mu_;
  amounts spent_;  // seconds: already_spent only; elapsed is added when read
  amounts reserved_;
  // How many reservations in flight hold a nonzero amount of each resource: the "nothing in
  // flight" test of the last-call allowance, free of floating-point residue in reserved_.
  int64_t holders_[6] = {0, 0, 0, 0, 0, 0};
  int64_t actions_ = 0;
};

}  // namespace lathe::llm
