#include "spec/problem.h"
#include "core/build_paths.h"
#include "core/enum_parse.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "core/dtype.h"
#include "core/hash.h"
#include "spec/problem_launch.h"
#include "spec/safe_file.h"

namespace fs = std::filesystem;

namespace lathe::gate {
namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

std::vector<fs::path> python_interpreters() {
  if (const char* p = std::getenv("LATHE_PYTHON"); p && *p) return {p};
  std::vector<fs::path> out;
  std::error_code ec;
  if (const char* path = std::getenv("PATH")) {
    std::string s = path;
    for (size_t i = 0; i <= s.size();) {
      const size_t j = std::min(s.find(':', i), s.size());
      const fs::path c = fs::path(s.substr(i, j - i)) / "python3";
      if (j > i && fs::exists(c, ec)) {
        out.push_back(c);
        break;
      }
      i = j + 1;
    }
  }
  if (fs::exists("/usr/bin/python3", ec) && (out.empty() || out.front() != "/usr/bin/python3"))
    out.push_back("/usr/bin/python3");
  return out;
}

fs::path python_script(const char* name, const char* override_var) {
  if (const char* p = std::getenv(override_var); p && *p) return p;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec).parent_path();
  for (const fs::path& c : {exe / "../share/lathe/python" / name, fs::path(build_paths::source_dir()) / "python" / name})
    if (fs::exists(c, ec)) return fs::weakly_canonical(c, ec);
  return fs::path(build_paths::source_dir()) / "python" / name;
}

fs::path problem_worker_script() { return python_script("lathe_problem.py", "LATHE_PROBLEM_WORKER"); }

bool is_problem_file(const fs::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".py" || ext == ".json";
}

result<std::unique_ptr<problem_oracle>> problem_oracle::start(const fs::path& python,
                                                               const fs::path& problem,
                                                               platform p) {
  static const bool pipes_ignored = [] {
    std::signal(SIGPIPE, SIG_IGN);  // a worker that died closes its stdin: an error, not a signal
    return true;
  }();
  (void)pipes_ignored;
  std::unique_ptr<problem_oracle> o(new problem_oracle());
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  auto close_all = [&] {
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]})
      if (fd >= 0) close(fd);
  };
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    close_all();
    return fail(errc::io_error, "pipe: " + std::string(std::strerror(errno)));
  }
  o->mem_ = memfd_create("lathe-problem", MFD_CLOEXEC);
  if (o->mem_ < 0) {
    close_all();
    return fail(errc::io_error, "memfd_create: " + std::string(std::strerror(errno)));
  }
  // Descriptors 3-6 of the process (python/lathe_problem.py --fds).
  const int fds[4] = {o->mem_, in[0], out[1], err[1]};
  auto launched = launch_oracle(python, problem, p, fds);
  close(in[0]);
  close(out[1]);
  close(err[1]);
  if (!launched) {
    for (int fd : {in[1], out[0], err[0]}) close(fd);
    return tl::unexpected(launched.error());
  }
  o->pid_ = launched->pid;
  o->folder_ = launched->folder;
  o->sandbox_ = launched->sandbox;
  o->to_ = in[1];
  o->from_ = out[0];
  o->err_ = err[0];
  return o;
}

void problem_oracle::ask_to_quit() {
  if (to_ < 0) return;
  const char quit[] = "{\"op\":\"quit\"}\n";
  (void)!write(to_, quit, sizeof quit - 1);
  close(to_);
  to_ = -1;
}

problem_oracle::~problem_oracle() {
  ask_to_quit();
  if (pid_ > 0) {
    int status = 0;
    for (int i = 0; i < 50 && waitpid(pid_, &status, WNOHANG) == 0; ++i) usleep(10000);
    if (waitpid(pid_, &status, WNOHANG) == 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
    }
  }
  for (int fd : {from_, err_, mem_})
    if (fd >= 0) close(fd);
  if (map_) munmap(map_, map_bytes_);
  remove_oracle_folder(folder_);
}

