// The gate as a script for search/ tests (optimize, evolve): deterministic verdicts from a
// kernel's source features, no build and no timing.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "features/detect.h"
#include "verify/verifier.h"

namespace lathe::search_test {

// The gate as a script: a kernel is correct unless a source says LATHE_BROKEN; a timed
// comparison's ratio is score(candidate) / score(baseline), score the product of the gains of
// the registry names its source shows, times `drift(candidate hash, nth comparison of this
// pair)` (1 by default). No A/A series: the margin is the platform floor (5% on CPU).
class scripted_verifier final : public lineages::verifier {
 public:
  std::map<std::string, double> gains{{"omp_parallel", 2.0}, {"simd", 1.3}, {"restrict", 1.02}};
  std::function<double(const std::string&, int)> drift;
  // The ratio's interval, ratio * (1 -/+ spread); the decision is the gate's rule on it.
  double spread = 0.01;
  // Comparisons asked with provenance detail `away_for` (evolve's contests: "evolve contest")
  // have their ratio multiplied by `away`.
  std::string away_for;
  double away = 1.0;
  // When it says so for (candidate, baseline, nth comparison of the pair), the gate answers
  // `unstable` (too noisy to decide).
  std::function<bool(const std::string&, const std::string&, int)> unstable;
  // When it gives one for (candidate, baseline, nth comparison of the pair), the A/A control's
  // interval: the margin is then the gate's epsilon of it (three times its reach from 1 in log
  // space, at least 0.05), and an A/A reaching past 20% from 1 leaves an interval that does not
  // clear the margin undecided (`unstable`), as gate/paired.h decide does.
  std::function<std::optional<std::pair<double, double>>(const std::string&, const std::string&, int)> aa;
  struct call {
    std::string candidate, baseline;
    bool timed = false;
    std::optional<double> ratio;
  };
  std::vector<call> calls;
  // A timed kernel's median is 1 ms / score; the roofline floor is this.
  double floor_seconds = 2e-4;

  evaluation check(const task& t, const kernel_bundle& k, const kernel_bundle& b, const provenance& p) override {
    return run(t, k, b, p, false);
  }
  evaluation compare(const task& t, const kernel_bundle& k, const kernel_bundle& b, const provenance& p) override {
    return run(t, k, b, p, true);
  }
  agent::rules::detections features(const task&, const kernel_bundle& k) override {
    agent::rules::detections d;
    d.found = agent::rules::detect_source(k);
    return d;
  }
  result<std::filesystem::path> object(const task&, const kernel_bundle&) override {
    return fail(errc::unsupported, "scripted: nothing is built");
  }
  double score(const kernel_bundle& k) const {
    std::set<std::string> names;
    for (const auto& d : agent::rules::detect_source(k)) names.insert(d.what.name);
    double s = 1;
    for (const auto& n : names)
      if (auto it = gains.find(n); it != gains.end()) s *= it->second;
    return s;
  }
  int64_t timed_calls() const {
    return std::count_if(calls.begin(), calls.end(), [](const call& c) { return c.timed; });
  }

 public:
  // With `probe_concurrency`, every call lasts 30 ms and the most calls in progress at once are
  // counted (evolve's batches gate several children at the same time).
  bool probe_concurrency = false;
  std::atomic<int> active{0}, max_active{0};

 private:
  std::mutex mu_;

 private:
  evaluation run(const task& t, const kernel_bundle& k, const kernel_bundle& b, const provenance& p, bool timed) {
    if (probe_concurrency) {
      const int now = ++active;
      int seen = max_active.load();
      while (now > seen && !max_active.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      --active;
    }
    std::lock_guard<std::mutex> g(mu_);
    evaluation e;
    e.id = static_cast<int64_t>(calls.size()) + 1;
    e.task = t.name;
    e.kernel_hash = k.hash;
    e.baseline_hash = b.hash;
    e.prov = p;
    bool broken = false;
    for (const auto& [path, text] : k.sources) broken |= text.find("LATHE_BROKEN") != std::string::npos;
    e.result = broken ? outcome::wrong_result : outcome::ok;
    e.message = broken ? "scripted: wrong result" : "scripted: correct";
    call c{k.hash, b.hash, timed, std::nullopt};
    if (timed && !broken) {
      const int nth = 1 + static_cast<int>(std::count_if(calls.begin(), calls.end(), [&](const call& x) {
                        return x.timed && x.candidate == k.hash && x.baseline == b.hash;
                      }));
      e.paired = paired_series{};
      e.paired->ratio = score(k) / score(b) * (drift ? drift(k.hash, nth) : 1.0) *
                        (!away_for.empty() && p.detail == away_for ? away : 1.0);
      // A tight interval and the gate's decision on it (gate/paired.h decide, the CPU floor 0.05):
      // the rule optimize and evolve accept by.
      e.paired->ci_low = e.paired->ratio * (1 - spread);
      e.paired->ci_high = e.paired->ratio * (1 + spread);
      double eps = 0.05;
      bool noisy = false;
      if (const auto ab = aa ? aa(k.hash, b.hash, nth) : std::nullopt) {
        e.aa = paired_series{};
        e.aa->ratio = 1;
        e.aa->ci_low = ab->first;
        e.aa->ci_high = ab->second;
        eps = std::max(0.05, std::expm1(3 * std::max(std::fabs(std::log(ab->first)), std::fabs(std::log(ab->second)))));
        e.epsilon = eps;
        noisy = std::max(ab->second - 1, 1 - ab->first) > e.policy.aa_unstable;
      }
      e.decision = e.paired->ci_low > 1 + eps      ? decision::faster
                   : e.paired->ci_high < 1 / (1 + eps) ? decision::slower
                   : noisy                            ? decision::undecided
                                                      : decision::same;
      if (e.decision == decision::undecided) e.result = outcome::unstable;
      if (unstable && unstable(k.hash, b.hash, nth)) {
        e.result = outcome::unstable;
        e.decision = decision::undecided;
      }
      e.median_seconds = 1e-3 / score(k);
      e.baseline_median_seconds = 1e-3 / score(b);
      e.roofline_fraction = floor_seconds / *e.median_seconds;
      c.ratio = e.paired->ratio;
    }
    calls.push_back(c);
    return e;
  }
};


}  // namespace lathe::search_test
