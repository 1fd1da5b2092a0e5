#include "gate/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "gate/paired.h"

namespace lathe::gate {

result<uint64_t> calibrate(timed_worker& tw, double block_seconds, double timeout_s,
                           worker_result& failure) {
  uint64_t calls = 1;
  // Grow the block until it takes a measurable time (>= 1/8 of the aim), then scale.
  for (;;) {
    worker_result r = tw.w->run(0, tw.rotate, calls, timeout_s);
    if (!r.ok()) {
      failure = r;
      return fail(errc::internal, r.detail);
    }
    if (r.seconds >= block_seconds / 8 || calls >= (uint64_t{1} << 24)) {
      const double per_call = r.seconds / static_cast<double>(calls);
      uint64_t n = static_cast<uint64_t>(std::ceil(block_seconds / std::max(per_call, 1e-9)));
      return std::max<uint64_t>({n, tw.rotate, 1});
    }
    calls *= 8;
  }
}

series_result run_paired(timed_worker& a, timed_worker& b, const timing_policy& p,
                         std::mt19937_64& rng, double timeout_s) {
  series_result out;
  out.series.a_label = a.label;
  out.series.b_label = b.label;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  auto block = [&](timed_worker& tw, std::vector<double>& dst, bool is_a) {
    worker_result r = tw.w->run(0, tw.rotate, tw.calls, timeout_s);
    if (!r.ok()) {
      out.ok = false;
      out.failure = r;
      out.failed_a = is_a;
      return false;
    }
    dst.push_back(r.seconds / static_cast<double>(tw.calls));
    return true;
  };
  // Warm-up: clocks settle and caches fill before anything is kept.
  std::vector<double> discard;
  while (elapsed() < p.warmup_seconds) {
    if (!block(a, discard, true) || !block(b, discard, false)) return out;
  }
  const auto timed_start = std::chrono::steady_clock::now();
  auto timed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - timed_start).count();
  };
  for (;;) {
    const bool a_first = (rng() & 1) != 0;
    out.series.a_first.push_back(a_first);
    bool ok = a_first ? block(a, out.series.a_seconds, true) && block(b, out.series.b_seconds, false)
                      : block(b, out.series.b_seconds, false) && block(a, out.series.a_seconds, true);
    if (!ok) return out;
    const size_t rounds = out.series.a_seconds.size();
    if (rounds >= p.min_rounds && timed() >= p.min_seconds) {
      ratio_estimate e = estimate_ratio(out.series.a_seconds, out.series.b_seconds);
      if (e.rse <= p.target_rse) {
        out.series.stop_reason = "noise";
        break;
      }
    }
    if (timed() >= p.max_seconds && rounds >= 2) {
      out.series.stop_reason = "max_time";
      break;
    }
  }
  ratio_estimate e = estimate_ratio(out.series.a_seconds, out.series.b_seconds);
  out.series.ratio = e.ratio;
  out.series.ci_low = e.ci_low;
  out.series.ci_high = e.ci_high;
  out.series.rse = e.rse;
  return out;
}

}  // namespace lathe::gate
