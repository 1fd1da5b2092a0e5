// NVML loaded at run time: absent or uninitialized libraries give no reading (quietly), and a
// library that answers (a stand-in, fake_nvml.cpp) gives every field, with the newer
// clocks-event reasons preferred over the older throttle reasons.
#include <gtest/gtest.h>

#include <regex>

#include "gate/host_target.h"
#include "gate/nvml.h"

using namespace lathe;
using namespace lathe::gate;

TEST(nvml, absent_or_uninitialized_library_gives_nothing) {
  EXPECT_EQ(nvml_session::open("/nonexistent/libnvidia-ml.so.1"), nullptr);
  EXPECT_EQ(nvml_session::open(LATHE_FAKE_NVML_NO_DRIVER), nullptr);
  if (!has_cuda_device()) {
    EXPECT_FALSE(read_gpu_snapshot(0u));
    EXPECT_FALSE(read_gpu_snapshot("GPU-0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9"));
  }
}

TEST(nvml, snapshot_reads_every_field) {
  auto nvml = nvml_session::open(LATHE_FAKE_NVML_OLD);
  ASSERT_NE(nvml, nullptr);
  auto s = nvml->read(0u);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->sm_clock_mhz, 1755u);
  EXPECT_EQ(s->mem_clock_mhz, 3201u);
  EXPECT_EQ(s->temperature_c, 41);
  EXPECT_DOUBLE_EQ(s->power_w, 123.456);
  EXPECT_EQ(s->throttle_reasons, 0x5u);  // only the older call exists in this library
  EXPECT_TRUE(std::regex_match(s->time, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)"))) << s->time;
  EXPECT_FALSE(nvml->read(1u));  // no second device
  auto by_uuid = nvml->read(std::string("GPU-0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9"));
  ASSERT_TRUE(by_uuid);
  EXPECT_EQ(by_uuid->sm_clock_mhz, 1755u);
  EXPECT_FALSE(nvml->read(std::string("GPU-someone-else")));
}

TEST(nvml, clocks_event_reasons_are_preferred) {
  auto nvml = nvml_session::open(LATHE_FAKE_NVML_NEW);
  ASSERT_NE(nvml, nullptr);
  auto s = nvml->read(0u);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->throttle_reasons, 0x40u);
}

TEST(nvml, throttle_reasons_by_name) {
  EXPECT_EQ(throttle_reason_names(0), std::vector<std::string>{});
  EXPECT_EQ(throttle_reason_names(0x5), (std::vector<std::string>{"gpu_idle", "sw_power_cap"}));
  EXPECT_EQ(throttle_reason_names(0x40 | 0x1000), (std::vector<std::string>{"hw_thermal", "0x1000"}));
  EXPECT_FALSE(is_throttled(0));
  EXPECT_FALSE(is_throttled(0x1 | 0x2));  // idle, application clocks: not held down
  EXPECT_TRUE(is_throttled(0x4));
  EXPECT_TRUE(is_throttled(0x1 | 0x20));
  EXPECT_TRUE(is_throttled(0x80));
}