std::string problem_oracle::stderr_tail() const {
  const size_t keep = 2000;
  return errors_.size() > keep ? errors_.substr(errors_.size() - keep) : errors_;
}

result<std::string> problem_oracle::read_line(double timeout_s) {
  const double deadline = now() + timeout_s;
  char buf[65536];
  for (;;) {
    if (const size_t nl = pending_.find('\n'); nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return line;
    }
    const double left = deadline - now();
    if (left <= 0) {
      kill(pid_, SIGKILL);
      return fail(errc::io_error, "the problem worker did not answer within " +
                                     std::to_string(static_cast<int>(timeout_s)) + " s");
    }
    pollfd p[2] = {{from_, POLLIN, 0}, {err_, POLLIN, 0}};
    const int n = poll(p, err_ >= 0 ? 2 : 1, static_cast<int>(std::min(left, 1.0) * 1000) + 1);
    if (n < 0 && errno != EINTR) return fail(errc::io_error, std::string("poll: ") + std::strerror(errno));
    if (err_ >= 0 && (p[1].revents & (POLLIN | POLLHUP))) {
      const ssize_t k = read(err_, buf, sizeof buf);
      if (k > 0) {
        errors_.append(buf, static_cast<size_t>(k));
        if (errors_.size() > (1u << 16)) errors_.erase(0, errors_.size() - (1u << 15));
      } else if (k == 0) {
        close(err_);
        err_ = -1;
      }
    }
    if (p[0].revents & (POLLIN | POLLHUP)) {
      const ssize_t k = read(from_, buf, sizeof buf);
      if (k > 0) {
        pending_.append(buf, static_cast<size_t>(k));
      } else if (k == 0) {
        return fail(errc::io_error, "the problem worker exited" +
                                        (errors_.empty() ? std::string() : ": " + stderr_tail()));
      }
    }
  }
}

result<nlohmann::json> problem_oracle::request(const nlohmann::json& req, double timeout_s) {
  const std::string line = req.dump() + "\n";
  for (size_t off = 0; off < line.size();) {
    const ssize_t k = write(to_, line.data() + off, line.size() - off);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0)
      return fail(errc::io_error, "the problem worker is gone" +
                                      (errors_.empty() ? std::string() : ": " + stderr_tail()));
    off += static_cast<size_t>(k);
  }
  auto reply_line = read_line(timeout_s);
  if (!reply_line) return tl::unexpected(reply_line.error());
  nlohmann::json reply = nlohmann::json::parse(*reply_line, nullptr, false);
  if (reply.is_discarded() || !reply.is_object())
    return fail(errc::parse_error, "the problem worker answered something else: " + reply_line->substr(0, 200));
  if (!reply.value("ok", false))
    return fail(errc::invalid_argument,
                reply.value("message", std::string("the problem failed")) +
                    (reply.contains("trace") ? "\n" + reply["trace"].get<std::string>() : ""));
  return reply;
}

bool problem_oracle::alive() {
  if (pid_ <= 0) return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) != pid_) return true;
  pid_ = -1;  // reaped
  return false;
}

result<uint8_t*> problem_oracle::region(uint64_t bytes) {
  bytes = std::max<uint64_t>(bytes, 4096);
  if (bytes <= map_bytes_) return map_;
  if (map_) munmap(map_, map_bytes_), map_ = nullptr, map_bytes_ = 0;
  if (ftruncate(mem_, static_cast<off_t>(bytes)) != 0)
    return fail(errc::io_error, "the shared region: " + std::string(std::strerror(errno)));
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, mem_, 0);
  if (m == MAP_FAILED) return fail(errc::io_error, "mmap: " + std::string(std::strerror(errno)));
  map_ = static_cast<uint8_t*>(m);
  map_bytes_ = bytes;
  return map_;
}

