// Replies and kernel calls shared by the worker's CPU half (kernel_host.cpp) and its CUDA half
// (device_host.cpp).
#pragma once

#include <cstdarg>
#include <cstdio>
#include <exception>
#include <string>

#include "gate/cpu/wire.h"

namespace lathe::worker {

inline wire::reply answer(wire::status st, int64_t code, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

inline wire::reply answer(wire::status st, int64_t code, const char* fmt, ...) {
  wire::reply r;
  r.st = st;
  r.code = code;
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(r.message, sizeof r.message, fmt, ap);
  va_end(ap);
  return r;
}

// Kernel code may throw through its extern "C" entry points (g++ allows it); an exception is a
// kernel failure with a message, not a reason for the worker to die of std::terminate.
template <class F>
inline bool call_kernel(F&& f, std::string& what) {
  try {
    f();
    return true;
  } catch (const std::exception& e) {
    what = std::string("uncaught exception: ") + e.what();
  } catch (...) {
    what = "uncaught exception of unknown type";
  }
  return false;
}

}  // namespace lathe::worker
