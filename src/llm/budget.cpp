#include "llm/budget.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <stdexcept>

namespace lathe::llm {

namespace {

constexpr int resource_count = 6;

// Per-message framing a chat template adds around each message (role markers, separators):
// OpenAI documents 3-4 tokens per message, Llama-style templates use up to ~6. 8 is a margin.
constexpr int64_t framing_tokens_per_message = 8;
constexpr int64_t framing_tokens_per_request = 16;

// Sums of prices in doubles carry rounding (0.1 + 0.2 > 0.3); a limit is "passed" only beyond it.
double tolerance(double limit) {
  return 1e-9 * std::max(1.0, std::fabs(limit));
}

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

void check_amounts(const amounts& a, const char* what, bool allow_infinite_usd) {
  auto bad = [what](const char* field) {
    throw std::invalid_argument(std::string("budget: ") + what + "." + field +
                                " must be a finite number >= 0");
  };
  if (a.steps < 0) bad("steps");
  if (a.evals < 0) bad("evals");
  if (a.calls < 0) bad("calls");
  if (a.tokens < 0) bad("tokens");
  if (std::isnan(a.usd) || a.usd < 0 || (!allow_infinite_usd && std::isinf(a.usd))) bad("usd");
  if (!std::isfinite(a.seconds) || a.seconds < 0) bad("seconds");
}

double get(const amounts& a, resource r) {
  switch (r) {
    case resource::steps:
      return static_cast<double>(a.steps);
    case resource::evals:
      return static_cast<double>(a.evals);
    case resource::calls:
      return static_cast<double>(a.calls);
    case resource::tokens:
      return static_cast<double>(a.tokens);
    case resource::usd:
      return a.usd;
    case resource::seconds:
      return a.seconds;
  }
  return 0;
}

std::optional<double> limit_of(const limits& l, resource r) {
  auto as_double = [](const std::optional<int64_t>& v) {
    return v ? std::optional<double>(static_cast<double>(*v)) : std::nullopt;
  };
  switch (r) {
    case resource::steps:
      return as_double(l.run.steps);
    case resource::evals:
      return as_double(l.run.evals);
    case resource::calls:
      return as_double(l.calls);
    case resource::tokens:
      return as_double(l.run.tokens);
    case resource::usd:
      return l.run.usd;
    case resource::seconds:
      return l.run.seconds;
  }
  return std::nullopt;
}

std::string amount_text(resource r, double v) {
  char buf[64];
  if (r == resource::usd)
    std::snprintf(buf, sizeof buf, "$%.4f", v);
  else if (r == resource::seconds)
    std::snprintf(buf, sizeof buf, "%.1f s", v);
  else
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(std::llround(v)));
  return buf;
}

}  // namespace

const char* to_string(resource r) {
  switch (r) {
    case resource::steps:
      return "steps";
    case resource::evals:
      return "evals";
    case resource::calls:
      return "calls";
    case resource::tokens:
      return "tokens";
    case resource::usd:
      return "usd";
    case resource::seconds:
      return "seconds";
  }
  return "steps";
}

limits with_overrides(const limits& from_file, const budget& from_run) {
  limits l = from_file;
  if (from_run.steps) l.run.steps = from_run.steps;
  if (from_run.evals) l.run.evals = from_run.evals;
  if (from_run.tokens) l.run.tokens = from_run.tokens;
  if (from_run.usd) l.run.usd = from_run.usd;
  if (from_run.seconds) l.run.seconds = from_run.seconds;
  return l;
}

double cost_usd(const price& p, int64_t tokens_in, int64_t tokens_out) {
  return (static_cast<double>(tokens_in) * p.input_per_million +
          static_cast<double>(tokens_out) * p.output_per_million) /
         1e6;
}

int64_t input_token_bound(const request& r) {
  auto bytes = static_cast<int64_t>(r.system.size() + r.json_schema.size());
  for (const auto& m : r.messages) bytes += static_cast<int64_t>(m.content.size() + m.role.size());
  const auto framed = static_cast<int64_t>(r.messages.size()) + 1;  // + the system prompt
  return bytes + framing_tokens_per_message * framed + framing_tokens_per_request;
}

amounts worst_case_call(const request& r, const std::optional<price>& p, double max_seconds) {
  amounts a;
  a.calls = 1;
  const int64_t in = input_token_bound(r);
  const int64_t out = std::max<int64_t>(r.max_tokens, 0);
  a.tokens = in + out;
  a.usd = p ? cost_usd(*p, in, out) : std::numeric_limits<double>::infinity();
  a.seconds = max_seconds;
  return a;
}

amounts used_by_call(const response& resp, const std::optional<price>& p) {
  amounts a;
  a.calls = 1;
  a.tokens = std::max<int64_t>(resp.tokens_in, 0) + std::max<int64_t>(resp.tokens_out, 0);
  a.usd =
      p ? cost_usd(*p, std::max<int64_t>(resp.tokens_in, 0), std::max<int64_t>(resp.tokens_out, 0))
        : 0.0;
  a.seconds = std::max(resp.latency_seconds, 0.0);
  return a;
}

