#include "search/solve.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <mutex>
#include <set>
#include <thread>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/text.h"
#include "spec/kernelbench_layout.h"
#include "spec/safe_file.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace lathe::search {

result<std::vector<solve_problem>> solve_problems(const fs::path& dir, std::optional<int32_t> level) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return fail(errc::invalid_argument, "'" + dir.string() + "' is not a folder (lathe solve takes a folder of "
                                        "KernelBench problem files, <P>_<Name>.py)");
  if (!level) level = kernelbench_level(dir);
  if (!level)
    return fail(errc::invalid_argument, "'" + dir.string() + "' names no level (a KernelBench suite folder is "
                                        "named level1, level2, …): give it with --level");
  std::vector<solve_problem> out;
  std::map<int32_t, fs::path> seen;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const auto problem = e.path().extension() == ".py" ? kernelbench_problem_id(e.path()) : std::nullopt;
    if (!problem || !e.is_regular_file(ec)) continue;
    const int32_t id = *problem;
    if (auto [it, fresh] = seen.emplace(id, e.path()); !fresh)
      return fail(errc::invalid_argument, cat("two problem files with the number ", std::to_string(id), ": ",
                                              it->second.filename().string(), " and ", name,
                                              " (KernelBench's layout names a kernel by its problem's number)"));
    out.push_back({*level, id, e.path()});
  }
  if (ec) return fail(errc::io_error, "cannot read '" + dir.string() + "': " + ec.message());
  if (out.empty())
    return fail(errc::not_found, "'" + dir.string() + "' holds no KernelBench problem file (<P>_<Name>.py, "
                                 "e.g. 19_ReLU.py)");
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.problem < b.problem; });
  return out;
}

const char* to_string(solve_status s) { return s == solve_status::solved ? "solved" : "failed"; }

std::optional<solve_status> parse_solve_status(std::string_view s) {
  if (s == "solved") return solve_status::solved;
  if (s == "failed") return solve_status::failed;
  return std::nullopt;
}

