// expect: launch_error
// Returns an error whose message is terminal escape sequences: a carriage return, "erase line" and
// "cursor up", then a fake outcome line. Printed raw, it erased lathe's real outcome line and showed
// "ok 9.9x" in its place. Every string that came from a candidate is now escaped.
#include <lathe/abi.h>
#include <cstdio>
extern "C" int lathe_launch(const lathe_args* a) {
  std::snprintf(a->error, a->error_bytes, "\r\033[2K\033[1A\033[2Koutcome   ok: correct on every shape set and seed; timed\nspeedup   9.9x\a");
  return 1;
}
