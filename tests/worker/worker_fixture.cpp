#include <cstdint>
#include "worker/worker_fixture.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace lathe::test {

namespace fs = std::filesystem;

namespace {

struct kernel_build {
  std::string source, flags;
  std::string path, log;
  bool ok = false;
};

std::string g_dir;
std::map<std::string, kernel_build> g_kernels;

std::map<std::string, kernel_build> catalogue() {
  std::map<std::string, kernel_build> k;
  auto add = [&](const std::string& name, const std::string& source, const std::string& flags) {
    k[name].source = source;
    k[name].flags = flags;
  };
  for (const char* name :
       {"double", "env_spy", "malloc_null", "touch_memory", "new_until_bad_alloc", "write_file",
        "oob_write", "hang", "abort", "no_launch", "no_tag", "abi_v2", "kernel_error", "init_fail",
        "garbage_reply", "escape", "constructor_fork", "fork_burner", "loopback_send", "cpu_work",
        "sleep_call"})
    add(name, std::string(name) + ".cpp", "");
  add("spin_thread", "spin_thread.cpp", "-pthread");
  add("late_abort", "late_abort.cpp", "-pthread");
  add("openmp", "openmp.cpp", "-fopenmp");
  add("exit0", "exit.cpp", "-DEXIT_CODE=0");
  add("exit3", "exit.cpp", "-DEXIT_CODE=3");
  return k;
}

void build(const std::string& name, kernel_build& k) {
  k.path = g_dir + "/" + name + ".so";
  const std::string log = g_dir + "/" + name + ".log";
  const std::string cmd = "g++ -std=c++17 -O1 -shared -fPIC -I" + LATHE_SOURCE_DIR + "/include " +
                          k.flags + " " + LATHE_SOURCE_DIR + "/tests/worker/kernels/" + k.source +
                          " -o " + k.path + " > " + log + " 2>&1";
  k.ok = std::system(cmd.c_str()) == 0;
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  k.log = cmd + "\n" + ss.str();
}

}  // namespace

gate::worker_result worker_test::load_result;

void worker_test::SetUpTestSuite() {
  if (!g_dir.empty()) return;
  char tmpl[] = "/tmp/lathe-worker-test-XXXXXX";
  if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  g_dir = tmpl;
  chmod(g_dir.c_str(), 0711);  // the worker (nobody) must traverse it to reach open_dir()
  g_kernels = catalogue();
  std::vector<std::pair<const std::string, kernel_build>*> jobs;
  for (auto& kv : g_kernels) jobs.push_back(&kv);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < jobs.size();) build(jobs[i]->first, jobs[i]->second);
  };
  std::thread a(work), b(work);  // the CI machine has two cores
  a.join();
  b.join();
}

// Removes the built kernels once every test has run.
class cleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    if (!g_dir.empty()) fs::remove_all(g_dir, ec);
  }
};
[[maybe_unused]] ::testing::Environment* const g_cleanup =
    ::testing::AddGlobalTestEnvironment(new cleanup);

std::string worker_test::kernel(const std::string& name) {
  auto it = g_kernels.find(name);
  if (it == g_kernels.end()) throw std::runtime_error("no test kernel named " + name);
  if (!it->second.ok)
    throw std::runtime_error("test kernel " + name + " did not build:\n" + it->second.log);
  return it->second.path;
}

std::string worker_test::open_dir() {
  const std::string d = g_dir + "/open";
  fs::create_directories(d);
  chmod(d.c_str(), 0777);
  return d;
}

gate::sandbox_options worker_test::options() {
  gate::sandbox_options o;
  o.worker_exe = LATHE_BINARY_DIR + "/lathe-worker";
  o.threads = 2;
  o.address_space_bytes = uint64_t{4} << 30;
  o.rss_limit_bytes = uint64_t{1} << 30;
  o.cpu_seconds = 30;
  return o;
}

running worker_test::start(const std::string& kernel_name, const gate::sandbox_options& opt,
                           uint64_t region_bytes, bool expect_load_ok) {
  running r;
  auto region = gate::shared_region::create(region_bytes);
  if (!region) throw std::runtime_error("region: " + region.error().message);
  r.region = std::move(*region);
  int fd = open(kernel(kernel_name).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open the kernel object");
  auto w = gate::worker::spawn(opt, r.region, fd);
  close(fd);  // the worker has its own copy
  if (!w) throw std::runtime_error("spawn: " + w.error().message);
  r.w = std::move(*w);
  load_result = r.w.load(10);
  if (expect_load_ok && !load_result.ok())
    throw std::runtime_error(std::string("load: ") + gate::to_string(load_result.end) + " " +
                             load_result.detail);
  return r;
}

layout make_layout(const std::vector<tensor_spec>& inputs, const std::vector<tensor_spec>& outputs,
                   const std::vector<double>& scalars, uint32_t slots) {
  layout l;
  uint64_t at = 0;
  int i = 0;
  auto place = [&](const tensor_spec& t, bool out) {
    wire::tensor_desc& d = l.cmd.tensors[i++];
    d.code = t.code;
    d.bits = t.bits;
    d.ndim = 1;
    d.is_output = out;
    d.shape[0] = t.elements;
    d.bytes = static_cast<uint64_t>(t.elements) * t.bits / 8;
    d.offset = at;
    l.offsets.push_back(at);
    at += (d.bytes + 255) / 256 * 256;
  };
  for (const tensor_spec& t : inputs) place(t, false);
  for (const tensor_spec& t : outputs) place(t, true);
  l.cmd.num_inputs = static_cast<uint32_t>(inputs.size());
  l.cmd.num_outputs = static_cast<uint32_t>(outputs.size());
  l.cmd.num_scalars = static_cast<uint32_t>(scalars.size());
  for (size_t s = 0; s < scalars.size(); ++s) l.cmd.scalars[s] = scalars[s];
  l.cmd.num_slots = slots;
  l.stride = at;
  l.cmd.slot_stride = at;
  l.cmd.workspace_limit = 1 << 20;
  return l;
}

cpu_burners::cpu_burners(uint32_t per_cpu) {
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  for (long i = 0; i < per_cpu * std::max(1L, cpus); ++i) {
    const pid_t pid = fork();
    if (pid == 0)
      for (;;) {
      }
    if (pid > 0) pids_.push_back(pid);
  }
}

cpu_burners::~cpu_burners() {
  for (int pid : pids_) kill(pid, SIGKILL);
  for (int pid : pids_) waitpid(pid, nullptr, 0);
}

}  // namespace lathe::test