amounts worst_case_command(double timeout_seconds) {
  amounts a;
  a.calls = 1;
  a.seconds = timeout_seconds;
  return a;
}

// --- reservation ------------------------------------------------------------------------------

reservation::reservation(reservation&& o) noexcept : owner_(o.owner_), worst_(o.worst_) {
  o.owner_ = nullptr;
}

reservation& reservation::operator=(reservation&& o) noexcept {
  if (this != &o) {
    if (owner_) owner_->abandon(worst_);
    owner_ = o.owner_;
    worst_ = o.worst_;
    o.owner_ = nullptr;
  }
  return *this;
}

reservation::~reservation() {
  if (owner_) owner_->abandon(worst_);
}

// --- ledger -----------------------------------------------------------------------------------

ledger::ledger(const limits& l, const amounts& already_spent, clock_fn clock)
    : bounds_(l), clock_(clock ? std::move(clock) : clock_fn(now_seconds)) {
  check_amounts(already_spent, "already_spent", false);
  start_ = clock_();
  spent_ = already_spent;
}

double ledger::elapsed_locked() const {
  return spent_.seconds + std::max(0.0, clock_() - start_);
}

tl::expected<reservation, refusal> ledger::reserve(const amounts& worst_case) {
  check_amounts(worst_case, "worst_case", true);
  amounts worst = worst_case;
  std::lock_guard<std::mutex> lock(mu_);
  const double elapsed = elapsed_locked();

  for (int i = 0; i < resource_count; ++i) {
    const auto r = static_cast<resource>(i);
    const std::optional<double> limit = limit_of(bounds_, r);
    const double asked = get(worst, r);
    if (!limit || asked == 0) continue;
    const bool exact = r == resource::steps || r == resource::evals || r == resource::calls;
    const double spent = r == resource::seconds ? elapsed : get(spent_, r);
    // Wall time is not summed over actions in flight: they run at the same time.
    const double in_flight = r == resource::seconds ? 0.0 : get(reserved_, r);

    refusal no{r, *limit, spent, get(reserved_, r), asked, {}};
    const std::string name = to_string(r);
    if (r == resource::usd && std::isinf(asked)) {
      no.message = "budget: usd: limit " + amount_text(r, *limit) +
                   ", but no price is configured for this model, so the cost of a call cannot be "
                   "bounded (add [prices.\"<model>\"] to lathe.toml, or remove limits.usd)";
      return tl::unexpected(no);
    }
    bool admitted;
    if (exact) {
      // Integers held in doubles far below 2^53: exact.
      admitted = spent + in_flight + asked <= *limit;
    } else {
      const bool fits = spent + in_flight + asked <= *limit + tolerance(*limit);
      const bool last_call = holders_[i] == 0 && spent < *limit - tolerance(*limit);
      admitted = fits || last_call;
    }
    if (admitted) continue;

    if (r == resource::seconds) {
      no.message = "budget: seconds: limit " + amount_text(r, *limit) + ", " +
                   amount_text(r, spent) + " elapsed" +
                   (spent < *limit ? "; this action may take " + amount_text(r, asked) +
                                         " and others are still running"
                                   : "") +
                   " (raise limits.seconds or --budget seconds=…)";
    } else {
      no.message = "budget: " + name + ": limit " + amount_text(r, *limit) + ", " +
                   amount_text(r, spent) + " spent, " + amount_text(r, get(reserved_, r)) +
                   " reserved by actions in flight; this action needs up to " +
                   amount_text(r, asked) + " (raise limits." + name + " or --budget " + name +
                   "=…)";
    }
    return tl::unexpected(no);
  }

  // Money without a price and without a usd limit: nothing to bound, nothing to book.
  if (std::isinf(worst.usd)) worst.usd = 0;
  reserved_.steps += worst.steps;
  reserved_.evals += worst.evals;
  reserved_.calls += worst.calls;
  reserved_.tokens += worst.tokens;
  reserved_.usd += worst.usd;
  reserved_.seconds += worst.seconds;
  for (int i = 0; i < resource_count; ++i)
    if (get(worst, static_cast<resource>(i)) > 0) ++holders_[i];
  ++actions_;
  return reservation(this, worst);
}

void ledger::unreserve_locked(const amounts& worst) {
  reserved_.steps -= worst.steps;
  reserved_.evals -= worst.evals;
  reserved_.calls -= worst.calls;
  reserved_.tokens -= worst.tokens;
  reserved_.usd -= worst.usd;
  reserved_.seconds -= worst.seconds;
  for (int i = 0; i < resource_count; ++i)
    if (get(worst, static_cast<resource>(i)) > 0) --holders_[i];
  // No residue of floating-point subtraction once nothing holds the resource.
  if (holders_[static_cast<int>(resource::usd)] == 0) reserved_.usd = 0;
  if (holders_[static_cast<int>(resource::seconds)] == 0) reserved_.seconds = 0;
  --actions_;
}

