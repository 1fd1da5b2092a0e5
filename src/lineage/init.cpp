#include "lineage/init.h"

#include <cstdio>

#include "features/detect.h"
#include "core/feature_registry.h"
#include "core/text.h"
#include "spec/bundle.h"
#include "spec/task_file.h"
#include "features/feature_audit.h"
#include "lineage/screening.h"

namespace lathe::lineages {
namespace {

std::string fixed(double x, int digits = 3) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}

enum class speed : uint8_t { fast, slow, noisy };

// Whether `e` shows expert speed against `base` (init.h, rule 3); `why` says it either way.
// `noisy`: it would clear the bar with the platform's floor margin, so only the A/A noise of
// this evaluation stands in the way — asked again, like an evaluation the gate calls unstable.
speed judge(const evaluation& e, const task& t, const kernel_bundle& base, std::string& why) {
  const auto r = ratio(e);
  const double m = margin(e, t.plat);
  const double floor = margin(evaluation{}, t.plat);
  const bool vendor = !base.manifest.libraries.empty();
  if (!r) {
    why = "no paired ratio was measured";
    return speed::slow;
  }
  // The gate's rule (verifier.h faster): the ratio's interval clears 1 + margin; against a
  // vendor library, on par counts: the gate did not decide it slower (nor left it undecided).
  const bool ok = vendor ? e.decision == decision::faster || e.decision == decision::same : faster(e);
  const std::string interval = e.paired ? cat(" [", fixed(e.paired->ci_low), ", ", fixed(e.paired->ci_high), "]") : "";
  why = cat("ratio ", fixed(*r), interval, " vs ", base.name,
            vendor ? " (a vendor library: on par counts): the gate decided " : ": the gate decided ",
            e.decision ? std::string(to_string(*e.decision)) : std::string("nothing"), " (faster: the interval's low end > ",
            fixed(1 + m), "; margin ", fixed(m), ")");
  if (ok) return speed::fast;
  // Only the noise stands in the way when the point ratio would clear the platform's floor
  // margin: asked again, like an evaluation the gate calls unstable.
  const bool near = vendor ? *r >= 1 - floor : *r > 1 + floor;
  return near ? speed::noisy : speed::slow;
}

// One paired comparison, asked again while the gate calls it unstable or the noise alone keeps
// it from a verdict. Every evaluation's id is kept: the check's evidence includes the noisy ones.
evaluation measure(verifier& v, const task& t, const kernel_bundle& k, const kernel_bundle& base,
                   const provenance& prov, int32_t retries, std::vector<int64_t>& ids, speed& verdict,
                   std::string& why) {
  evaluation e;
  for (int32_t i = 0; i <= retries; ++i) {
    e = v.compare(t, k, base, prov);
    if (e.id) ids.push_back(e.id);
    verdict = speed::noisy;
    why = "the gate called it unstable: " + e.message;
    if (e.result == outcome::unstable) continue;
    if (!passed(e)) return e;
    verdict = judge(e, t, base, why);
    if (verdict != speed::noisy) return e;
  }
  return e;
}

std::string gate_refusal(const evaluation& e, const std::string& when) {
  return cat("the gate refused it", when, ": ", std::string(to_string(e.result)),
             e.message.empty() ? "" : ": ", e.message);
}

// Registry names of the task's platform that no detector decides: the proposer's audit is asked.
std::vector<std::string> undetectable_names(const task& t) {
  std::vector<std::string> out;
  const std::string plat = to_string(t.plat);
  for (const auto& d : feature_registry()) {
    const std::string platforms(d.platforms);
    if (platforms.find(plat) == std::string::npos) continue;
    if (!agent::rules::has_detector(d.name)) out.emplace_back(d.name);
  }
  return out;
}

void audit_undetectable(const task& t, const kernel_bundle& k, agent::proposer& p,
                        const std::string& target, expert_check& c) {
  const std::vector<std::string> names = undetectable_names(t);
  if (names.empty()) return;
  agent::audit_request req;
  req.t = &t;
  req.kernel = k;
  req.features = names;
  req.target = target;
  auto audit = p.audit_features(req);
  if (!audit) {
    c.unknown_features = names;
    return;
  }
  for (const auto& name : names) {
    const agent::feature_verdict* v = nullptr;
    for (const auto& x : audit->verdicts)
      if (x.name == name) v = &x;
    if (!v || v->status == agent::presence::unknown) {
      c.unknown_features.push_back(name);
    } else if (v->status == agent::presence::present) {
      feature f;
      f.name = name;
      f.locus = v->locus;
      f.method = detection_method::proposer_audit;
      c.features.push_back(std::move(f));
    }
  }
}

}  // namespace

std::string target_summary(const task& t, const std::string& arch) {
  return cat("platform: ", to_string(t.plat), arch.empty() ? "" : "; architecture: ", arch);
}

result<kernel_bundle> task_baseline(const task& t) {
  auto path = find_kernel(t, t.baseline);
  if (!path)
    return fail(errc::not_found, cat("task ", t.name, ": baseline kernel '", t.baseline,
                                     "' not found under ", (t.dir / "kernels").string()));
  return load_bundle(*path);
}

