// lathe tune TASK KERNEL: the kernel's tunables searched through the gate (search/tune.h,
// docs/tune.md), measured configurations cached in the store's measurements.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "agent/rules/parameterize.h"
#include "cli/context.h"
#include "cli/fail.h"
#include "cli/gate_options.h"
#include "cli/proposer_session.h"
#include "cli/resume.h"
#include "cli/tune_card.h"
#include "core/run.h"
#include "cli/verbs.h"
#include "core/text.h"
#include "search/tune.h"
#include "spec/bundle.h"
#include "spec/tune.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace lathe::cli {
namespace {

struct tune_cli {
  std::string task, kernel, strategy = "exhaustive", out_dir, resume;
  int64_t evals = 0;
  double seconds = 0;
  uint64_t seed = 1;
  bool json_out = false, quiet = false, simulate = false;
  bool parameterize = false, list = false;
  std::vector<std::string> knobs;  // --knob NAME or NAME=V1,V2,…
  gate_settings gate = gate_settings_with(1.0);
};

// What a tune run stores as its arguments and --resume reads back: paths made absolute, so that a
// run goes on from any folder. Output switches (--json, --quiet, --list) are the new command's.
json args_json(const tune_cli& o) {
  auto abs = [](const std::string& p) {
    std::error_code ec;
    return !p.empty() && fs::exists(p, ec) ? fs::absolute(p).lexically_normal().string() : p;
  };
  return {{"task", abs(o.task)}, {"kernel", abs(o.kernel)}, {"strategy", o.strategy}, {"evals", o.evals},
          {"time", o.seconds}, {"seed", o.seed}, {"max_time", o.gate.max_time}, {"quick", o.gate.quick},
          {"simulate", o.simulate}, {"parameterize", o.parameterize}, {"knobs", o.knobs},
          {"out", o.out_dir.empty() ? std::string() : fs::absolute(o.out_dir).lexically_normal().string()}};
}

tune_cli with_args(const tune_cli& now, const json& a) {
  tune_cli o = now;
  o.task = a.value("task", o.task);
  o.kernel = a.value("kernel", o.kernel);
  o.strategy = a.value("strategy", o.strategy);
  o.evals = a.value("evals", o.evals);
  o.seconds = a.value("time", o.seconds);
  o.seed = a.value("seed", o.seed);
  o.gate.max_time = a.value("max_time", o.gate.max_time);
  o.gate.quick = a.value("quick", o.gate.quick);
  o.simulate = a.value("simulate", o.simulate);
  o.parameterize = a.value("parameterize", o.parameterize);
  o.knobs = a.value("knobs", o.knobs);
  o.out_dir = a.value("out", o.out_dir);
  return o;
}

std::string knob_list(const std::vector<agent::rules::knob>& ks) {
  std::string out;
  for (const auto& k : ks) out += cat(out.empty() ? "" : ", ", k.name, " (", k.what, ")");
  return out.empty() ? "none" : out;
}

// The kernel as tune searches it: as written, or with its literal knobs made tunables
// (--parameterize, --knob: agent/rules/parameterize.h).
result<kernel_bundle> tunable_kernel(const kernel_bundle& k, const tune_cli& o) {
  namespace r = agent::rules;
  const bool asked = o.parameterize || !o.knobs.empty();
  if (!asked) {
    if (!k.manifest.tune.empty()) return k;
    return fail(errc::invalid_argument, "kernel " + k.name + " declares no [tune] in its kernel.toml; --parameterize makes " +
                                            "its literal knobs tunables (found: " + knob_list(r::find_knobs(k)) + ")");
  }
  const std::vector<r::knob> found = r::find_knobs(k);
  std::vector<r::knob> chosen;
  for (const std::string& spec : o.knobs) {
    r::knob c;
    const size_t eq = spec.find('=');
    c.name = spec.substr(0, eq);
    if (eq != std::string::npos) {
      std::string rest = spec.substr(eq + 1) + ",";
      for (size_t at = rest.find(','); at != std::string::npos; rest.erase(0, at + 1), at = rest.find(',')) {
        const std::string v = rest.substr(0, at);
        char* end = nullptr;
        const long long n = std::strtoll(v.c_str(), &end, 10);
        if (v.empty() || *end != '\0') return fail(errc::invalid_argument, "--knob " + spec + ": '" + v + "' is not an integer");
        c.values.push_back(n);
      }
    }
    chosen.push_back(std::move(c));
  }
  if (o.knobs.empty())
    for (const r::knob& f : found)
      if (f.knob_like) chosen.push_back(f);
  if (chosen.empty())
    return fail(errc::invalid_argument, "kernel " + k.name + " has no knob that reads as one (found: " + knob_list(found) +
                                            "); name them with --knob NAME[=V1,V2,…]");
  return r::parameterize(k, chosen);
}

// --list: the space, without measuring anything.
int list_space(const tune_cli& o, const task& t, const kernel_bundle& k, const target& tgt) {
  auto e = enumerate_configs(k.manifest.tune, t, tgt);
  if (!e) return fail_with(e.error().message, 2);
  if (o.json_out) {
    json params = json::array();
    for (const tunable& p : k.manifest.tune.params)
      params.push_back({{"name", p.name}, {"values", p.values}, {"default", k.manifest.tune.defaults.at(p.name)}});
    std::printf("%s\n", json{{"schema", "lathe.tune-space/1"}, {"kernel", k.name}, {"hash", k.hash}, {"params", params},
                             {"constraints", k.manifest.tune.constraints}, {"admitted", e->configs.size()},
                             {"refused", e->refused_count}}.dump(2).c_str());
    return 0;
  }
  std::printf("kernel    %s (%s)\n", k.name.c_str(), k.hash.substr(0, 12).c_str());
  for (const tunable& p : k.manifest.tune.params) {
    std::string vs;
    for (int64_t v : p.values) vs += cat(vs.empty() ? "" : " ", std::to_string(v));
    std::printf("  %-16s %s (default %lld)\n", p.name.c_str(), vs.c_str(),
                static_cast<long long>(k.manifest.tune.defaults.at(p.name)));
  }
  for (const std::string& c : k.manifest.tune.constraints) std::printf("  where %s\n", c.c_str());
  std::printf("space     %zu configurations admitted, %zu refused by the constraints\n", e->configs.size(), e->refused_count);
  return 0;
}

json point_json(const search::tune_point& p) {
  json j = {{"config", p.config}, {"hash", p.hash}, {"outcome", std::string(to_string(p.result))},
            {"evaluation", p.evaluation_id}, {"cached", p.cached}, {"quick", p.quick}};
  if (p.speedup) j["speedup"] = *p.speedup;
  if (p.lo) j["interval"] = {*p.lo, *p.hi};
  if (!p.message.empty()) j["message"] = p.message;
  return j;
}

std::optional<search::tune_point> point_from(const json& j) {
  if (!j.is_object() || !j.contains("config") || !j.contains("outcome")) return std::nullopt;
  search::tune_point p;
  p.config = j["config"].get<tune_config>();
  p.hash = j.value("hash", std::string());
  auto o = parse_outcome(j["outcome"].get<std::string>());
  if (!o) return std::nullopt;
  p.result = *o;
  p.evaluation_id = j.value("evaluation", int64_t{0});
  if (j.contains("speedup")) p.speedup = j["speedup"].get<double>();
  if (j.contains("interval") && j["interval"].is_array() && j["interval"].size() == 2) {
    p.lo = j["interval"][0].get<double>();
    p.hi = j["interval"][1].get<double>();
  }
  p.message = j.value("message", std::string());
  return p;  // `quick` is the search's to say, not the cache's
}

// Every setting that changes a measurement, and the compilers: part of the cache's key, so that a
// measurement is replayed only under the conditions it was taken in.
std::string settings_text(const gate_settings& g, const context& ctx, const task& t) {
  char rse[32] = "-";
  if (g.target_rse) std::snprintf(rse, sizeof rse, "%g", *g.target_rse);
  return cat("max_time=", std::to_string(g.max_time), ",quick=", g.quick ? "1" : "0", ",aa=", g.aa_control ? "1" : "0",
             ",seeds=", std::to_string(g.seeds), ",rse=", rse, ",mode=", std::to_string(static_cast<int>(g.mode)),
             ",host_trials=", g.host_trials ? "1" : "0", ",cxx=", ctx.tools.cxx_version,
             t.plat == platform::cuda ? ",nvcc=" + ctx.tools.nvcc_version : std::string());
}

std::string speedup_text(const search::tune_point& p) {
  if (!p.speedup) return "-";
  char b[64];
  std::snprintf(b, sizeof b, "%.3fx [%.3f, %.3f]", *p.speedup, p.lo.value_or(0), p.hi.value_or(0));
  return b;
}

json result_json(const tune_cli& o, const task& t, const kernel_bundle& k, const search::tune_result& r,
                 const kernel_bundle& winner, const std::string& written, const std::string& run_id) {
  json j = {{"schema", "lathe.tune/1"}, {"task", t.name}, {"kernel", k.name}, {"strategy", o.strategy},
            {"default", r.defaults}, {"default_hash", r.default_hash}, {"admitted", r.admitted},
            {"refused", r.refused_count}, {"stop", r.stop}, {"timed", r.timed}, {"replayed", r.replayed},
            {"seconds", r.seconds}, {"winner", r.winner}, {"winner_hash", winner.hash}, {"improved", r.improved},
            {"dir", written}};
  j["points"] = json::array();
  for (const auto& p : r.points) j["points"].push_back(point_json(p));
  if (r.best) j["best"] = point_json(r.points[*r.best]);
  if (r.crown) {
    j["crown"] = {{"outcome", std::string(to_string(r.crown->result))}, {"evaluation", r.crown->id}};
    if (r.crown->paired) {
      j["crown"]["speedup"] = r.crown->paired->ratio;
      j["crown"]["interval"] = {r.crown->paired->ci_low, r.crown->paired->ci_high};
    }
    if (r.crown->decision) j["crown"]["decision"] = std::string(to_string(*r.crown->decision));
  }
  j["run"] = run_id;
  return j;
}

void print_tune(const tune_cli& o, const task& t, const kernel_bundle& k, const search::tune_result& r,
                const std::string& written, const std::string& run_id, const json& card) {
  std::printf("tune      %s %s: strategy %s, %zu configurations admitted, %zu refused by constraints\n",
              t.name.c_str(), k.name.c_str(), o.strategy.c_str(), r.admitted, r.refused_count);
  int width = 32;  // the longest configuration's label, so that the columns line up
  for (const auto& p : r.points) width = std::max(width, static_cast<int>(config_label(p.config).size()));
  std::printf("%-*s %-16s %s\n", width, "configuration", "outcome", "speedup over the default");
  for (const auto& p : r.points)
    std::printf("%-*s %-16s %s%s%s\n", width, config_label(p.config).c_str(), std::string(to_string(p.result)).c_str(),
                speedup_text(p).c_str(), p.quick ? " (quick)" : "", p.cached ? " (cached)" : "");
  std::printf("stop      %s: %zu measured (%lld timed, %lld from the cache), %.1f s\n", r.stop.c_str(), r.points.size(),
              static_cast<long long>(r.timed), static_cast<long long>(r.replayed), r.seconds);
  if (r.best) {
    const auto& b = r.points[*r.best];
    std::printf("best      %s %s\n", config_label(b.config).c_str(), speedup_text(b).c_str());
  }
  if (r.crown)
    std::printf("re-timed  %s in fresh processes: %s%s\n", r.crown->paired ? cat(std::to_string(r.crown->paired->ratio), "x").c_str() : "-",
                std::string(to_string(r.crown->result)).c_str(),
                r.crown->decision ? cat(", ", to_string(*r.crown->decision)).c_str() : "");
  std::printf("winner    %s%s\n", config_label(r.winner).c_str(),
              r.improved ? "" : " (the default: no configuration was decided faster)");
  if (!written.empty()) std::printf("written   %s\n", written.c_str());
  if (card.is_object())
    std::printf("card      %s (lathe skills show %s: the winner as a tuned-knobs card, evidence evaluation %lld)\n",
                card["name"].get<std::string>().c_str(), card["name"].get<std::string>().c_str(),
                static_cast<long long>(card["evidence"][0].get<int64_t>()));
  if (!run_id.empty()) std::printf("run       %s (lathe runs show %s; lathe tune --resume %s goes on after a kill)\n", run_id.c_str(),
                                   run_id.c_str(), run_id.c_str());
}

// A crowned winner is evidence for the kernel's family on this target: a tuned-knobs card
// (skills/tuned.h) that optimize applies to kernels declaring the same tunables, made from the
// result `j` as `lathe skills from-tune RUN` makes it from the stored run (cli/tune_card.h).
// Stored; returns {"id", "name", "evidence"} (the crowning evaluation, then the search's
// measurement of the winner), or null when it could not be made (said on stderr: the search's
// result stands).
json tuned_card(const json& j, const task& t, const kernel_bundle& k, const target& tgt, store& db) {
  auto w = win_of_tune(j, t, tgt, k.manifest.lang);
  result<json> c = w ? store_tune_card(*w, db) : result<json>(tl::unexpected(w.error()));
  if (!c) {
    std::fprintf(stderr, "lathe: the winner was not stored as a card: %s\n", c.error().message.c_str());
    return json();
  }
  return *c;
}

// --resume: the stored run's arguments (what it measured comes back from the cache), the run in
// `resumed`; otherwise the command line's. Errors are the user's.
result<tune_cli> options_for(context& ctx, const tune_cli& given, std::optional<run>& resumed) {
  if (given.resume.empty()) {
    if (given.task.empty() || given.kernel.empty())
      return fail(errc::invalid_argument, "lathe tune needs TASK and KERNEL (or --resume RUN; `lathe tune --help`)");
    return given;
  }
  if (!given.task.empty() || !given.kernel.empty())
    return fail(errc::invalid_argument, "--resume " + given.resume + " goes on with that run's own task and kernel: give neither");
  auto rr = run_to_resume(ctx, given.resume, run_kind::tune);
  if (!rr) return tl::unexpected(rr.error());
  auto a = stored_args(*rr, "", "tunes");
  if (!a) return tl::unexpected(a.error());
  resumed = std::move(*rr);
  return with_args(given, *a);
}

// The store's measurements as tune's cache (search/tune.h): a point per key, as JSON.
search::tune_cache measurements_of(store& db) {
  return {[&db](const std::string& key) -> std::optional<search::tune_point> {
            auto m = db.get_measurement(key);
            if (!m || !*m) return std::nullopt;
            return point_from(json::parse(**m, nullptr, false));
          },
          [&db](const std::string& key, const search::tune_point& p) {
            if (auto w = db.put_measurement(key, point_json(p).dump()); !w)
              std::fprintf(stderr, "lathe: a measured configuration was not cached: %s\n", w.error().message.c_str());
          }};
}

int run_tune(const common_options& common, const tune_cli& given) {
  std::optional<fs::path> ws;
  if (common.workspace) ws = *common.workspace;
  auto ctx = open_context(ws, true);
  if (!ctx) return fail_with(ctx.error().message, 2);
  std::optional<run> resumed;
  auto resolved = options_for(*ctx, given, resumed);
  if (!resolved) return fail_with(resolved.error().message, 2);
  const tune_cli& o = *resolved;
  auto strat = search::parse_tune_strategy(o.strategy);
  if (!strat) return fail_with("unknown strategy '" + o.strategy + "' (" + search::tune_strategy_words + ")", 2);
  if (o.evals < 0 || o.seconds < 0) return fail_with("--evals and --time take 0 (no limit) or more", 2);
  auto t = find_task(o.task, ctx->where);
  if (!t) return fail_with(t.error().message, 2);
  auto found = find_task_kernel(*t, o.kernel);
  if (!found) return fail_with(found.error().message, 2);
  auto k = tunable_kernel(*found, o);
  if (!k) return fail_with(k.error().message, 2);
  if (k->hash != found->hash && !o.quiet && !o.json_out)
    for (const tunable& p : k->manifest.tune.params)
      std::fprintf(stderr, "… parameterized %s (default %lld, %zu values)\n", p.name.c_str(),
                   static_cast<long long>(k->manifest.tune.defaults.at(p.name)), p.values.size());
  if (t->plat == platform::cuda && !ctx->gpu)
    return fail_with("task " + t->name + " runs on CUDA and there is no usable GPU here" +
                         (ctx->gpu_error.empty() ? "" : " (" + ctx->gpu_error + ")"), 2);
  const target tgt = t->plat == platform::cuda ? *ctx->gpu : ctx->tgt;
  if (o.list) return list_space(o, *t, *k, tgt);

  search::tune_options so;
  so.strategy = *strat;
  so.max_evaluations = o.evals;
  so.max_seconds = o.seconds;
  so.seed = o.seed;
  so.simulate = o.simulate;
  so.settings = settings_text(o.gate, *ctx, *t);
  store& db = *ctx->db;
  search::tune_cache cache = measurements_of(db);
  lineages::gate_verifier v(make_gate_hooks(*ctx, o.gate));
  // halving's first rung: a quarter of the series and half the processes and rounds.
  gate_settings quick = o.gate;
  quick.quick = true;
  quick.max_time = o.gate.max_time / 4;
  lineages::gate_verifier quick_v(make_gate_hooks(*ctx, quick));
  so.quick = &quick_v;
  so.quick_settings = settings_text(quick, *ctx, *t);
  std::function<void(const search::tune_progress&)> progress;
  if (!o.quiet && !o.json_out) {
    std::fprintf(stderr, "… tune %s %s (strategy %s)\n", t->name.c_str(), k->name.c_str(), o.strategy.c_str());
    progress = [](const search::tune_progress& p) {
      std::fprintf(stderr, "… [%zu/%zu] %-28s %-10s %s%s · best %.3fx · %.0f s%s\n", p.done, p.planned,
                   config_label(p.point->config).c_str(), std::string(to_string(p.point->result)).c_str(),
                   speedup_text(*p.point).c_str(), p.point->cached ? " (cached)" : "", p.best_speedup, p.elapsed,
                   p.eta > 0 ? cat(" · ETA ", std::to_string(static_cast<long long>(std::ceil(p.eta))), " s").c_str() : "");
    };
  }
  // A search is a run of the store (`lathe runs`, `lathe report`, --resume), begun before the first
  // measurement so that a killed one is listed; a simulation measures nothing and is not one.
  run rec = resumed ? *resumed : run{};
  const bool recorded = !o.simulate;
  auto save = [&](run_state st, const std::string& message, const std::string& summary) {
    if (!recorded) return;
    rec.state = st;
    rec.message = message;
    if (!summary.empty()) rec.summary = summary;
    if (auto w = db.put_run(rec); !w)
      std::fprintf(stderr, "lathe: the tune run %s was not recorded: %s\n", rec.id.c_str(), w.error().message.c_str());
  };
  if (recorded) {
    if (!resumed) {
      rec.id = new_run_id(run_kind::tune);
      rec.kind = run_kind::tune;
      rec.task = t->name;
    }
    rec.args = args_json(o).dump();
    save(run_state::running, "", "");
  }
  auto r = search::tune(*t, *k, tgt, v, so, &cache, progress);
  if (!r) {
    save(run_state::failed, r.error().message, "");
    return fail_with(r.error().message, 1);
  }

  auto winner = configure(*k, r->winner);
  if (!winner) {
    save(run_state::failed, winner.error().message, "");
    return fail_with(winner.error().message, 1);
  }
  const fs::path out = !o.out_dir.empty() ? fs::path(o.out_dir) : ctx->ws.runs() / (recorded ? rec.id : "tune-simulated") / "best";
  std::string written;  // a simulation decided nothing: nothing to write
  if (auto w = o.simulate ? result<void>{} : write_bundle(*winner, out); !w)
    std::fprintf(stderr, "lathe: the tuned kernel was not written to %s: %s\n", out.c_str(), w.error().message.c_str());
  else if (!o.simulate) written = out.string();
  const std::string run_id = recorded ? rec.id : std::string();
  json j = result_json(o, *t, *k, *r, *winner, written, run_id);
  if (json c = r->improved && recorded ? tuned_card(j, *t, *k, tgt, db) : json(); !c.is_null()) j["card"] = c;
  save(run_state::finished, "", j.dump());
  if (o.json_out) std::printf("%s\n", j.dump(2).c_str());
  else print_tune(o, *t, *k, *r, written, run_id, j.value("card", json()));
  return 0;
}

}  // namespace