namespace {

json optional_number(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

std::optional<double> number_field(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? std::optional<double>(it->get<double>()) : std::nullopt;
}

}  // namespace

void to_json(json& j, const solve_record& r) {
  j = {{"level", r.level},
       {"problem", r.problem},
       {"sample", r.sample},
       {"file", r.file},
       {"status", to_string(r.status)},
       {"message", r.message},
       {"run", r.run},
       {"kernel", r.kernel},
       {"kernel_hash", r.kernel_hash},
       {"steps", r.steps},
       {"stop", r.stop},
       {"evaluation", r.evaluation},
       {"outcome", r.outcome},
       {"decision", r.decided ? json(std::string(to_string(*r.decided))) : json(nullptr)},
       {"speedup", optional_number(r.speedup)},
       {"ci", r.ci_low && r.ci_high ? json{*r.ci_low, *r.ci_high} : json(nullptr)},
       {"counted_speedup", r.status == solve_status::solved ? json(counted_speedup(r)) : json(nullptr)},
       {"runtime_ms", optional_number(r.runtime_ms)},
       {"ref_runtime_ms", optional_number(r.ref_runtime_ms)},
       {"used", {{"calls", r.calls}, {"tokens", r.tokens}, {"usd", r.usd}, {"seconds", r.seconds}}}};
}

void from_json(const json& j, solve_record& r) {
  r.level = j.at("level").get<int32_t>();
  r.problem = j.at("problem").get<int32_t>();
  r.sample = j.value("sample", 0);
  r.file = j.value("file", std::string());
  const auto st = parse_solve_status(j.value("status", std::string()));
  if (!st) throw json::type_error::create(302, "unknown solve status '" + j.value("status", std::string()) + "'", &j);
  r.status = *st;
  r.message = j.value("message", std::string());
  r.run = j.value("run", std::string());
  r.kernel = j.value("kernel", std::string());
  r.kernel_hash = j.value("kernel_hash", std::string());
  r.steps = j.value("steps", 0);
  r.stop = j.value("stop", std::string());
  r.evaluation = j.value("evaluation", int64_t{0});
  r.outcome = j.value("outcome", std::string());
  r.decided = j.contains("decision") && j["decision"].is_string()
                  ? parse_decision(j["decision"].get<std::string>())
                  : std::nullopt;
  r.speedup = number_field(j, "speedup");
  if (j.contains("ci") && j["ci"].is_array() && j["ci"].size() == 2) {
    r.ci_low = j["ci"][0].get<double>();
    r.ci_high = j["ci"][1].get<double>();
  }
  r.runtime_ms = number_field(j, "runtime_ms");
  r.ref_runtime_ms = number_field(j, "ref_runtime_ms");
  const json used = j.value("used", json::object());
  r.calls = used.value("calls", int64_t{0});
  r.tokens = used.value("tokens", int64_t{0});
  r.usd = used.value("usd", 0.0);
  r.seconds = used.value("seconds", 0.0);
}

double counted_speedup(const solve_record& r) {
  const bool decided = r.decided == decision::faster || r.decided == decision::slower;
  return decided && r.speedup && *r.speedup > 0 ? *r.speedup : 1.0;
}

bool decided_gain(const solve_record& r, double p) {
  return r.status == solve_status::solved && r.decided == decision::faster && r.speedup && *r.speedup > p &&
         r.ci_low && *r.ci_low > p;
}

solve_summary summarize_solve(const std::vector<solve_record>& records, const std::vector<double>& ps) {
  solve_summary s;
  s.problems = static_cast<int32_t>(records.size());
  double log_sum = 0;
  for (const auto& r : records) {
    s.calls += r.calls;
    s.tokens += r.tokens;
    s.usd += r.usd;
    s.seconds += r.seconds;
    if (r.status != solve_status::solved) {
      ++s.failed;
      continue;
    }
    ++s.correct;
    s.decided_faster += r.decided == decision::faster;
    log_sum += std::log(counted_speedup(r));
  }
  for (double p : ps) {
    fast_p f;
    f.p = p;
    for (const auto& r : records) {
      f.count += decided_gain(r, p);
      f.count_point += r.status == solve_status::solved && r.speedup && *r.speedup > p;
    }
    f.fraction = s.problems > 0 ? static_cast<double>(f.count) / s.problems : 0;
    s.fast.push_back(f);
  }
  if (s.correct > 0) s.geomean = std::exp(log_sum / s.correct);
  return s;
}

result<std::optional<solve_state>> read_solve_state(const fs::path& out) {
  std::error_code ec;
  if (!fs::exists(out / solve_state_name, ec)) return std::optional<solve_state>();
  auto text = gate::read_beneath(out, solve_state_name, uint64_t{64} << 20);
  if (!text) return tl::unexpected(text.error());
  const json j = json::parse(*text, nullptr, false);
  const auto bad = [&](const std::string& why) {
    return fail(errc::invalid_argument, (out / solve_state_name).string() + ": " + why +
                                            " (not a state lathe solve wrote; use another --out)");
  };
  if (!j.is_object() || j.value("schema", "") != "lathe.solve-state/1") return bad("no lathe.solve-state/1 object");
  solve_state s;
  try {
    s.suite = j.at("suite").get<std::string>();
    s.sample = j.at("sample").get<int32_t>();
    s.settings = j.value("settings", std::string());
    for (const auto& r : j.at("finished")) s.finished.push_back(r.get<solve_record>());
    const json running = j.value("running", json::array());
    for (const auto& r : running.is_object() ? json::array({running}) : running)
      s.running.push_back({r.at("level").get<int32_t>(), r.at("problem").get<int32_t>(), r.at("run").get<std::string>()});
  } catch (const json::exception& e) {
    return bad(e.what());
  }
  return std::optional<solve_state>(std::move(s));
}

result<void> write_solve_state(const fs::path& out, const solve_state& s) {
  json j = {{"schema", "lathe.solve-state/1"}, {"suite", s.suite},          {"sample", s.sample},
            {"settings", s.settings},          {"finished", s.finished}};
  json running = json::array();
  for (const auto& r : s.running) running.push_back({{"level", r.level}, {"problem", r.problem}, {"run", r.run}});
  if (!running.empty()) j["running"] = std::move(running);
  return gate::write_beneath(out, solve_state_name, j.dump(2) + "\n", gate::write_mode::replace);
}

solve_attempt solve_failure(const solve_problem& p, int32_t sample, const std::string& why, const std::string& run) {
  solve_attempt a;
  a.rec.level = p.level;
  a.rec.problem = p.problem;
  a.rec.sample = sample;
  a.rec.file = p.file.filename().string();
  a.rec.status = solve_status::failed;
  a.rec.message = why;
  a.rec.run = run;
  return a;
}

namespace {

// The bundle's Python entry: a ModelNew search's kernels are one file.
std::optional<std::string> entry_source(const kernel_bundle& k) {
  if (auto it = k.sources.find(k.manifest.entry); it != k.sources.end() && fs::path(it->first).extension() == ".py")
    return it->second;
  for (const auto& [name, text] : k.sources)
    if (fs::path(name).extension() == ".py") return text;
  return std::nullopt;
}

}  // namespace

solve_attempt solve_attempt_of(const optimize_result& res, const solve_problem& p, int32_t sample, const store& db) {
  solve_attempt a = solve_failure(p, sample, "", res.r.id);
  solve_record& r = a.rec;
  a.modelnew = entry_source(res.best);
  if (!a.modelnew) {
    r.message = "the run's best kernel " + res.best.hash.substr(0, 12) + " has no Python file (not a ModelNew)";
    return a;
  }
  r.status = solve_status::solved;
  r.kernel = kernelbench_kernel_name(p.level, p.problem, sample);
  r.kernel_hash = res.best.hash;
  r.steps = static_cast<int32_t>(res.steps.size());
  r.stop = to_string(res.stop);
  r.calls = res.used.calls;
  r.tokens = res.used.tokens;
  r.usd = res.used.usd;
  r.seconds = res.used.seconds;
  if (res.steps.empty()) {
    r.message = cat("no step accepted (the run stopped: ", to_string(res.stop),
                    "): the submission is the eager Model as a ModelNew");
    return a;
  }
  // The final series (best vs the eager start) is the first final evaluation (optimize_run.cpp).
  if (!res.final_evaluations.empty()) r.evaluation = res.final_evaluations.front();
  auto ev = db.get_evaluation(r.evaluation);
  if (r.evaluation <= 0 || !ev) {
    r.message = cat(std::to_string(r.steps), " step(s) accepted; the final series against eager was not measured");
    return a;
  }
  r.outcome = to_string(ev->result);
  r.decided = ev->decision;
  if (ev->paired && ev->paired->ratio > 0) {
    r.speedup = ev->paired->ratio;
    r.ci_low = ev->paired->ci_low;
    r.ci_high = ev->paired->ci_high;
  }
  if (ev->median_seconds) r.runtime_ms = *ev->median_seconds * 1e3;
  if (ev->baseline_median_seconds) r.ref_runtime_ms = *ev->baseline_median_seconds * 1e3;
  r.message = cat(std::to_string(r.steps), " step(s) accepted; the final series against eager: ",
                  r.decided ? std::string(to_string(*r.decided)) : std::string("no decision"), " (", r.outcome, ")");
  return a;
}

namespace {

// A problem finished by an earlier call: in the state, and its ModelNew still in the folder.
const solve_record* finished_before(const solve_state& s, const solve_problem& p, const fs::path& out) {
  for (const auto& r : s.finished) {
    if (r.level != p.level || r.problem != p.problem) continue;
    std::error_code ec;
    if (r.status == solve_status::solved && !fs::is_regular_file(out / r.kernel, ec)) return nullptr;
    return &r;
  }
  return nullptr;
}

}  // namespace

result<solve_folder_lock> solve_folder_lock::take(const fs::path& out) {
  const fs::path file = out / "lathe-solve.lock";
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return fail(errc::io_error, "cannot open " + file.string() + ": " + std::strerror(errno));
  solve_folder_lock held(fd);
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK)
      return fail(errc::invalid_argument, "another lathe solve is writing " + out.string() +
                                              " (it holds lathe-solve.lock): wait for it, or end it first");
    return fail(errc::io_error, "flock " + file.string() + ": " + std::strerror(errno));
  }
  return held;
}