result<std::shared_ptr<problem_oracle>> problem_oracle::start_first(const fs::path& problem, platform p) {
  // Interpreters that answered no_torch, not started again for each problem: a pyenv shim first on
  // PATH costs 0.9 s to say so (the 2-core VM), 17 s of a 19-problem suite's load
  // (bench/results/in-flight-2026-12-07b.md).
  static std::mutex no_torch_mu;
  static std::set<std::string> no_torch;
  auto known_without = [&](const fs::path& python) {
    std::lock_guard<std::mutex> g(no_torch_mu);
    return no_torch.count(python.string()) > 0;
  };
  std::string tried;
  for (const fs::path& python : python_interpreters()) {
    if (known_without(python)) {
      tried += (tried.empty() ? "" : ", ") + python.string();
      continue;
    }
    // An interpreter that cannot start or ends before its first reply (not runnable by the
    // oracle's own user, a pyenv shim that needs more than the sandbox holds) is passed over as
    // one without torch is, with the reason; a problem that fails to import answers instead.
    auto o = start(python, problem, p);
    if (!o) {
      tried += (tried.empty() ? "" : ", ") + python.string() + " (" + o.error().message + ")";
      continue;
    }
    auto ready = (*o)->read_line(600);
    if (!ready && ready.error().message.find("exited") != std::string::npos) {
      tried += (tried.empty() ? "" : ", ") + python.string() + " (" + ready.error().message.substr(0, 300) + ")";
      continue;
    }
    if (!ready) return fail(ready.error().code, problem.string() + ": " + ready.error().message);
    nlohmann::json r = nlohmann::json::parse(*ready, nullptr, false);
    if (r.is_object() && r.value("error", "") == "no_torch") {
      {
        std::lock_guard<std::mutex> g(no_torch_mu);
        no_torch.insert(python.string());
      }
      tried += (tried.empty() ? "" : ", ") + python.string();
      continue;
    }
    if (!r.is_object() || !r.value("ok", false))
      return fail(errc::invalid_argument,
                  problem.string() + ": " +
                      (r.is_object() ? r.value("message", std::string("cannot import")) +
                                           (r.contains("trace") ? "\n" + r["trace"].get<std::string>() : "")
                                     : ready->substr(0, 300)));
    auto d = (*o)->request({{"op", "describe"}});
    if (!d) return fail(d.error().code, problem.string() + ": " + d.error().message);
    (*o)->description_ = *d;
    std::string rt = "torch " + d->value("torch", std::string("?"));
    if (d->contains("cuda") && (*d)["cuda"].is_string()) rt += " (cuda " + (*d)["cuda"].get<std::string>() + ", ";
    else rt += " (cpu, ";
    rt += "python " + d->value("python", std::string("?")) + ")";
    (*o)->runtime_ = rt;
    return std::shared_ptr<problem_oracle>(std::move(*o));
  }
  return fail(errc::unsupported,
              "no Python with torch: tried " + (tried.empty() ? std::string("none found") : tried) +
                  " (set LATHE_PYTHON; on Debian: apt-get install python3-torch)");
}

