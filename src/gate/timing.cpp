#include <cstdint>
#include "gate/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "gate/paired.h"

namespace lathe::gate {

worker_result run_block(timed_worker& tw, double timeout_s) {
  if (tw.refill)
    if (worker_result f = tw.refill(); !f.ok()) return f;
  wire::command c;
  c.kind = tw.table ? wire::op::run_table : wire::op::run;
  c.first_slot = 0;
  c.rotate = tw.rotate;
  c.calls = tw.before_block ? tw.before_block(tw.calls) : tw.calls;
  c.graph = tw.graph ? 1 : 0;
  c.window = tw.window;
  if (tw.meter) tw.meter->begin();
  worker_result r = tw.w->request(c, timeout_s);
  if (tw.meter) tw.meter->end();
  if (r.ok()) {
    tw.method = !tw.cuda ? timing_method::wall : r.reply.graph_used ? timing_method::graph : timing_method::events;
    tw.last_calls = c.calls;
    tw.last_window = c.window;
    if (tw.advance_windows && !tw.graph)
      tw.window += static_cast<uint32_t>((c.calls + tw.rotate - 1) / std::max<uint32_t>(tw.rotate, 1));
  }
  if (r.ok() && tw.after_block) tw.after_block();
  // Seconds per call come from the calls the block really had (a table caps them).
  if (r.ok() && c.calls != tw.calls && c.calls > 0)
    r.seconds *= static_cast<double>(tw.calls) / static_cast<double>(c.calls);
  return r;
}

bool settling::after_block(double seconds, double spent) {
  const double per = seconds / static_cast<double>(calls);
  // Grow the block until it takes a measurable time (>= 1/8 of the aim).
  if (seconds < block_seconds / 8 && calls < cap_calls) {
    calls = std::min(calls * 8, cap_calls);
    return false;
  }
  // Two measurable blocks in a row that agree, or the cap: the faster of the two, so that a
  // single hiccup (the process descheduled for a few milliseconds) does not set the block
  // length, and for CUDA kernels the choice of graph replay, for the whole series.
  const bool agree = last > 0 && std::abs(per / last - 1.0) <= settle_tolerance;
  if (agree || (last > 0 && spent >= cap_seconds)) {
    per_call = std::min(per, last);
    return true;
  }
  last = per;
  calls = block_calls(per, block_seconds, rotate, cap_calls);
  return false;
}

result<double> settle(timed_worker& tw, double block_seconds, double cap_seconds, double timeout_s,
                      worker_result& failure) {
  settling st{block_seconds, cap_seconds, tw.max_calls ? tw.max_calls : uint64_t{1} << 24, tw.rotate};
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    tw.calls = st.calls;
    worker_result r = run_block(tw, timeout_s);
    if (!r.ok()) {
      failure = r;
      return fail(errc::internal, r.detail);
    }
    const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (st.after_block(r.seconds, spent)) return tw.per_call = st.per_call;
  }
}

uint64_t block_calls(double per_call, double block_seconds, uint32_t rotate, uint64_t cap) {
  const auto n = static_cast<uint64_t>(std::ceil(block_seconds / std::max(per_call, 1e-9)));
  return std::min<uint64_t>(std::max<uint64_t>({n, rotate, 1}), cap);
}

series_result run_paired(std::vector<timed_worker>& a, std::vector<timed_worker>& b,
                         const timing_policy& p, std::mt19937_64& rng, double timeout_s) {
  series_result out;
  out.series.a_label = a.front().label;
  out.series.b_label = b.front().label;
  const size_t pairs = std::min(a.size(), b.size());
  const auto start = std::chrono::steady_clock::now();
  auto since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  auto block = [&](timed_worker& tw, std::vector<double>& dst, bool is_a) {
    worker_result r = run_block(tw, block_timeout(tw, timeout_s));
    if (!r.ok()) {
      out.ok = false;
      out.failure = r;
      out.failed_a = is_a;
      return false;
    }
    // Lathe's clock decides; the worker's events must agree with it. Pipe and synchronization
    // overhead is tens of microseconds on a block of ~20 ms.
    const double dev = r.reply.device_seconds;
    if (tw.cuda && dev > 0 && !r.reply.graph_captured) {
      ++tw.blocks;
      if (r.seconds > 2 * dev + 2e-3) {
        ++tw.outside_blocks;
        if (r.seconds - dev > tw.worst_host - tw.worst_device)
          tw.worst_host = r.seconds, tw.worst_device = dev;
      }
    }
    dst.push_back(r.seconds / static_cast<double>(tw.calls));
    return true;
  };
  // Warm-up: every process runs at least one block, and clocks settle, before anything is kept.
  std::vector<double> discard;
  do {
    for (size_t j = 0; j < pairs; ++j)
      if (!block(a[j], discard, true) || !block(b[j], discard, false)) return out;
  } while (since(start) < p.warmup_seconds);

  const auto timed_start = std::chrono::steady_clock::now();
  auto estimate = [&] {
    return estimate_ratio_grouped(out.series.a_seconds, out.series.b_seconds, out.series.pair);
  };
  for (size_t round = 0;; ++round) {
    const size_t j = round % pairs;
    const bool a_first = (rng() & 1) != 0;
    out.series.a_first.push_back(a_first);
    out.series.pair.push_back(static_cast<uint8_t>(j));
    bool ok = a_first ? block(a[j], out.series.a_seconds, true) &&
                            block(b[j], out.series.b_seconds, false)
                      : block(b[j], out.series.b_seconds, false) &&
                            block(a[j], out.series.a_seconds, true);
    if (!ok) return out;
    const size_t rounds = round + 1;
    // Whole cycles only, so every pair has the same weight when the series stops.
    const bool cycle_done = rounds % pairs == 0;
    if (cycle_done && rounds >= std::max<size_t>(p.min_rounds, 2 * pairs) &&
        since(timed_start) >= p.min_seconds && estimate().rse <= p.target_rse) {
      out.series.stop_reason = "noise";
      break;
    }
    if (cycle_done && since(timed_start) >= p.max_seconds && rounds >= 2 * pairs) {
      out.series.stop_reason = "max_time";
      break;
    }
  }
  // Work hidden outside the timed stream is in every call, so it shows in most blocks; one block
  // that disagrees is the host's doing (the worker descheduled, a page-cache flush), not the
  // kernel's: on the H200 a trusted baseline's block once took 54 ms by lathe's clock and 20 ms
  // on its events, once in a whole series.
  for (auto* side : {&a, &b})
    for (const auto& tw : *side)
      if (out.outside_stream.empty() && tw.outside_blocks >= 3 && 2 * tw.outside_blocks > tw.blocks) {
        char buf[240];
        std::snprintf(buf, sizeof buf,
                      "%s: %u of %u blocks took far longer by lathe's clock than on their stream's "
                      "events (worst %.3g ms against %.3g ms)",
                      tw.label.c_str(), tw.outside_blocks, tw.blocks, tw.worst_host * 1e3,
                      tw.worst_device * 1e3);
        out.outside_stream = buf;
      }
  out.series.a_method = a.front().method;
  out.series.b_method = b.front().method;
  ratio_estimate e = estimate();
  out.series.ratio = e.ratio;
  out.series.ci_low = e.ci_low;
  out.series.ci_high = e.ci_high;
  out.series.rse = e.rse;
  return out;
}

}  // namespace lathe::gate
