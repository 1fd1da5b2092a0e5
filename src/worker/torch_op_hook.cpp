// liblathe-torch-hook.so: the torch operations a Python candidate runs, seen from below Python.
//
// The Python worker's observer (python/lathe_ops.py) is a dispatch mode in the candidate's own
// interpreter: a kernel that pops it for the length of one call and pushes it back computes with
// torch unseen (tests/problems/python/pops_mode_in_call.py: `ok` on the no-library gemm task).
// This library, loaded by the trusted worker before the candidate's code exists, adds a global
// RecordFunction callback to torch's dispatcher: every operator call that enters the dispatcher,
// from Python under any name, under any dispatch-key guard, or nested inside another op, runs it.
// It writes the name of each compute op (one not in the plumbing list, held here in C++ memory)
// to lathe's record pipe (wire.h record_fd) in the record framing lathe reads
// (gate/cpu/op_record.h): start byte, base name, newline, in one write shorter than PIPE_BUF.
//
// The Python switches that turn such callbacks off (record functions per thread, clearing every
// callback) are removed from the interpreter by the worker before the candidate is imported.
// What stays out of reach: code that never enters the dispatcher (a candidate's own extension
// calling at::cpu:: kernels directly) and writes to this process's memory through ctypes.
#include <ATen/record_function.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_set>

#ifndef LATHE_TORCH_VERSION
#error "LATHE_TORCH_VERSION: the torch version this hook is built against (src/gate/cpu/CMakeLists.txt)"
#endif

namespace {

constexpr char record_start = '\x1e';
constexpr size_t name_cap = 200;  // op_record::name_cap

struct hook_state {
  int fd = -1;
  std::unordered_set<std::string> plumbing;
};
hook_state* state = nullptr;  // set once by lathe_torch_hook_install, never freed

// "mm" for aten::mm, "::ns::op" for another namespace (python/lathe_ops.py base_name).
std::string base_name(std::string_view qual) {
  if (qual.substr(0, 6) == "aten::") {
    qual.remove_prefix(6);
    return std::string(qual.substr(0, qual.find('.')));
  }
  return "::" + std::string(qual);
}

void write_record(std::string_view name) {
  char buf[name_cap + 3];
  size_t n = 0;
  buf[n++] = record_start;
  for (char c : name.substr(0, name_cap)) buf[n++] = (c == record_start || c == '\n') ? '?' : c;
  buf[n++] = '\n';
  while (::write(state->fd, buf, n) < 0 && errno == EINTR) {
  }
}

std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction& fn) {
  // Operator calls only: torch 2 also opens FUNCTION-scope records of its own around them (its
  // Python dispatch mode's handler, "PythonDispatchMode"), which are no op.
  const auto op = fn.operator_name();
  if (state == nullptr || !op || op->name.empty()) return nullptr;
  const std::string name = base_name(op->name);
  if (state->plumbing.count(name) == 0) write_record(name);
  return nullptr;
}

void say(char* err, size_t cap, const std::string& what) {
  if (err != nullptr && cap > 0) std::snprintf(err, cap, "%s", what.c_str());
}

}  // namespace

// The torch version this library was compiled against; the worker refuses to use it with another.
extern "C" __attribute__((visibility("default"))) const char* lathe_torch_hook_version() {
  return LATHE_TORCH_VERSION;
}

// Installs the callback, once per process: `fd` the record pipe, `plumbing` the names of the ops
// that compute nothing, separated by white space. 0, or -1 with the reason in `err`.
extern "C" __attribute__((visibility("default"))) int lathe_torch_hook_install(int fd, const char* plumbing,
                                                                               char* err, size_t cap) {
  if (state != nullptr) return say(err, cap, "the torch op hook is already installed"), -1;
  if (fd < 0 || plumbing == nullptr) return say(err, cap, "no record descriptor or plumbing list"), -1;
  auto* s = new hook_state;
  s->fd = fd;
  std::string_view rest(plumbing);
  while (!rest.empty()) {
    const size_t start = rest.find_first_not_of(" \t\n");
    if (start == std::string_view::npos) break;
    rest.remove_prefix(start);
    const size_t end = std::min(rest.find_first_of(" \t\n"), rest.size());
    s->plumbing.emplace(rest.substr(0, end));
    rest.remove_prefix(end);
  }
  if (s->plumbing.empty()) return delete s, say(err, cap, "an empty plumbing list"), -1;
  try {
    state = s;
    at::addGlobalCallback(at::RecordFunctionCallback(&on_enter).needsInputs(false).scopes(
        {at::RecordScope::FUNCTION}));
  } catch (const std::exception& e) {
    state = nullptr;
    delete s;
    return say(err, cap, std::string("torch refused the callback: ") + e.what()), -1;
  }
  return 0;
}
