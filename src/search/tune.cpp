#include "search/tune.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "core/hash.h"
#include "core/json.h"
#include "search/tune_sampler.h"
#include "spec/tune.h"

namespace lathe::search {
namespace {

const provenance tune_prov{"rules", "tune", true};

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

tune_point point_of(const tune_config& c, const kernel_bundle& k, const evaluation& e) {
  tune_point p;
  p.config = c;
  p.hash = k.hash;
  p.result = e.result;
  p.evaluation_id = e.id;
  if (e.result != outcome::ok) p.message = e.message;
  if (e.paired && (e.result == outcome::ok || e.result == outcome::unstable)) {
    p.speedup = e.paired->ratio;
    p.lo = e.paired->ci_low;
    p.hi = e.paired->ci_high;
  }
  return p;
}

}  // namespace

const char* to_string(tune_strategy s) {
  switch (s) {
    case tune_strategy::exhaustive: return "exhaustive";
    case tune_strategy::random: return "random";
    case tune_strategy::model: return "model";
    case tune_strategy::halving: return "halving";
  }
  return "?";
}

std::optional<tune_strategy> parse_tune_strategy(const std::string& s) {
  for (tune_strategy x : {tune_strategy::exhaustive, tune_strategy::random, tune_strategy::model, tune_strategy::halving})
    if (s == to_string(x)) return x;
  return std::nullopt;
}

std::vector<tune_config> tune_order(tune_strategy s, const std::vector<tune_config>& configs,
                                    const tune_config& defaults, uint64_t seed, int64_t max_evaluations) {
  std::vector<tune_config> rest;
  for (const auto& c : configs)
    if (c != defaults) rest.push_back(c);
  if (s == tune_strategy::random) {
    // std::shuffle's result depends on the library; a Fisher-Yates over mt19937_64's raw output
    // gives the same order for a seed everywhere.
    std::mt19937_64 rng(seed);
    for (size_t i = rest.size(); i > 1; --i) std::swap(rest[i - 1], rest[rng() % i]);
  }
  std::vector<tune_config> out{defaults};
  out.insert(out.end(), rest.begin(), rest.end());
  if (max_evaluations > 0 && out.size() > static_cast<size_t>(max_evaluations))
    out.resize(static_cast<size_t>(max_evaluations));
  return out;
}

std::string task_identity(const task& t) {
  // What a check or a time depends on: the task's fields (shapes, dtypes, tolerances,
  // distributions) and the files it names (reference, GPU reference, problem file).
  hasher h;
  h.add("lathe.tune.task/1").add(nlohmann::json(t).dump());
  for (const std::filesystem::path& rel : {t.reference, t.gpu_reference, t.problem}) {
    if (rel.empty()) continue;
    std::ifstream in(rel.is_absolute() ? rel : t.dir / rel, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    h.add(rel.string()).add(text.str());
  }
  return h.hex();
}

std::string tune_cache_key(const task& t, const target& tgt, const std::string& config_hash,
                           const std::string& default_hash, const std::string& settings) {
  return "tune/2/" + t.name + "/" + task_identity(t) + "/" + to_string(t.plat) + "/" + tgt.arch + "/" + tgt.device +
         "/" + config_hash + "/" + default_hash + "/" + settings;
}

namespace {

// One search's state: what it measured, the cache, the budget and the progress it reports.
class search_state {
 public:
  search_state(const task& t, const kernel_bundle& kernel, const kernel_bundle& def, const target& tgt,
               const tune_options& o, const tune_cache* cache, const std::function<void(const tune_progress&)>& progress,
               tune_result& r)
      : t_(t), kernel_(kernel), def_(def), tgt_(tgt), o_(o), cache_(cache), progress_(progress), r_(r),
        start_(now_seconds()) {}

  double elapsed() const { return now_seconds() - start_; }
  bool out_of_time() const { return o_.max_seconds > 0 && elapsed() >= o_.max_seconds; }

  // `c` measured against the default through `v` (the quick verifier on a halving's first rung),
  // or replayed from the cache under `settings`; appended to the points.
  result<void> measure(const tune_config& c, lineages::verifier& v, const std::string& settings, bool quick, size_t planned) {
    auto k = configure(kernel_, c);
    if (!k) return tl::unexpected(k.error());
    const std::string key = tune_cache_key(t_, tgt_, k->hash, def_.hash, settings);
    std::optional<tune_point> p = cache_ && cache_->get ? cache_->get(key) : std::nullopt;
    if (p && p->hash == k->hash) {
      p->cached = true;
      ++r_.replayed;
    } else if (o_.simulate) {
      return fail(errc::not_found, config_label(c) + (quick ? " (quick)" : "") +
                                       " was never measured with these settings: run the search without --simulate first");
    } else {
      const double t0 = now_seconds();
      const evaluation e = v.compare(t_, *k, def_, tune_prov);
      timed_seconds_ += now_seconds() - t0;
      p = point_of(c, *k, e);
      // An infrastructure failure says nothing about the configuration: not kept.
      if (cache_ && cache_->put && e.result != outcome::infra_error) cache_->put(key, *p);
      ++r_.timed;
    }
    p->quick = quick;
    r_.points.push_back(*p);
    // A quick measurement only chooses what is measured in full.
    if (!quick && passed_checks(*p) && (!r_.best || *p->speedup > *r_.points[*r_.best].speedup))
      r_.best = r_.points.size() - 1;
    if (progress_) {
      tune_progress pr;
      pr.point = &r_.points.back();
      pr.done = r_.points.size();
      pr.planned = planned;
      pr.elapsed = elapsed();
      if (r_.timed > 0)
        pr.eta = timed_seconds_ / static_cast<double>(r_.timed) * static_cast<double>(planned > pr.done ? planned - pr.done : 0);
      pr.best_speedup = r_.best ? *r_.points[*r_.best].speedup : 1.0;
      progress_(pr);
    }
    return {};
  }

 private:
  const task& t_;
  const kernel_bundle& kernel_;
  const kernel_bundle& def_;
  const target& tgt_;
  const tune_options& o_;
  const tune_cache* cache_;
  const std::function<void(const tune_progress&)>& progress_;
  tune_result& r_;
  double start_;
  double timed_seconds_ = 0;
};

// Successive halving over two fidelities: a random sample of the space measured quickly (the quick
// verifier: fewer processes and rounds), the best third of what passed measured again in full.
result<void> halving(search_state& st, const std::vector<tune_config>& admitted, const tune_space& space,
                     lineages::verifier& v, const tune_options& o, tune_result& r) {
  if (o.quick == nullptr) return fail(errc::internal, "successive halving needs a quick verifier");
  constexpr size_t eta = 3;
  // Rung 0's size: the whole space, or what the budget leaves room for with its survivors.
  size_t n0 = admitted.size() - 1;
  if (o.max_evaluations > 0) n0 = std::min(n0, static_cast<size_t>(o.max_evaluations - 1) * eta / (eta + 1));
  const auto order = tune_order(tune_strategy::random, admitted, space.defaults, o.seed, static_cast<int64_t>(n0 + 1));
  const size_t planned = 1 + n0 + (n0 + eta - 1) / eta;
  for (size_t i = 1; i < order.size(); ++i) {
    if (st.out_of_time()) {
      r.stop = "time budget";
      return {};
    }
    if (auto m = st.measure(order[i], *o.quick, o.quick_settings, true, planned); !m) return m;
  }
  std::vector<const tune_point*> passed;
  for (const auto& p : r.points)
    if (p.quick && passed_checks(p)) passed.push_back(&p);
  std::stable_sort(passed.begin(), passed.end(), [](const tune_point* a, const tune_point* b) { return *a->speedup > *b->speedup; });
  std::vector<tune_config> survivors;
  for (size_t i = 0; i < passed.size() && i < (n0 + eta - 1) / eta; ++i) survivors.push_back(passed[i]->config);
  for (const auto& c : survivors) {
    if (st.out_of_time()) {
      r.stop = "time budget";
      return {};
    }
    if (auto m = st.measure(c, v, o.settings, false, planned); !m) return m;
  }
  return {};
}

}  // namespace

result<tune_result> tune(const task& t, const kernel_bundle& kernel, const target& tgt, lineages::verifier& v,
                         const tune_options& o, const tune_cache* cache,
                         const std::function<void(const tune_progress&)>& progress) {
  const tune_space& space = kernel.manifest.tune;
  if (space.empty())
    return fail(errc::invalid_argument, kernel.name + " declares no tunables: add a [tune] section to its kernel.toml "
                                                      "(docs/tune.md)");
  auto space_of = enumerate_configs(space, t, tgt);
  if (!space_of) return tl::unexpected(space_of.error());
  auto def = configure(kernel, space.defaults);
  if (!def) return tl::unexpected(def.error());

  tune_result r;
  r.defaults = space.defaults;
  r.default_hash = def->hash;
  r.admitted = space_of->configs.size();
  r.refused = space_of->refused;
  r.refused_count = space_of->refused_count;
  r.winner = space.defaults;
  search_state st(t, kernel, *def, tgt, o, cache, progress, r);

  // The default: checked (not timed against itself); nothing is tuned against a kernel that fails.
  // A simulation runs no gate at all.
  evaluation checked;
  if (!o.simulate) checked = v.check(t, *def, *def, tune_prov);
  if (checked.result != outcome::ok)
    return fail(errc::invalid_argument, "the default configuration " + config_label(space.defaults) + " does not pass the gate (" +
                                            std::string(lathe::to_string(checked.result)) + "): " + checked.message);
  tune_point first = point_of(space.defaults, *def, checked);
  first.speedup = first.lo = first.hi = 1.0;
  r.points.push_back(first);

  r.stop = "space exhausted";
  if (o.max_evaluations > 0 && static_cast<size_t>(o.max_evaluations) < space_of->configs.size())
    r.stop = "evaluation budget";
  if (o.strategy == tune_strategy::halving) {
    if (auto h = halving(st, space_of->configs, space, v, o, r); !h) return tl::unexpected(h.error());
  } else {
    auto sampler = o.strategy == tune_strategy::model
                       ? detail::model_sampler(space, space_of->configs, o.seed, o.max_evaluations)
                       : detail::ordered_sampler(tune_order(o.strategy, space_of->configs, space.defaults, o.seed,
                                                            o.max_evaluations));
    while (auto c = sampler->next(r.points)) {
      if (st.out_of_time()) {
        r.stop = "time budget";
        break;
      }
      if (auto m = st.measure(*c, v, o.settings, false, sampler->planned()); !m) return tl::unexpected(m.error());
    }
  }

  // The crown: the fastest measured in full against the default again, in fresh processes; only a
  // decided "faster" replaces the default.
  if (r.best && *r.points[*r.best].speedup > 1.0 && !o.simulate) {
    auto k = configure(kernel, r.points[*r.best].config);
    if (!k) return tl::unexpected(k.error());
    r.crown = v.compare(t, *k, *def, tune_prov);
    if (lineages::faster(*r.crown)) {
      r.winner = r.points[*r.best].config;
      r.improved = true;
    }
  }
  r.seconds = st.elapsed();
  return r;
}

}  // namespace lathe::search
