// Returns at once, and a thread aborts the process 100 ms later, between requests.
#include <lathe/abi.h>

#include <chrono>
#include <cstdlib>
#include <thread>

extern "C" int lathe_launch(const lathe_args*) {
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::abort();
  }).detach();
  return 0;
}
