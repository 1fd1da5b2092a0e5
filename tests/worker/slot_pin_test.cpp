// A worker on a CPU slot (gate/cpu_slot.h) is pinned to the slot's cores before exec: its
// affinity, read from /proc by lathe's side, is exactly the slot's cores, and its threads
// setting is the slot's core count. Nothing is timed.
#include <fstream>
#include <sstream>
#include <string>

#include "gate/cpu_slot.h"
#include "worker/worker_fixture.h"

namespace lathe::test {
namespace {

std::string status_field(pid_t pid, const std::string& name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(name + ":", 0) == 0) {
      std::string v = line.substr(name.size() + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  return "";
}

std::string environ_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string list(const std::vector<uint32_t>& cores) {
  std::string s;
  for (uint32_t c : cores) s += (s.empty() ? "" : ",") + std::to_string(c);
  return s;
}

// The kernel's list form (/proc "0-1" for 0,1): expanded to commas.
std::string expand(const std::string& l) {
  std::string out;
  std::stringstream in(l);
  for (std::string part; std::getline(in, part, ',');) {
    const auto dash = part.find('-');
    const uint32_t a = static_cast<uint32_t>(std::stoul(part.substr(0, dash)));
    const uint32_t b = dash == std::string::npos ? a : static_cast<uint32_t>(std::stoul(part.substr(dash + 1)));
    for (uint32_t c = a; c <= b; ++c) out += (out.empty() ? "" : ",") + std::to_string(c);
  }
  return out;
}

TEST_F(worker_test, a_worker_on_a_slot_runs_on_its_cores_only) {
  const auto cores = gate::allowed_cores();
  auto slots = gate::split_cores(cores, static_cast<uint32_t>(cores.size() > 1 ? 2 : 1));
  ASSERT_TRUE(slots) << slots.error().message;
  for (const gate::cpu_slot& s : *slots) {
    gate::sandbox_options o = options();
    o.cores = s.cores;
    o.threads = static_cast<uint32_t>(s.cores.size());
    layout l = make_layout({{2, 32, 100}}, {{2, 32, 100}}, {2.0}, 1);
    running r = start("double", o, l.region_bytes());
    EXPECT_EQ(expand(status_field(r.w.pid(), "Cpus_allowed_list")), list(s.cores))
        << "slot " << s.index << ": the worker's affinity is not its slot's cores";
    const std::string env = environ_of(r.w.pid());
    EXPECT_NE(env.find("OMP_NUM_THREADS=" + std::to_string(s.cores.size()) + '\0'), std::string::npos)
        << "slot " << s.index << ": threads are not the slot's core count";
  }
  // Without a slot: lathe's own mask, as before.
  running whole = start("double", options(), make_layout({{2, 32, 100}}, {{2, 32, 100}}, {2.0}, 1).region_bytes());
  EXPECT_EQ(expand(status_field(whole.w.pid(), "Cpus_allowed_list")), list(cores));
}

}  // namespace
}  // namespace lathe::test
