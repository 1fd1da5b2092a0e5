// The one sandbox for the tools that read or run what a candidate controls (the compiler, a
// ModelNew's record step, load_inline's extension builds and imports): bubblewrap (Debian's
// `bubblewrap`, what Flatpak relies on) rather than namespace code of lathe's own.
//
// What a sandboxed tool gets: its own mount, PID, network, IPC and UTS namespaces (no network at
// all: a loopback of its own, so a listener on the host's 127.0.0.1 is out of reach); a root of
// nothing but the system's trees read-only, a /proc of its own namespace, a minimal /dev, a private
// /tmp, and one writable folder (its working directory); when lathe is root, a user of its own
// (util-linux's setpriv drops to it inside, with no_new_privs), else lathe's user in a user
// namespace; and nothing alive after its step: when the tool exits, bubblewrap's init of the PID
// namespace exits and the kernel kills whatever the tool left behind (a daemonized or setsid()
// process included).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace lathe::gate {

// bubblewrap on this machine: found, and a trial run of it worked. `why` says what is missing
// when it is not usable, in words a user can act on.
struct bubblewrap_tool {
  bool usable = false;
  std::filesystem::path bwrap;    // the binary
  std::filesystem::path setpriv;  // util-linux's, for the user of its own (root only)
  std::string version;            // "bubblewrap 0.8.0"
  std::string why;
};

// Looked up once per process: $LATHE_BWRAP, then `bwrap` in PATH, then /usr/bin/bwrap, then
// deps/usr/bin/bwrap beside the lathe binary's checkout (the GPU machine unpacks it there); each
// tried with a real sandbox around /bin/true, since a kernel or a security module may forbid
// the namespaces it needs.
const bubblewrap_tool& find_bubblewrap();

struct sandbox_spec {
  std::vector<std::filesystem::path> read_trees;  // bound read-only at the same paths
  // Files bound read-only at another path (source, where the tool sees it): a problem's copy
  // at the problem's own path.
  std::vector<std::pair<std::filesystem::path, std::filesystem::path>> read_files;
  std::filesystem::path work;                     // bound writable, and the working directory
  std::vector<std::pair<std::string, std::string>> env;  // the tool's whole environment
  uid_t uid = 0;  // when lathe is root: the user of its own the tool runs as (0: stay root)
  // A process on the GPU (a CUDA problem's oracle): the PID and IPC namespaces stay the host's
  // (CUDA IPC between it and the kernels' workers), and it gets the NVIDIA device nodes,
  // /dev/shm and /sys read-only. Never run on a GPU as of 2026-12-07.
  bool gpu = false;
};

// The trees an interpreter reads: as named (a virtual environment, which holds its packages) and
// as resolved (its base's binary), two folders up from each.
std::vector<std::filesystem::path> interpreter_trees(const std::filesystem::path& interpreter);

// The command line that runs `command` (argv[0] an absolute path) in the sandbox.
std::vector<std::string> sandbox_command(const bubblewrap_tool& bw, const sandbox_spec& spec,
                                         const std::vector<std::string>& command);

// How a tool was confined, for its log ("bubblewrap 0.8.0: …").
std::string sandbox_summary(const bubblewrap_tool& bw, const sandbox_spec& spec);

}  // namespace lathe::gate
