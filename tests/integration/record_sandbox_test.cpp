// A ModelNew's record step runs the candidate's own Python at build time (gate/python_build.h).
// Tried as a determined user would (issue 42, item 3), it reached a listener on the host's
// 127.0.0.1 and left two spinning processes that outlived lathe. Each candidate here is otherwise
// a correct ModelNew for kb_linear_gelu.py, so the evaluation passes; what is asserted is what
// its import-time code reached. Checks only, nothing timed (`unit`).
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/outcome.h"
#include "gate/cpu/bubblewrap.h"
#include "proc_scan.h"
#include "gate_fixture.h"

namespace fs = std::filesystem;

namespace lathe::testing {
namespace {

// A correct ModelNew whose import first runs `prelude` where the record step runs it (its build
// folder holds lathe's lathe_ext.py); not in the worker, whose seccomp filter would end it.
std::string candidate(const std::string& prelude) {
  return "import os\nimport torch\nimport torch.nn as nn\n\nif os.path.exists('lathe_ext.py'):\n" + prelude +
         "\n\nclass ModelNew(nn.Module):\n"
         "    def __init__(self, in_features, out_features):\n        super().__init__()\n"
         "        self.fc = nn.Linear(in_features, out_features)\n\n"
         "    def forward(self, x):\n        return torch.nn.functional.gelu(self.fc(x))\n";
}

class record_sandbox : public gate_env {
 protected:
  evaluation check(const fs::path& file) {
    const task t = load(source_dir() / "tests/problems/kb_linear_gelu.py");
    gate::gate_config cfg = cfg_;
    cfg.time = false;
    cfg.call_timeout_s = 10;  // torch's first calls
    gate::gate_request req;
    req.t = &t;
    req.candidate = kernel(file);
    req.prov = {"human", "test", false};
    return gate::evaluate(cfg, req);
  }
};

TEST_F(record_sandbox, the_record_step_reaches_no_listener_on_the_hosts_loopback) {
  if (!gate::find_bubblewrap().usable) GTEST_SKIP() << gate::find_bubblewrap().why;
  const int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(s, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(getsockname(s, reinterpret_cast<sockaddr*>(&a), &len), 0);
  ASSERT_EQ(listen(s, 4), 0);
  const fs::path file = dir_ / "phone_home.py";
  // connect_ex: a refused connection is a number, not an exception, so the candidate goes on.
  std::ofstream(file) << candidate("    import socket\n    c = socket.socket()\n    if c.connect_ex(('127.0.0.1', " +
                                   std::to_string(ntohs(a.sin_port)) + ")) == 0:\n"
                                   "        c.sendall(b'from the record step\\n')\n    c.close()\n");
  const evaluation e = check(file);
  EXPECT_EQ(e.result, outcome::ok) << e.message << "\n" << e.diagnostics;
  pollfd p{s, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 100), 0) << "the candidate's import reached the host's listener";
  close(s);
}

TEST_F(record_sandbox, the_record_step_leaves_no_process_behind) {
  if (!gate::find_bubblewrap().usable) GTEST_SKIP() << gate::find_bubblewrap().why;
  const std::string marker = "lathe-record-spinner-" + std::to_string(getpid());
  const fs::path file = dir_ / "spinner.py";
  std::ofstream(file) << candidate("    import subprocess\n    for _ in range(2):\n"
                                   "        subprocess.Popen(['/bin/bash', '-c', 'exec -a " + marker +
                                   " /bin/bash -c \"while :; do :; done\"'], start_new_session=True)\n");
  const evaluation e = check(file);
  EXPECT_EQ(e.result, outcome::ok) << e.message << "\n" << e.diagnostics;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(processes_with(marker), 0) << "a process the candidate started at build time is still running";
}

TEST_F(record_sandbox, the_build_log_says_the_step_ran_in_the_sandbox) {
  if (!gate::find_bubblewrap().usable) GTEST_SKIP() << gate::find_bubblewrap().why;
  const evaluation e = check(source_dir() / "tests/problems/modelnew/linear_gelu_torch.py");
  EXPECT_EQ(e.result, outcome::ok) << e.message << "\n" << e.diagnostics;
  EXPECT_NE(e.diagnostics.find("no network"), std::string::npos) << e.diagnostics;
}

}  // namespace
}  // namespace lathe::testing