void add_tune(CLI::App& app, const common_options& common, int& exit_code) {
  auto o = std::make_shared<tune_cli>();
  CLI::App* cmd = app.add_subcommand("tune", "search a kernel's tunables ([tune] in kernel.toml) through the gate");
  cmd->add_option("task", o->task, "task directory, task.toml, or the name of a shipped task");
  cmd->add_option("kernel", o->kernel, "a bundle path or a kernel name of the task; its kernel.toml declares [tune]");
  cmd->add_option("--resume", o->resume,
                  "go on with a tune run (its stored task, kernel and options; what it measured comes back from the "
                  "cache)");
  cmd->add_option("--strategy", o->strategy, search::tune_strategy_words)->capture_default_str();
  cmd->add_option("--evals", o->evals, "most configurations measured, the default included (0: no limit)")
      ->capture_default_str();
  cmd->add_option("--time", o->seconds, "most seconds of search before the re-timing of the best (0: no limit)")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "the seed of random, model and halving")->capture_default_str();
  cmd->add_option("--max-time", o->gate.max_time, "longest paired timing series per evaluation, seconds")
      ->capture_default_str();
  cmd->add_flag("--quick", o->gate.quick, "half the timing effort: 2 process pairs, 4 rounds per paired series");
  cmd->add_option("--out", o->out_dir, "write the winning configuration's bundle here (default: .lathe/runs/tune-ID/best)");
  cmd->add_flag("--simulate", o->simulate,
                "replay every configuration from the cache and time nothing, no re-timing of the best (kernel_tuner's "
                "simulation mode: strategies compared over a space measured once); one never measured is an error");
  cmd->add_flag("--parameterize", o->parameterize,
                "make the kernel's literal knobs tunables first (#define BLOCK 64, constexpr int TILE = 8, unroll "
                "counts; those whose names read as knobs), for a kernel without [tune]");
  cmd->add_option("--knob", o->knobs,
                  "a knob to parameterize, NAME or NAME=V1,V2,… (repeatable; implies --parameterize; names as "
                  "--list or the error show them)")
      ->allow_extra_args(false);  // one value per --knob: never the positional TASK KERNEL after it
  cmd->add_flag("--list", o->list, "print the space (tunables, values, defaults, admitted configurations) and stop");
  cmd->add_flag("--json", o->json_out, "print the result as JSON (schema lathe.tune/1; with --list lathe.tune-space/1)");
  cmd->add_flag("--quiet", o->quiet, "no progress lines on stderr");
  cmd->footer(
      "Every configuration the constraints admit is a bundle of its own (its tunables as -D defines), checked on\n"
      "every shape set and timed against the default configuration; the fastest is timed again in fresh processes\n"
      "and wins only when the gate decides it faster. Measured configurations are cached in the workspace: run it\n"
      "again (after a kill, with another strategy) and they are replayed, not timed.\n"
      "Exit code 0: the search finished; 1: it failed; 2: usage or setup.");
  cmd->callback([o, &common, &exit_code] { exit_code = run_tune(common, *o); });
}

}  // namespace lathe::cli
