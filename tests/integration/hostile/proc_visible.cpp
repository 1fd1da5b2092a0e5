// expect: ok
// Looks for other processes in /proc (lathe, the baseline's workers, anyone) and spoils its
// output when it finds one it can read: a kernel that can see its neighbours can watch them
// (sabotage_baseline.cpp). Before each worker was given a /proc of its own (or a Landlock
// domain without the others' entries), it always found lathe and got `wrong_result`.
#include <lathe/abi.h>
#include <dirent.h>
#include <unistd.h>
#include <cstdint>
#include <fstream>
#include <string>
namespace {
bool sees_another() {
  const std::string self = std::to_string(getpid());
  DIR* d = opendir("/proc");
  if (!d) return false;
  bool found = false;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9' || self == e->d_name) continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/stat");
    std::string line;
    if (std::getline(in, line) && !line.empty()) found = true;
  }
  closedir(d);
  return found;
}
}  // namespace
extern "C" int lathe_launch(const lathe_args* a) {
  const float* x = static_cast<const float*>(a->inputs[0].data);
  const float* y = static_cast<const float*>(a->inputs[1].data);
  float* z = static_cast<float*>(a->outputs[0].data);
  const int64_t n = a->inputs[0].shape[0];
  const float spoil = sees_another() ? 1.0f : 0.0f;
  for (int64_t i = 0; i < n; ++i) z[i] = static_cast<float>(a->scalars[0]) * x[i] + y[i] + spoil;
  return 0;
}
