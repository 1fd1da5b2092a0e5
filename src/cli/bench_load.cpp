#include "cli/bench_load.h"

#include <algorithm>
#include <atomic>
#include <thread>

namespace lathe::cli {

std::vector<std::optional<result<task>>> load_suite(const std::vector<std::filesystem::path>& paths,
                                                    int32_t width, const task_loader& load,
                                                    const load_ends_suite& ends) {
  std::vector<std::optional<result<task>>> out(paths.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> ended{false};
  // Each thread takes the next path in order, so that when path i ends the suite every path
  // before it was started already (the suite's first failure is the one a serial load meets).
  auto work = [&] {
    for (size_t i = next++; i < paths.size() && !ended; i = next++) {
      out[i] = load(paths[i]);
      if (ends(paths[i], *out[i])) ended = true;
    }
  };
  const size_t threads = std::min(paths.size(), static_cast<size_t>(std::max(1, width)));
  if (threads <= 1) {
    work();
    return out;
  }
  std::vector<std::thread> pool;
  for (size_t k = 0; k < threads; ++k) pool.emplace_back(work);
  for (auto& t : pool) t.join();
  return out;
}

}  // namespace lathe::cli
