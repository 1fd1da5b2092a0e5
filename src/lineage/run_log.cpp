#include "lineage/run_log.h"

#include <nlohmann/json.hpp>

#include "core/json_lineage.h"

namespace lathe::lineages {
namespace {

json provenance_json(const provenance& p) {
  json j;
  to_json(j, p);
  return j;
}

json features_json(const std::vector<feature>& fs) {
  json out = json::array();
  for (const auto& f : fs) {
    json x;
    to_json(x, f);
    out.push_back(std::move(x));
  }
  return out;
}

std::vector<feature> features_from(const json& j) {
  std::vector<feature> out;
  for (const auto& f : j) {
    feature x;
    from_json(f, x);
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace

std::string started_body(const std::string& task, const kernel_bundle& expert, int64_t check_id,
                         const std::string& lineage_id, const std::vector<feature>& features) {
  return json{{"task", task},
              {"expert", {{"name", expert.name}, {"hash", expert.hash}}},
              {"check", check_id},
              {"lineage", lineage_id},
              {"features", features_json(features)}}
      .dump();
}

std::string rejected_body(const rejected_attempt& a) {
  return json{{"step", a.step},       {"attempt", a.attempt},     {"stage", a.stage},
              {"summary", a.summary}, {"outcome", a.outcome},     {"kernel", a.kernel},
              {"evaluations", a.evaluations}, {"provenance", provenance_json(a.prov)}}
      .dump();
}

std::string accepted_body(const accepted_step& s) {
  json tr;
  to_json(tr, s.tr);
  return json{{"step", s.step},
              {"transition", tr},
              {"claimed", features_json(s.claimed)},
              {"predecessor", {{"name", s.predecessor_name}, {"hash", s.tr.from_kernel}}},
              {"features", features_json(s.features)},
              {"notes", s.notes}}
      .dump();
}

std::string backward_end_body(const backward_end& e) {
  return json{{"termination", to_string(e.term)}, {"reason", e.reason}, {"remaining_features", e.remaining}}
      .dump();
}

std::string forward_body(int32_t step, const forward_result& f, const std::string& invocation) {
  json r;
  to_json(r, f);
  return json{{"step", step}, {"result", r}, {"invocation", invocation}}.dump();
}

std::vector<rejected_attempt> walk_state::pending() const {
  const int32_t current = static_cast<int32_t>(accepted.size()) + 1;
  std::vector<rejected_attempt> out;
  for (const auto& r : rejected)
    if (r.step == current) out.push_back(r);
  return out;
}

result<walk_state> replay(const std::vector<run_event>& events) {
  walk_state s;
  for (const auto& e : events) {
    s.last_seq = e.seq;
    try {
      const json j = json::parse(e.json);
      if (e.kind == event_kind::started) {
        s.started = true;
        s.check_id = j.at("check").get<int64_t>();
        s.expert_features = features_from(j.at("features"));
      } else if (e.kind == event_kind::backward_rejected) {
        rejected_attempt a;
        a.step = j.at("step").get<int32_t>();
        a.attempt = j.at("attempt").get<int32_t>();
        a.stage = j.at("stage").get<std::string>();
        a.summary = j.at("summary").get<std::string>();
        a.outcome = j.value("outcome", "");
        a.kernel = j.value("kernel", "");
        a.evaluations = j.value("evaluations", std::vector<int64_t>{});
        if (j.contains("provenance")) from_json(j.at("provenance"), a.prov);
        s.rejected.push_back(std::move(a));
      } else if (e.kind == event_kind::backward_accepted) {
        accepted_step a;
        a.step = j.at("step").get<int32_t>();
        if (a.step != static_cast<int32_t>(s.accepted.size()) + 1)
          return fail(errc::parse_error, "run event #" + std::to_string(e.seq) + ": step " +
                                             std::to_string(a.step) + " accepted out of order");
        from_json(j.at("transition"), a.tr);
        a.predecessor_name = j.at("predecessor").value("name", "");
        a.claimed = features_from(j.at("claimed"));
        a.features = features_from(j.at("features"));
        a.notes = j.value("notes", std::vector<std::string>{});
        s.accepted.push_back(std::move(a));
      } else if (e.kind == event_kind::backward_finished) {
        backward_end b;
        const std::string term = j.at("termination").get<std::string>();
        for (termination t : {termination::complete, termination::step_limit,
                              termination::rejection_limit, termination::unknown})
          if (term == to_string(t)) b.term = t;
        b.reason = j.at("reason").get<std::string>();
        b.remaining = j.value("remaining_features", std::vector<std::string>{});
        s.backward_done = std::move(b);
      } else if (e.kind == event_kind::forward) {
        forward_result f;
        from_json(j.at("result"), f);
        const int32_t step = j.at("step").get<int32_t>();
        s.forwards[step] = std::move(f);
        s.invocations[step] = j.value("invocation", "");
      } else if (e.kind == event_kind::finished) {
        s.finished = true;
      }
    } catch (const std::exception& x) {
      return fail(errc::parse_error, "run event #" + std::to_string(e.seq) + " (" + e.kind + "): " + x.what());
    }
  }
  return s;
}

}  // namespace lathe::lineages
