#include <algorithm>
#include <cmath>

#include "gate/build.h"
#include "gate/paired.h"
#include "verify/verifier.h"

namespace lathe::lineages {

// The gate's own epsilon where it recorded one (gate/paired.h decide: one rule for every verb).
double margin(const evaluation& e, platform p) {
  if (e.epsilon) return *e.epsilon;
  const double floor = gate::decision_floor(p);
  return e.aa ? gate::decision_epsilon(*e.aa, floor) : floor;
}

double margin_floor(platform p) { return gate::decision_floor(p); }

bool passed(const evaluation& e) { return e.result == outcome::ok; }

bool faster(const evaluation& e) { return passed(e) && e.decision == decision::faster; }

std::optional<double> ratio(const evaluation& e) {
  if (!e.paired || !(e.paired->ratio > 0)) return std::nullopt;
  return e.paired->ratio;
}

evaluation gate_verifier::run(const task& t, const kernel_bundle& c, const kernel_bundle& b,
                              const provenance& prov, bool time) {
  gate::gate_config cfg = hooks_.config(t, time);
  gate::gate_request req;
  req.t = &t;
  req.candidate = c;
  req.baseline = b;
  req.prov = prov;
  evaluation e = gate::evaluate(cfg, req);
  ++evaluations_;
  if (hooks_.record) (void)hooks_.record(c, e);  // a store failure must not lose the verdict
  return e;
}

evaluation gate_verifier::check(const task& t, const kernel_bundle& k, const kernel_bundle& baseline,
                                const provenance& prov) {
  return run(t, k, baseline, prov, false);
}

evaluation gate_verifier::compare(const task& t, const kernel_bundle& candidate,
                                  const kernel_bundle& baseline, const provenance& prov) {
  return run(t, candidate, baseline, prov, true);
}

result<std::filesystem::path> gate_verifier::object(const task& t, const kernel_bundle& k) {
  const gate::gate_config cfg = hooks_.config(t, false);
  auto built = gate::build(k, gate::resolved_isa(k, cfg.tgt), cfg.tools, cfg.cache_dir,
                           gate::build_kind::kernel);
  if (!built) return tl::unexpected(built.error());
  if (!built->ok) return fail(errc::unsupported, "the kernel does not build:\n" + built->log);
  return built->object;
}

agent::rules::detections gate_verifier::features(const task& t, const kernel_bundle& k) {
  const gate::gate_config cfg = hooks_.config(t, false);
  auto built = gate::build(k, gate::resolved_isa(k, cfg.tgt), cfg.tools, cfg.cache_dir,
                           gate::build_kind::kernel);
  agent::rules::artifact a;
  std::string why;
  if (!built)
    why = built.error().message;
  else if (!built->ok)
    why = "the kernel does not build";
  else {
    a.ptx = built->ptx;
    if (k.manifest.lang == language::cpp) a.object = built->object;
  }
  agent::rules::detections d = agent::rules::detect_features(k, a);
  if (!why.empty()) d.notes.insert(d.notes.begin(), "no artifact examined: " + why);
  return d;
}

}  // namespace lathe::lineages
