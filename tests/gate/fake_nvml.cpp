// A stand-in for libnvidia-ml.so.1 with fixed readings, so that gate/nvml.cpp's loading and
// reading are tested on machines without a driver. Built three ways (tests/gate/CMakeLists.txt):
// FAKE_NVML_EVENT_REASONS adds the newer reasons call (lathe must prefer it);
// FAKE_NVML_NO_DRIVER makes nvmlInit fail, as on a machine without a loaded driver.
#include <cstring>

namespace {
int the_device;  // its address is the one valid handle
constexpr int success = 0, invalid_argument = 2, driver_not_loaded = 9;
bool valid(void* d) { return d == &the_device; }
}  // namespace

extern "C" {

int nvmlInit_v2() {
#ifdef FAKE_NVML_NO_DRIVER
  return driver_not_loaded;
#else
  return success;
#endif
}

int nvmlShutdown() { return success; }

int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** device) {
  if (index != 0) return invalid_argument;
  *device = &the_device;
  return success;
}

int nvmlDeviceGetHandleByUUID(const char* uuid, void** device) {
  if (std::strcmp(uuid, "GPU-0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9") != 0) return invalid_argument;
  *device = &the_device;
  return success;
}

int nvmlDeviceGetClockInfo(void* device, int type, unsigned* mhz) {
  if (!valid(device) || (type != 1 && type != 2)) return invalid_argument;  // SM = 1, MEM = 2
  *mhz = type == 1 ? 1755 : 3201;
  return success;
}

int nvmlDeviceGetTemperature(void* device, int sensor, unsigned* celsius) {
  if (!valid(device) || sensor != 0) return invalid_argument;
  *celsius = 41;
  return success;
}

int nvmlDeviceGetPowerUsage(void* device, unsigned* milliwatts) {
  if (!valid(device)) return invalid_argument;
  *milliwatts = 123456;
  return success;
}

int nvmlDeviceGetCurrentClocksThrottleReasons(void* device, unsigned long long* reasons) {
  if (!valid(device)) return invalid_argument;
  *reasons = 0x1 | 0x4;  // idle, software power cap
  return success;
}

#ifdef FAKE_NVML_EVENT_REASONS
int nvmlDeviceGetCurrentClocksEventReasons(void* device, unsigned long long* reasons) {
  if (!valid(device)) return invalid_argument;
  *reasons = 0x40;  // hardware thermal slowdown
  return success;
}
#endif

}  // extern "C"
