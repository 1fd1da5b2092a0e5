// Shared by the worker tests: hostile kernels from tests/worker/kernels/, built with g++ once per
// test run (two at a time), a tensor layout builder and a fixture that starts a worker on one.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gate/cpu/wire.h"
#include "gate/cpu/worker.h"

namespace lathe::test {

// A float32 vector, or a byte buffer.
struct tensor_spec {
  uint8_t code = 2;  // kDLFloat
  uint8_t bits = 32;
  int64_t elements = 0;
};

struct layout {
  wire::command cmd;  // a setup command
  std::vector<uint64_t> offsets;
  uint64_t stride = 0;
  uint64_t region_bytes() const { return cmd.num_slots * stride; }
};

layout make_layout(const std::vector<tensor_spec>& inputs, const std::vector<tensor_spec>& outputs,
                   const std::vector<double>& scalars, uint32_t slots);

// Processes that spin on every CPU `per_cpu` times over while they live (a loaded machine).
class cpu_burners {
 public:
  explicit cpu_burners(uint32_t per_cpu);
  ~cpu_burners();
  cpu_burners(const cpu_burners&) = delete;
  cpu_burners& operator=(const cpu_burners&) = delete;

 private:
  std::vector<int> pids_;
};

struct running {
  gate::shared_region region;
  gate::worker w;
};

class worker_test : public ::testing::Test {
 protected:
  static void SetUpTestSuite();

  // Path of the built kernel, or a test failure with the compiler's log.
  static std::string kernel(const std::string& name);
  // A directory every user may write into (the worker runs as nobody).
  static std::string open_dir();

  // Sandbox options for tests: 2 threads, seccomp on, the real lathe-worker.
  static gate::sandbox_options options();

  // Spawns a worker on the named kernel and loads it (the load reply must be ok unless
  // `expect_load_ok` is false, in which case the load result is stored in `load_result`).
  static running start(const std::string& kernel_name, const gate::sandbox_options& opt,
                       uint64_t region_bytes, bool expect_load_ok = true);
  static gate::worker_result load_result;
};

}  // namespace lathe::test
