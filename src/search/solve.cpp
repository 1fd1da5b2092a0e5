#include "search/solve.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

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
  static const std::regex problem_name(R"(\d+_.*\.py)");
  std::vector<solve_problem> out;
  std::map<int32_t, fs::path> seen;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!std::regex_match(name, problem_name) || !e.is_regular_file(ec)) continue;
    const int32_t id = *kernelbench_problem_id(e.path());
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
    if (j.contains("running") && j["running"].is_object())
      s.running = solve_running{j["running"].at("level").get<int32_t>(), j["running"].at("problem").get<int32_t>(),
                                j["running"].at("run").get<std::string>()};
  } catch (const json::exception& e) {
    return bad(e.what());
  }
  return std::optional<solve_state>(std::move(s));
}

result<void> write_solve_state(const fs::path& out, const solve_state& s) {
  json j = {{"schema", "lathe.solve-state/1"}, {"suite", s.suite},          {"sample", s.sample},
            {"settings", s.settings},          {"finished", s.finished}};
  if (s.running) j["running"] = {{"level", s.running->level}, {"problem", s.running->problem}, {"run", s.running->run}};
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

result<solve_result> solve(const std::vector<solve_problem>& problems, const solve_runner& run,
                           const solve_options& o) {
  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (!fs::is_directory(o.out, ec)) return fail(errc::io_error, "cannot make the out folder " + o.out.string());
  auto lock = solve_folder_lock::take(o.out);
  if (!lock) return tl::unexpected(lock.error());
  auto prior = read_solve_state(o.out);
  if (!prior) return tl::unexpected(prior.error());
  solve_state state{o.suite, o.sample, o.settings, {}, {}};
  if (*prior) {
    if (!(*prior)->settings.empty() && (*prior)->suite == o.suite && (*prior)->settings != o.settings)
      return fail(errc::invalid_argument, cat(o.out.string(), " was solved with ", (*prior)->settings, ", not ",
                                              o.settings, ": give the same options to resume it, or another --out"));
    if ((*prior)->suite != o.suite || (*prior)->sample != o.sample)
      return fail(errc::invalid_argument,
                  cat(o.out.string(), " holds the solve of ", (*prior)->suite, " (sample ",
                      std::to_string((*prior)->sample), "): give another --out, or the same suite and sample to "
                                                        "resume it"));
    state = std::move(**prior);
  }
  solve_result out;
  const int32_t total = static_cast<int32_t>(problems.size());
  for (int32_t i = 0; i < total; ++i) {
    const solve_problem& p = problems[static_cast<size_t>(i)];
    if (const solve_record* done = finished_before(state, p, o.out)) {
      out.records.push_back(*done);
      ++out.skipped;
      if (o.progress) o.progress({solve_event::skipped, i + 1, total, &p, nullptr, &out.records.back()});
      continue;
    }
    const bool interrupted = state.running && state.running->level == p.level && state.running->problem == p.problem &&
                             !state.running->run.empty();
    const solve_run id{interrupted ? state.running->run : o.new_run_id ? o.new_run_id() : new_run_id(), interrupted};
    state.running = solve_running{p.level, p.problem, id.id};
    if (auto w = write_solve_state(o.out, state); !w)
      return fail(errc::io_error, "cannot write the state " + (o.out / solve_state_name).string() + ": " + w.error().message);
    if (o.progress) o.progress({solve_event::started, i + 1, total, &p, &id, nullptr});
    solve_attempt a = run(p, id);
    state.running.reset();
    if (a.rec.status == solve_status::solved && a.modelnew) {
      if (auto w = gate::write_beneath(o.out, a.rec.kernel, *a.modelnew, gate::write_mode::replace); !w)
        return fail(errc::io_error, "cannot write " + (o.out / a.rec.kernel).string() + ": " + w.error().message);
    }
    std::erase_if(state.finished,
                  [&](const solve_record& r) { return r.level == p.level && r.problem == p.problem; });
    state.finished.push_back(a.rec);
    if (auto w = write_solve_state(o.out, state); !w)
      return fail(errc::io_error, "cannot write the state " + (o.out / solve_state_name).string() + ": " + w.error().message);
    if (o.finished) o.finished(state.finished);
    out.records.push_back(a.rec);
    if (o.progress) o.progress({solve_event::finished, i + 1, total, &p, nullptr, &out.records.back()});
  }
  return out;
}

}  // namespace lathe::search