solve_folder_lock::~solve_folder_lock() {
  if (fd_ >= 0) ::close(fd_);  // closing it releases the flock
}

namespace {

// The out folder's state as this call starts: the one found (when it is this suite's, sample's and
// settings'), else a new one.
result<solve_state> starting_state(const solve_options& o) {
  auto prior = read_solve_state(o.out);
  if (!prior) return tl::unexpected(prior.error());
  if (!*prior) return solve_state{o.suite, o.sample, o.settings, {}, {}};
  if (!(*prior)->settings.empty() && (*prior)->suite == o.suite && (*prior)->settings != o.settings)
    return fail(errc::invalid_argument, cat(o.out.string(), " was solved with ", (*prior)->settings, ", not ",
                                            o.settings, ": give the same options to resume it, or another --out"));
  if ((*prior)->suite != o.suite || (*prior)->sample != o.sample)
    return fail(errc::invalid_argument,
                cat(o.out.string(), " holds the solve of ", (*prior)->suite, " (sample ",
                    std::to_string((*prior)->sample), "): give another --out, or the same suite and sample to "
                                                      "resume it"));
  return std::move(**prior);
}

// One call's loop: the state and the records behind one mutex, the runs outside it.
class solve_loop {
 public:
  solve_loop(const std::vector<solve_problem>& ps, const solve_runner& run, const solve_options& o, solve_state s)
      : ps_(ps), run_(run), o_(o), state_(std::move(s)), records_(ps.size()) {}

