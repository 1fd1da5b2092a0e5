// axpy that fails unless it runs on exactly the cores SLOT_CORES names ("0,1"; the test writes the
// define above this file's text, since the screen refuses getenv): a worker of any side
// (candidate, baseline, A/A copy) started off its evaluation's slot makes the evaluation fail
// (tests/integration/slot_test.cpp).
#include <lathe/abi.h>
#include <sched.h>

#include <cstdio>
#include <string>

namespace {

bool on_slot(char* error, size_t error_bytes) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return false;
  std::string have;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) have += (have.empty() ? "" : ",") + std::to_string(c);
  if (have != SLOT_CORES) {
    std::snprintf(error, error_bytes, "off its slot: cores %s (want %s)", have.c_str(), SLOT_CORES);
    return false;
  }
  return true;
}

}  // namespace

extern "C" int lathe_launch(const lathe_args* a) {
  if (!on_slot(a->error, a->error_bytes)) return 1;
  const float* x = static_cast<const float*>(a->inputs[0].data);
  const float* y = static_cast<const float*>(a->inputs[1].data);
  float* z = static_cast<float*>(a->outputs[0].data);
  const float s = static_cast<float>(a->scalars[0]);
  const int64_t n = a->inputs[0].shape[0];
  for (int64_t i = 0; i < n; ++i) z[i] = s * x[i] + y[i];
  return 0;
}