result<expert_check> init_expert(const task& t, const kernel_bundle& expert, verifier& v,
                                 agent::proposer& p, store& db, const init_options& o) {
  if (t.role == task_role::heldout)
    return fail(errc::invalid_argument,
                "task " + t.name + " is held out: its kernels are admission and evaluation ground, never a lineage's "
                "end point (docs/tasks.md \"Roles\")");
  expert_check c;
  c.task = t.name;
  c.kernel = expert.hash;
  c.kernel_name = expert.name;
  if (o.repo) {
    std::error_code ec;
    if (!std::filesystem::is_directory(*o.repo, ec))
      return fail(errc::invalid_argument, "--repo " + o.repo->string() + ": not a directory");
    c.repo = std::filesystem::absolute(*o.repo, ec).string();
  }
  auto base = task_baseline(t);
  if (!base) return tl::unexpected(base.error());
  if (auto put = db.put_kernel(expert); !put) return tl::unexpected(put.error());

  const provenance prov{"human", "expert", false};
  auto finish = [&](bool accepted, std::string reason) -> result<expert_check> {
    c.accepted = accepted;
    c.reason = std::move(reason);
    auto id = db.add_expert_check(c);
    if (!id) return tl::unexpected(id.error());
    c.id = *id;
    return c;
  };

  // 1. It builds.
  auto object = v.object(t, expert);
  if (!object) return finish(false, "it does not build: " + object.error().message);

  // Features first (a build, no run): a refused expert's record shows what it held too.
  const agent::rules::detections found = v.features(t, expert);
  c.features = features_of(found);

  // 2. No library delegation.
  const screening s = screen_delegation(*object, t);
  c.findings = s.findings;
  if (s.refused()) return finish(false, "it delegates to a library the task does not allow: " + s.describe());

  // 3 and 4. The gate, and a re-measure in a fresh evaluation.
  std::string summary;
  if (base->hash == expert.hash) {
    const evaluation e = v.check(t, expert, *base, prov);
    if (e.id) c.evaluations.push_back(e.id);
    c.target = e.tgt.arch;
    if (!passed(e)) return finish(false, gate_refusal(e, ""));
    summary = "the task's baseline is the expert itself: there is no other kernel to confirm its speed against";
  } else {
    // The bar: the task's baseline, unless that is a vendor library (cuBLAS, OpenBLAS) and the
    // task has a naive kernel. A hand-written kernel at 46% of cuBLAS (gemm_cuda's, 66x its naive
    // kernel on the H200) is the expert of its lineage, whose other end is the naive kernel; the
    // library is compared with once, gated, and its ratio recorded, never a bar.
    const kernel_bundle* bar = &*base;
    std::optional<kernel_bundle> naive;
    std::string library_note;
    if (!base->manifest.libraries.empty())
      if (auto np = find_kernel(t, "naive"))
        if (auto nb = load_bundle(*np); nb && nb->hash != expert.hash) naive = std::move(*nb);
    if (naive) {
      const evaluation lib = v.compare(t, expert, *base, prov);
      if (lib.id) c.evaluations.push_back(lib.id);
      if (!correct(lib.result)) return finish(false, gate_refusal(lib, " against " + base->name));
      c.library_ratio = ratio(lib);
      library_note = cat("; against ", base->name, " (a vendor library, recorded, no bar): ",
                         c.library_ratio ? "ratio " + fixed(*c.library_ratio) : std::string("no ratio (") + std::string(to_string(lib.result)) + ")");
      bar = &*naive;
    }
    c.measured_against = bar->name;
    speed verdict = speed::slow;
    std::string why;
    const evaluation first = measure(v, t, expert, *bar, prov, o.unstable_retries, c.evaluations, verdict, why);
    c.target = first.tgt.arch;
    c.ratio = ratio(first);
    if (!correct(first.result)) return finish(false, gate_refusal(first, ""));
    if (verdict == speed::noisy) return finish(false, "the machine is too noisy to confirm its speed: " + why);
    if (verdict == speed::slow) return finish(false, "not an expert's speed: " + why);
    std::string why_again;
    const evaluation again =
        measure(v, t, expert, *bar, prov, o.unstable_retries, c.evaluations, verdict, why_again);
    c.remeasured_ratio = ratio(again);
    if (!correct(again.result)) return finish(false, gate_refusal(again, " on the re-measure"));
    if (verdict == speed::noisy)
      return finish(false, "the re-measure could not confirm its speed (too noisy): " + why_again);
    if (verdict == speed::slow)
      return finish(false, "the re-measure did not confirm its speed: " + why_again + " (first: " + why + ")");
    summary = "gate passed; " + why + "; re-measured in a fresh evaluation: " + why_again + library_note;
  }

  audit_undetectable(t, expert, p, target_summary(t, c.target), c);
  return finish(true, "accepted: " + summary);
}

}  // namespace lathe::lineages
