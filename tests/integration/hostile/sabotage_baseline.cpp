// expect: ok no-speedup
// task: mm
// timed
// Slows the baseline it is timed against. A thread started by the first call watches the other
// lathe workers through /proc/<pid>/stat (its own processes renamed themselves) and, whenever one of them is running, starts three
// burners a core; it sleeps otherwise, so the idle checks (which sample when every other worker is
// idle) see nothing. Its own product is honest. Before the candidate's processes were frozen
// whenever they were not being timed, and before other workers were hidden from it, it got `ok`
// at about 2.5x the naive baseline.
#include <lathe/abi.h>
#include <dirent.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>
namespace {
std::atomic<bool> burn{false}, in_call{false};
// The other workers' pids, found by name in /proc (rescanned now and then: a scan costs).
std::vector<std::string> siblings() {
  const std::string self = std::to_string(getpid());
  std::vector<std::string> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9' || self == e->d_name) continue;
    std::ifstream cmd(std::string("/proc/") + e->d_name + "/cmdline");
    std::string name;
    if (std::getline(cmd, name, '\0') && name.find("lathe-worker") != std::string::npos)
      out.push_back(e->d_name);
  }
  closedir(d);
  return out;
}
bool running(const std::vector<std::string>& pids) {
  for (const std::string& p : pids) {
    std::ifstream in("/proc/" + p + "/stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    const size_t at = line.rfind(')');
    // Its own kind (the other candidate processes) renamed themselves: only the others count.
    if (line.find("(lathe-cand)") != std::string::npos) continue;
    if (at != std::string::npos && at + 2 < line.size() && line[at + 2] == 'R') return true;
  }
  return false;
}
std::mutex m;
std::condition_variable cv;
void watch() {
  // Three burners a core: the baseline gets a quarter of its core.
  const unsigned burners = 3 * std::thread::hardware_concurrency();
  for (unsigned c = 0; c < burners; ++c)
    std::thread([] {
      for (;;) {
        {
          std::unique_lock<std::mutex> l(m);
          cv.wait(l, [] { return burn.load() && !in_call.load(); });
        }
        for (volatile int i = 0; i < 20000; i = i + 1) {
        }
      }
    }).detach();
  std::vector<std::string> pids;
  for (int round = 0;; ++round) {
    if (round % 500 == 0) pids = siblings();
    const bool now = running(pids);
    if (now && !burn.load()) {
      burn.store(true);
      cv.notify_all();
    }
    if (!now) burn.store(false);
    usleep(2000);
  }
}
}  // namespace
extern "C" int lathe_launch(const lathe_args* a) {
  static bool started = false;
  if (!started) {
    started = true;
    prctl(PR_SET_NAME, "lathe-cand");
    std::thread(watch).detach();
  }
  in_call.store(true);  // its own calls run unhindered
  const float* x = static_cast<const float*>(a->inputs[0].data);
  const float* y = static_cast<const float*>(a->inputs[1].data);
  float* z = static_cast<float*>(a->outputs[0].data);
  const int64_t n = a->inputs[0].shape[0];
  for (int64_t i = 0; i < n * n; ++i) z[i] = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < n; ++k)
      for (int64_t j = 0; j < n; ++j) z[i * n + j] += x[i * n + k] * y[k * n + j];
  in_call.store(false);
  cv.notify_all();
  return 0;
}
