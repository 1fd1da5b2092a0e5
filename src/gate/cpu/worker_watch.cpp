// What lathe watches in a worker between requests: its CPU time and demand while idle (the idle
// check), its threads and its mappings (gate/cpu/worker.h).
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gate/cpu/worker.h"
#include "gate/cpu/worker_end.h"

namespace lathe::gate {

using namespace detail;

double worker::idle_cpu_seconds(double window_s) const {
  if (!alive()) return 0;
  long long before = cpu_ticks(pid_);
  std::this_thread::sleep_for(std::chrono::duration<double>(std::max(0.0, window_s)));
  long long after = cpu_ticks(pid_);
  if (before < 0 || after < before) return 0;
  return static_cast<double>(after - before) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double worker::idle_demand_seconds(double window_s) const {
  if (!alive()) return 0;
  const auto before = thread_schedstat(pid_);
  if (before.empty()) return -1;
  std::this_thread::sleep_for(std::chrono::duration<double>(std::max(0.0, window_s)));
  unsigned long long total = 0;
  for (const thread_sched& d : thread_sched_since(before, thread_schedstat(pid_))) total += d.run_ns + d.wait_ns;
  return static_cast<double>(total) * 1e-9;
}

std::vector<std::string> worker::mapped_files(bool& readable) const {
  std::vector<std::string> out;
  readable = false;
  if (!alive()) return out;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/maps", static_cast<int>(pid_));
  FILE* f = std::fopen(path, "re");
  if (!f) return out;
  char line[4096];
  while (std::fgets(line, sizeof line, f)) {
    readable = true;
    const char* slash = std::strchr(line, '/');
    if (!slash) continue;
    std::string file(slash);
    while (!file.empty() && (file.back() == '\n' || file.back() == ' ')) file.pop_back();
    if (std::find(out.begin(), out.end(), file) == out.end()) out.push_back(file);
  }
  std::fclose(f);
  return out;
}

int worker::thread_count() const {
  if (!alive()) return 0;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/task", static_cast<int>(pid_));
  DIR* dir = opendir(path);
  if (!dir) return 0;
  int n = 0;
  while (dirent* e = readdir(dir))
    if (e->d_name[0] != '.') ++n;
  closedir(dir);
  return n;
}

}  // namespace lathe::gate
