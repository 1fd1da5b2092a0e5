#include "gate/nvml.h"

#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <type_traits>
#include <utility>

namespace lathe::gate {
namespace {

// NVML's C interface as far as lathe uses it, declared here rather than taken from nvml.h, so
// that lathe builds where the header is absent. Values from NVML's public API reference.
using nvml_return = int;  // nvmlReturn_t; 0 = NVML_SUCCESS
using nvml_device = void*;  // nvmlDevice_t, an opaque handle
constexpr nvml_return nvml_success = 0;
constexpr int nvml_clock_sm = 1;        // nvmlClockType_t NVML_CLOCK_SM
constexpr int nvml_clock_mem = 2;       // NVML_CLOCK_MEM
constexpr int nvml_temperature_gpu = 0; // nvmlTemperatureSensors_t NVML_TEMPERATURE_GPU

struct reason_bit {
  uint64_t bit;
  const char* name;
  bool throttles;  // held below the requested clocks by power or heat
};
constexpr reason_bit reason_bits[] = {
    {0x1, "gpu_idle", false},         {0x2, "applications_clocks", false},
    {0x4, "sw_power_cap", true},      {0x8, "hw_slowdown", true},
    {0x10, "sync_boost", false},      {0x20, "sw_thermal", true},
    {0x40, "hw_thermal", true},       {0x80, "hw_power_brake", true},
    {0x100, "display_clocks", false},
};

std::string utc_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(ms));
  return buf;
}

}  // namespace

struct nvml_session::api {
  nvml_return (*init)() = nullptr;
  nvml_return (*shutdown)() = nullptr;
  nvml_return (*handle_by_index)(unsigned, nvml_device*) = nullptr;
  nvml_return (*handle_by_uuid)(const char*, nvml_device*) = nullptr;
  nvml_return (*clock_info)(nvml_device, int, unsigned*) = nullptr;
  nvml_return (*temperature)(nvml_device, int, unsigned*) = nullptr;
  nvml_return (*power_usage)(nvml_device, unsigned*) = nullptr;  // milliwatts
  nvml_return (*event_reasons)(nvml_device, unsigned long long*) = nullptr;
};

void nvml_session::dl_closer::operator()(void* handle) const {
  if (handle) dlclose(handle);
}

nvml_session::nvml_session(std::unique_ptr<void, dl_closer> lib, std::unique_ptr<api> fns)
    : lib_(std::move(lib)), fns_(std::move(fns)) {}

nvml_session::~nvml_session() {
  if (fns_ && fns_->shutdown) fns_->shutdown();
}

std::unique_ptr<nvml_session> nvml_session::open(const std::string& library) {
  std::unique_ptr<void, dl_closer> lib(dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (!lib) return nullptr;
  auto fns = std::make_unique<api>();
  auto sym = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib.get(), name));
  };
  sym(fns->init, "nvmlInit_v2");
  sym(fns->shutdown, "nvmlShutdown");
  sym(fns->handle_by_index, "nvmlDeviceGetHandleByIndex_v2");
  sym(fns->handle_by_uuid, "nvmlDeviceGetHandleByUUID");
  sym(fns->clock_info, "nvmlDeviceGetClockInfo");
  sym(fns->temperature, "nvmlDeviceGetTemperature");
  sym(fns->power_usage, "nvmlDeviceGetPowerUsage");
  // Renamed in CUDA 12.2's NVML ("clocks event reasons"); older drivers have only the old name.
  sym(fns->event_reasons, "nvmlDeviceGetCurrentClocksEventReasons");
  if (!fns->event_reasons) sym(fns->event_reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
  if (!fns->init || !fns->shutdown || !fns->handle_by_index) return nullptr;
  if (fns->init() != nvml_success) return nullptr;
  return std::unique_ptr<nvml_session>(new nvml_session(std::move(lib), std::move(fns)));
}

std::optional<gpu_snapshot> nvml_session::read(unsigned index) const {
  nvml_device dev = nullptr;
  if (fns_->handle_by_index(index, &dev) != nvml_success) return std::nullopt;
  return read_handle(dev);
}

std::optional<gpu_snapshot> nvml_session::read(const std::string& uuid) const {
  nvml_device dev = nullptr;
  if (!fns_->handle_by_uuid || fns_->handle_by_uuid(uuid.c_str(), &dev) != nvml_success)
    return std::nullopt;
  return read_handle(dev);
}

std::optional<gpu_snapshot> nvml_session::read_handle(void* dev) const {
  gpu_snapshot s;
  s.time = utc_now();
  unsigned v = 0;
  if (fns_->clock_info && fns_->clock_info(dev, nvml_clock_sm, &v) == nvml_success) s.sm_clock_mhz = v;
  if (fns_->clock_info && fns_->clock_info(dev, nvml_clock_mem, &v) == nvml_success) s.mem_clock_mhz = v;
  if (fns_->temperature && fns_->temperature(dev, nvml_temperature_gpu, &v) == nvml_success)
    s.temperature_c = static_cast<int32_t>(v);
  if (fns_->power_usage && fns_->power_usage(dev, &v) == nvml_success) s.power_w = v / 1000.0;
  unsigned long long reasons = 0;
  if (fns_->event_reasons && fns_->event_reasons(dev, &reasons) == nvml_success)
    s.throttle_reasons = reasons;
  return s;
}

std::optional<gpu_snapshot> read_gpu_snapshot(unsigned device) {
  auto nvml = nvml_session::open();
  if (!nvml) return std::nullopt;
  return nvml->read(device);
}

std::optional<gpu_snapshot> read_gpu_snapshot(const std::string& uuid) {
  auto nvml = nvml_session::open();
  if (!nvml) return std::nullopt;
  return nvml->read(uuid);
}

std::vector<std::string> throttle_reason_names(uint64_t reasons) {
  std::vector<std::string> names;
  for (const auto& r : reason_bits)
    if (reasons & r.bit) {
      names.push_back(r.name);
      reasons &= ~r.bit;
    }
  if (reasons) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(reasons));
    names.push_back(buf);
  }
  return names;
}

bool is_throttled(uint64_t reasons) {
  for (const auto& r : reason_bits)
    if (r.throttles && (reasons & r.bit)) return true;
  return false;
}

}  // namespace lathe::gate