result<std::shared_ptr<problem_oracle>> problem_oracle::shared(const fs::path& problem, platform p) {
  // The map behind `mu`, held for lookups only; a start (an import of torch and the problem, seconds)
  // holds that problem's own lock, so that evaluations of other problems (bench --in-flight,
  // solve --jobs) start theirs at the same time while a second evaluation of the same problem waits
  // for the first one's oracle instead of starting another.
  // At exit every worker is asked to quit before the first one is waited for: each takes ~0.45 s
  // to end (torch's teardown), 6-7 s of a 19-problem suite's wall one after another
  // (bench/results/in-flight-2026-12-07b.md).
  struct registry {
    std::map<std::pair<std::string, int>, std::shared_ptr<problem_oracle>> oracles;
    std::map<std::pair<std::string, int>, std::shared_ptr<std::mutex>> starting;
    ~registry() {
      for (auto& [key, o] : oracles) o->ask_to_quit();
    }
  };
  static std::mutex mu;
  static registry reg;
  auto& oracles = reg.oracles;
  auto& starting = reg.starting;
  std::error_code ec;
  const std::pair<std::string, int> key{fs::weakly_canonical(problem, ec).string(), static_cast<int>(p)};
  auto alive_one = [&]() -> std::shared_ptr<problem_oracle> {  // with `mu` held
    auto it = oracles.find(key);
    if (it == oracles.end()) return nullptr;
    std::shared_ptr<problem_oracle> o = it->second;
    bool alive = true;  // a request in flight (the lock taken) is not a death
    if (std::unique_lock<std::mutex> idle(o->lock(), std::try_to_lock); idle.owns_lock()) alive = o->alive();
    if (alive) return o;
    oracles.erase(it);  // evaluations that hold it keep it until they end
    return nullptr;
  };
  std::shared_ptr<std::mutex> own;
  {
    std::lock_guard<std::mutex> g(mu);
    if (auto o = alive_one()) return o;
    auto& slot = starting[key];
    if (!slot) slot = std::make_shared<std::mutex>();
    own = slot;
  }
  std::lock_guard<std::mutex> one_start(*own);
  {
    std::lock_guard<std::mutex> g(mu);
    if (auto o = alive_one()) return o;  // started by the evaluation this one waited for
  }
  if (!fs::is_regular_file(problem, ec)) return fail(errc::not_found, problem.string() + ": no such problem file");
  auto started = start_first(problem, p);
  if (!started) return started;
  std::lock_guard<std::mutex> g(mu);
  oracles[key] = *started;
  return started;
}