void ledger::commit(reservation&& r, const amounts& used) {
  if (r.owner_ != this)
    throw std::logic_error("budget: commit of a reservation this ledger does not hold");
  check_amounts(used, "used", false);
  const amounts& w = r.worst_;
  auto over = [](const char* what) {
    throw std::logic_error(std::string("budget: an action used more ") + what +
                           " than it reserved; reserve every step, evaluation and call first");
  };
  if (used.steps > w.steps) over("steps");
  if (used.evals > w.evals) over("evaluations");
  if (used.calls > w.calls) over("calls");
  std::lock_guard<std::mutex> lock(mu_);
  unreserve_locked(w);
  spent_.steps += used.steps;
  spent_.evals += used.evals;
  spent_.calls += used.calls;
  spent_.tokens += used.tokens;
  spent_.usd += used.usd;
  r.owner_ = nullptr;
}

void ledger::release(reservation&& r) {
  if (r.owner_ != this)
    throw std::logic_error("budget: release of a reservation this ledger does not hold");
  std::lock_guard<std::mutex> lock(mu_);
  unreserve_locked(r.worst_);
  r.owner_ = nullptr;
}

void ledger::abandon(const amounts& worst) {
  std::lock_guard<std::mutex> lock(mu_);
  unreserve_locked(worst);
  spent_.steps += worst.steps;
  spent_.evals += worst.evals;
  spent_.calls += worst.calls;
  spent_.tokens += worst.tokens;
  spent_.usd += worst.usd;
}

amounts ledger::spent() const {
  std::lock_guard<std::mutex> lock(mu_);
  amounts a = spent_;
  a.seconds = elapsed_locked();
  return a;
}

amounts ledger::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reserved_;
}

int64_t ledger::actions_in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return actions_;
}

}  // namespace lathe::llm

namespace lathe::llm {

namespace {

// A number with an optional unit suffix among `units` (suffix -> multiplier); the whole text.
std::optional<double> number_with(std::string_view v, std::initializer_list<std::pair<char, double>> units) {
  double mult = 1;
  if (!v.empty())
    for (const auto& [c, m] : units)
      if (v.back() == c) {
        mult = m;
        v.remove_suffix(1);
        break;
      }
  if (v.empty()) return std::nullopt;
  std::string s(v);
  char* end = nullptr;
  const double x = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(x) || x < 0) return std::nullopt;
  return x * mult;
}

}  // namespace

tl::expected<budget, std::string> parse_budget(std::string_view text) {
  budget b;
  size_t at = 0;
  while (at < text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    std::string_view item = text.substr(at, comma - at);
    at = comma + 1;
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      return tl::unexpected("budget item '" + std::string(item) + "' is not name=value");
    const std::string_view name = item.substr(0, eq), value = item.substr(eq + 1);
    auto whole = [&](std::initializer_list<std::pair<char, double>> units) -> std::optional<int64_t> {
      auto x = number_with(value, units);
      if (!x || *x != std::floor(*x) || *x > 1e15) return std::nullopt;
      return static_cast<int64_t>(*x);
    };
    auto bad = [&](const char* what) {
      return tl::unexpected("budget item '" + std::string(item) + "': " + what);
    };
    if (name == "steps") {
      auto x = whole({});
      if (!x) return bad("steps is a whole number");
      b.steps = *x;
    } else if (name == "evals") {
      auto x = whole({});
      if (!x) return bad("evals is a whole number");
      b.evals = *x;
    } else if (name == "tokens") {
      auto x = whole({{'k', 1e3}, {'M', 1e6}});
      if (!x) return bad("tokens is a whole number, optionally ending in k or M");
      b.tokens = *x;
    } else if (name == "usd") {
      auto x = number_with(value, {});
      if (!x) return bad("usd is a non-negative number");
      b.usd = *x;
    } else if (name == "time") {
      auto x = number_with(value, {{'s', 1}, {'m', 60}, {'h', 3600}});
      if (!x) return bad("time is seconds, or a number ending in s, m or h");
      b.seconds = *x;
    } else {
      return tl::unexpected("unknown budget item '" + std::string(name) + "' (steps, evals, tokens, usd, time)");
    }
  }
  return b;
}

std::string budget_text(const budget& b) {
  std::string out;
  auto add = [&](const std::string& item) { out += (out.empty() ? "" : ",") + item; };
  if (b.steps) add("steps=" + std::to_string(*b.steps));
  if (b.evals) add("evals=" + std::to_string(*b.evals));
  if (b.tokens) add("tokens=" + std::to_string(*b.tokens));
  char buf[64];
  if (b.usd) {
    std::snprintf(buf, sizeof buf, "usd=%g", *b.usd);
    add(buf);
  }
  if (b.seconds) {
    std::snprintf(buf, sizeof buf, "time=%gs", *b.seconds);
    add(buf);
  }
  return out.empty() ? "none" : out;
}

}  // namespace lathe::llm
