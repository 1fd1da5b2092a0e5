// Clocks, temperature, power and throttle reasons of a GPU, read through NVML loaded at run
// time: lathe links neither NVML nor CUDA, so the same binary runs on machines without a GPU
// (where the library is absent and every read is nullopt, quietly).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/target.h"

namespace lathe::gate {

// One loaded and initialized NVML. Opening costs a dlopen and nvmlInit (tens of milliseconds
// on a machine with many GPUs): a caller reading before and after every timing keeps one.
class nvml_session {
 public:
  // nullptr when the library is missing or NVML does not initialize (no driver, no device).
  static std::unique_ptr<nvml_session> open(const std::string& library = "libnvidia-ml.so.1");
  ~nvml_session();
  nvml_session(const nvml_session&) = delete;
  nvml_session& operator=(const nvml_session&) = delete;

  // nullopt when NVML has no such device. A value NVML cannot read stays 0. NVML numbers
  // devices in PCI order, CUDA fastest first (unless CUDA_DEVICE_ORDER=PCI_BUS_ID): the UUID
  // (target::uuid, as the probe prints it) names the same device in both.
  std::optional<gpu_snapshot> read(unsigned index) const;
  std::optional<gpu_snapshot> read(const std::string& uuid) const;

  struct api;  // the few NVML functions lathe uses (nvml.cpp)

 private:
  struct dl_closer {
    void operator()(void* handle) const;
  };
  nvml_session(std::unique_ptr<void, dl_closer> lib, std::unique_ptr<api> fns);
  std::optional<gpu_snapshot> read_handle(void* device) const;
  std::unique_ptr<void, dl_closer> lib_;
  std::unique_ptr<api> fns_;
};

// Opens NVML, reads one device, closes it.
std::optional<gpu_snapshot> read_gpu_snapshot(unsigned device);
std::optional<gpu_snapshot> read_gpu_snapshot(const std::string& uuid);

// NVML's clocks-event ("throttle") reason bits by name: "gpu_idle", "sw_power_cap",
// "hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake"…, and "0x…" for unknown bits.
std::vector<std::string> throttle_reason_names(uint64_t reasons);

// Whether the reasons hold the clocks below what was asked for by power or heat (not merely an
// idle device or application clocks): a timing taken in that state is slower than the kernel.
bool is_throttled(uint64_t reasons);

}  // namespace lathe::gate