result<task> import_problem(const fs::path& file, platform p) {
  auto o = problem_oracle::shared(file, p);
  if (!o) return tl::unexpected(o.error());
  const nlohmann::json& d = (*o)->description();
  std::error_code ec;
  task t;
  const fs::path abs = fs::weakly_canonical(file, ec);
  t.name = abs.stem().string();
  t.op = t.name;
  t.plat = p;
  t.role = task_role::source;
  t.dir = abs.parent_path();
  t.baseline.clear();  // eager PyTorch: no ABI kernel to pair with
  t.problem = abs;
  const std::string format = d.value("format", std::string());
  const auto f = parse_enum(format, problem_format::klineage_definition);
  if (!f)
    return fail(errc::unsupported, file.string() + ": problem format '" + format +
                                       "' is not one lathe reads (kernelbench, klineage, klineage-definition)");
  t.problem_format = *f;
  t.problem_runtime = (*o)->runtime();
  if (d.contains("model")) t.problem_model = d["model"].dump();
  t.description = std::string(to_string(*f)) + " problem " + abs.filename().string() + " (" + t.problem_runtime + ")";
  shape_set s;
  s.name = "problem";
  s.time = true;
  uint64_t bytes = 0;
  auto tensor = [&](const nlohmann::json& j) -> result<tensor_spec> {
    tensor_spec spec;
    spec.name = j.at("name").get<std::string>();
    auto dt = parse_dtype(j.at("dtype").get<std::string>());
    if (!dt) return fail(errc::unsupported, spec.name + ": dtype " + j.at("dtype").dump() + " is not one lathe speaks");
    spec.type = *dt;
    uint64_t n = 1;
    for (const auto& x : j.at("shape")) {
      dim dm;
      dm.value = x.get<int64_t>();
      spec.shape.push_back(dm);
      n *= static_cast<uint64_t>(dm.value);
    }
    bytes += n * size_of(spec.type);
    spec.dist.kind = distribution_kind::constant;  // drawn by the problem, not by lathe
    return spec;
  };
  for (const auto& j : d.at("inputs")) {
    auto spec = tensor(j);
    if (!spec) return tl::unexpected(spec.error());
    t.inputs.push_back(*spec);
  }
  for (const auto& j : d.at("outputs")) {
    auto spec = tensor(j);
    if (!spec) return tl::unexpected(spec.error());
    t.outputs.push_back(*spec);
  }
  if (t.outputs.empty()) return fail(errc::invalid_argument, file.string() + ": the problem has no outputs");
  for (const auto& j : d.at("scalars")) t.scalars.push_back({j.at("name").get<std::string>(), j.at("value").get<double>()});
  if (d.contains("perturbations")) {
    for (const auto& v : d["perturbations"].value("scale", nlohmann::json::array())) t.perturb.scale.push_back(v.get<double>());
    for (const auto& v : d["perturbations"].value("shift", nlohmann::json::array())) t.perturb.shift.push_back(v.get<double>());
  }
  // Tolerances: the dtype's defaults (gate/check.cpp tolerance_for), but the absolute one scaled
  // to the outputs' magnitude: a reduction's rounding is relative to what it sums, not to each
  // result, and an imported problem says nothing about its structure. A problem's own
  // LATHE_TOLERANCE (or a wrapper's [comparison]) wins.
  const double rms = d.value("output_rms", 0.0);
  double rtol = 0, atol = 0;
  for (const auto& o : t.outputs) {
    if (o.type == dtype::f32) rtol = std::max(rtol, 1e-4), atol = std::max(atol, 1e-5);
    if (o.type == dtype::f16 || o.type == dtype::bf16) rtol = std::max(rtol, 1e-2), atol = std::max(atol, 1e-3);
    if (o.type == dtype::f64) rtol = std::max(rtol, 1e-9), atol = std::max(atol, 1e-12);
  }
  if (rtol > 0 && rms > 0 && rtol * rms > atol) t.compare.tol.atol = rtol * rms;
  if (d.contains("tolerance") && d["tolerance"].is_object())
    for (auto [key, slot] : {std::pair{"rtol", &t.compare.tol.rtol}, std::pair{"atol", &t.compare.tol.atol},
                             std::pair{"nerr", &t.compare.tol.nerr}})
      if (d["tolerance"].contains(key)) *slot = d["tolerance"][key].get<double>();
  // LATHE_COMPARISON (a wrapper's [comparison] kind wins): e.g. "topk" for torch.topk's
  // (values, indices), whose order within a row and whose tied indices are not the contract.
  if (d.contains("comparison") && d["comparison"].is_string()) {
    const std::string kind = d["comparison"].get<std::string>();
    if (kind == "sorted_set") t.compare.kind = comparison_kind::sorted_set;
    else if (kind == "topk") t.compare.kind = comparison_kind::topk;
    else if (kind != "elementwise")
      return fail(errc::invalid_argument, file.string() + ": unknown LATHE_COMPARISON '" + kind + "'");
    if (std::string why = comparison_misfit(t); !why.empty())
      return fail(errc::invalid_argument, file.string() + ": LATHE_COMPARISON: " + why);
  }
  t.shapes.push_back(s);
  t.cost.bytes = std::to_string(bytes);  // every input read once, every output written once
  return t;
}

std::optional<kernel_bundle> eager_baseline(const task& t) {
  // On CUDA tasks the Python worker holds the Model on the device (python/lathe_cuda.py).
  if (t.problem_format != problem_format::kernelbench || t.problem_model.empty()) return std::nullopt;
  // A bundle file's cap (bundle.cpp): the problem becomes the baseline's source.
  auto text = read_named(t.problem, uint64_t{16} << 20);
  if (!text) return std::nullopt;
  kernel_bundle b;
  b.name = "eager";
  b.manifest.lang = language::python;
  b.manifest.entry = "eager.py";
  b.manifest.files = {b.manifest.entry};
  b.sources[b.manifest.entry] = *text +
                                "\n\n# lathe: the problem's own Model, timed as the eager baseline\n"
                                "class ModelNew(Model):\n    pass\n";
  b.hash = content_hash("eager\n" + b.sources[b.manifest.entry]);
  return b;
}

}  // namespace lathe::gate