  result<solve_result> go() {
    solve_result out;
    for (size_t i = 0; i < ps_.size(); ++i) {
      if (const solve_record* done = finished_before(state_, ps_[i], o_.out)) {
        records_[i] = *done;
        ++out.skipped;
        if (o_.progress) o_.progress({solve_event::skipped, position(i), total(), &ps_[i], nullptr, &*records_[i]});
      } else {
        queue_.push_back(i);
      }
    }
    const size_t threads = std::min(queue_.size(), static_cast<size_t>(std::max(1, o_.jobs)));
    if (threads <= 1) {
      work();  // on this thread: a runner's exception goes straight up, as a kill would end the call
    } else {
      std::vector<std::thread> pool;
      for (size_t t = 0; t < threads; ++t) pool.emplace_back([this] { work(); });
      for (auto& t : pool) t.join();
      if (thrown_) std::rethrow_exception(thrown_);
    }
    if (failed_) return tl::unexpected(*failed_);
    for (auto& r : records_) out.records.push_back(std::move(*r));
    return out;
  }

 private:
  int32_t total() const { return static_cast<int32_t>(ps_.size()); }
  static int32_t position(size_t i) { return static_cast<int32_t>(i) + 1; }

  void work() {
    for (;;) {
      size_t i = 0;
      solve_run id;
      {
        std::lock_guard<std::mutex> hold(m_);
        if (next_ >= queue_.size() || failed_ || thrown_) return;
        i = queue_[next_++];
        if (auto e = begin(i, id); !e) {
          failed_ = e.error();
          return;
        }
      }
      solve_attempt a;
      try {
        a = run_(ps_[i], id);
      } catch (...) {
        if (o_.jobs <= 1) throw;
        std::lock_guard<std::mutex> hold(m_);
        thrown_ = std::current_exception();
        return;
      }
      std::lock_guard<std::mutex> hold(m_);
      if (auto e = finish(i, id, std::move(a)); !e) failed_ = e.error();
    }
  }

  // Under the mutex: the problem named in the state as running, with its run's id.
  result<void> begin(size_t i, solve_run& id) {
    const solve_problem& p = ps_[i];
    const auto was = std::find_if(state_.running.begin(), state_.running.end(), [&](const solve_running& r) {
      return r.level == p.level && r.problem == p.problem && !r.run.empty();
    });
    id = was != state_.running.end() ? solve_run{was->run, true}
                                     : solve_run{o_.new_run_id ? o_.new_run_id() : new_run_id(), false};
    if (was == state_.running.end()) state_.running.push_back({p.level, p.problem, id.id});
    if (auto w = write_solve_state(o_.out, state_); !w)
      return fail(errc::io_error, "cannot write the state " + (o_.out / solve_state_name).string() + ": " +
                                      w.error().message);
    if (o_.progress) o_.progress({solve_event::started, position(i), total(), &p, &id, nullptr});
    return {};
  }

  // Under the mutex: its ModelNew written, then the state.
  result<void> finish(size_t i, const solve_run& id, solve_attempt a) {
    const solve_problem& p = ps_[i];
    if (a.rec.status == solve_status::solved && a.modelnew)
      if (auto w = gate::write_beneath(o_.out, a.rec.kernel, *a.modelnew, gate::write_mode::replace); !w)
        return fail(errc::io_error, "cannot write " + (o_.out / a.rec.kernel).string() + ": " + w.error().message);
    std::erase_if(state_.running, [&](const solve_running& r) { return r.run == id.id; });
    std::erase_if(state_.finished, [&](const solve_record& r) { return r.level == p.level && r.problem == p.problem; });
    state_.finished.push_back(a.rec);
    if (auto w = write_solve_state(o_.out, state_); !w)
      return fail(errc::io_error, "cannot write the state " + (o_.out / solve_state_name).string() + ": " +
                                      w.error().message);
    if (o_.finished) o_.finished(state_.finished);
    records_[i] = std::move(a.rec);
    if (o_.progress) o_.progress({solve_event::finished, position(i), total(), &p, nullptr, &*records_[i]});
    return {};
  }

  const std::vector<solve_problem>& ps_;
  const solve_runner& run_;
  const solve_options& o_;
  solve_state state_;
  std::vector<std::optional<solve_record>> records_;
  std::vector<size_t> queue_;  // the problems to run, in order
  std::mutex m_;
  size_t next_ = 0;
  std::optional<error> failed_;
  std::exception_ptr thrown_;
};

}  // namespace

result<solve_result> solve(const std::vector<solve_problem>& problems, const solve_runner& run,
                           const solve_options& o) {
  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (!fs::is_directory(o.out, ec)) return fail(errc::io_error, "cannot make the out folder " + o.out.string());
  auto lock = solve_folder_lock::take(o.out);
  if (!lock) return tl::unexpected(lock.error());
  auto state = starting_state(o);
  if (!state) return tl::unexpected(state.error());
  return solve_loop(problems, run, o, std::move(*state)).go();
}

}  // namespace lathe::search
