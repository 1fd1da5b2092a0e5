// The LLM proposer's operations (agent/llm_proposer.h): fields in, checked reply out.
#include "agent/llm_proposer.h"

#include "agent/audit.h"
#include "agent/kernel_text.h"
#include "agent/situation_text.h"
#include "core/feature_registry.h"
#include "spec/bundle.h"

namespace lathe::agent {
namespace {

using nlohmann::json;

failure fail_with(failure_kind k, std::string message, int32_t calls = 0) {
  return failure{k, std::move(message), calls};
}

std::string or_none(const std::string& s) {
  return s.empty() ? std::string(none_text) : s;
}

// The fields every template has.
prompt_fields base_fields(const task& t, const std::string& target) {
  return {{"task", task_text(t)}, {"target", or_none(target)}};
}

// Every request names its task; one without is a caller's mistake, said rather than crashed on.
tl::unexpected<failure> no_task() {
  return tl::unexpected(fail_with(failure_kind::unsupported, "the request has no task"));
}

std::string reply_string(const json& v, const char* key) {
  return v.contains(key) ? v.at(key).get<std::string>() : std::string();
}

// The contract (v2) of the kernel a reply edits, in its language from v3 on, with the `language`
// field (v3).
void contract_fields(prompt_fields& f, int32_t version, const task& t, const target& host, const kernel_bundle& k) {
  if (version < 2) return;
  const candidate_language l = language_of(k);
  f["contract"] = version >= 3 ? contract_text(t, host, l) : contract_text(t, host);
  if (version >= 3) f["language"] = language_text(l);
}

}  // namespace

kernel_bundle seed_bundle(const task& t) {
  kernel_bundle b;
  b.name = "seed";
  b.manifest.lang = t.plat == platform::cuda ? language::cuda : language::cpp;
  b.manifest.entry = t.plat == platform::cuda ? "kernel.cu" : "kernel.cpp";
  b.manifest.files = {b.manifest.entry};
  b.manifest.flags = {"-O3"};
  b.sources[b.manifest.entry] = seed_placeholder;
  b.hash = bundle_hash(b);
  return b;
}

sampling_settings default_sampling(operation op) {
  sampling_settings s;
  if (op == operation::mutate) {
    s.temperature = 0.6;
    s.top_p = 0.95;
  }
  return s;
}

std::map<operation, sampling_settings> sampling_from(const llm::config& cfg) {
  auto over = [](sampling_settings& s, const llm::sampling& by) {
    if (by.temperature) s.temperature = *by.temperature;
    if (by.top_p) s.top_p = *by.top_p;
    if (by.max_tokens) s.max_tokens = *by.max_tokens;
  };
  std::map<operation, sampling_settings> out;
  for (operation op : all_operations) {
    sampling_settings s = default_sampling(op);
    if (auto d = cfg.sampling_by.find("default"); d != cfg.sampling_by.end()) over(s, d->second);
    if (auto o = cfg.sampling_by.find(to_string(op)); o != cfg.sampling_by.end()) over(s, o->second);
    out[op] = s;
  }
  return out;
}

llm_proposer::llm_proposer(llm::provider& model, const prompt_library& prompts, llm_options options)
    : model_(model), prompts_(prompts), options_(options) {}

provenance llm_proposer::origin() const {
  return provenance{"llm", model_.name(), false};
}

std::vector<std::string> llm_proposer::field_names(operation op, int32_t version) {
  std::vector<std::string> f;
  switch (op) {
    case operation::propose_backward:
      f = {"task", "target", "kernel", "features", "action_prior", "rejected"};
      break;
    case operation::rederive_forward:
      f = {"task", "target", "kernel", "restore", "action", "rejected"};
      break;
    case operation::audit_features:
      f = {"task", "target", "kernel", "features"};
      break;
    case operation::abstract_card:
      f = {"task", "target", "step", "diff", "before", "after", "registry"};
      break;
    case operation::materialize:
      f = {"task", "target", "kernel", "features", "cards", "rejected"};
      break;
    case operation::repair:
      f = {"task", "target", "kernel", "goal", "outcome", "diagnostics"};
      break;
    case operation::seed_baseline:
      f = {"task", "target", "reference", "entry_features", "entry_file"};
      break;
    case operation::rank_paths:
      f = {"task", "target", "kernel", "features", "paths"};
      break;
    case operation::mutate:
      f = {"task", "target", "kernel", "inspirations", "direction", "rejected", "registry"};
      break;
  }
  if (version >= 2) {
    if (writes_code(op)) f.push_back("contract");
    if (op == operation::materialize || op == operation::mutate || op == operation::rank_paths)
      f.push_back("progress");
  }
  // v3: what the candidate is written in (a ModelNew search's prompts say so), and the feature
  // registry in apply-card prompts (a real model invented names without it: model-2026-12-02).
  if (version >= 3 && (op == operation::materialize || op == operation::mutate || op == operation::repair))
    f.push_back("language");
  if (version >= 3 && op == operation::materialize) f.push_back("registry");
  return f;
}

int32_t llm_proposer::version_for(operation op) const {
  int32_t best = 0;
  for (const auto& t : prompts_.all())
    if (t.id == to_string(op) && (options_.prompt_version <= 0 || t.version <= options_.prompt_version))
      best = std::max(best, t.version);
  return best;
}

op_result<llm_proposer::answer> llm_proposer::ask(operation op, const prompt_fields& fields,
                                                  const kernel_bundle* base,
                                                  const reply_check& extra) {
  auto tmpl = prompts_.find(to_string(op), version_for(op));
  if (!tmpl) return tl::unexpected(fail_with(failure_kind::unsupported, tmpl.error().message));
  auto rendered = render(**tmpl, fields);
  if (!rendered)
    return tl::unexpected(fail_with(failure_kind::unsupported, rendered.error().message));
  llm::request req = to_request(*rendered);
  const auto set = options_.sampling.find(op);
  const sampling_settings sampled = set != options_.sampling.end() ? set->second : default_sampling(op);
  req.temperature = sampled.temperature;
  req.top_p = sampled.top_p;
  req.max_tokens = sampled.max_tokens;

  // The edits of the reply the check accepted last: the one ask_json returns.
  std::optional<applied_edits> edited;
  ask_options o;
  o.max_repairs = options_.max_repairs;
  o.bundle = base;
  o.cancel = options_.cancel;
  o.check = [&](const json& value, const std::string& text) -> std::optional<reply_problem> {
    if (auto bad = unregistered_names(value))
      return reply_problem{feedback_kind::invalid_reply, *bad};
    if (extra)
      if (auto bad = extra(value, text)) return bad;
    // A declined step (docs/proposer.md "Replies"): action "none" and no edit anywhere. It is
    // an answer, not a broken reply: no repair round is spent on it.
    if (writes_code(op) && value.contains("action") && reply_string(value, "action") == "none" &&
        reply_string(value, "edits").empty() && !has_edit_blocks(text))
      return std::nullopt;
    if (writes_code(op) && base) {
      auto applied = apply_reply_edits(*base, reply_string(value, "edits"), text);
      if (!applied) return reply_problem{feedback_kind::edit_not_applied, applied.error().message};
      edited = std::move(*applied);
    }
    return std::nullopt;
  };
  auto got = ask_json(model_, std::move(req), reply_schema(op), o);
  if (!got) {
    const ask_failure& f = got.error();
    switch (f.what) {
      case ask_failure::kind::call:
        return tl::unexpected(fail_with(
            f.call.kind == llm::call_error::budget    ? failure_kind::budget
            : f.call.kind == llm::call_error::waiting ? failure_kind::waiting
                                                      : failure_kind::call,
            std::string(llm::to_string(f.call.kind)) + ": " + f.call.message, f.attempts));
      case ask_failure::kind::edit_not_applied:
        return tl::unexpected(fail_with(failure_kind::edit_not_applied,
                                        "the edits never applied: " + f.last_error, f.attempts));
      case ask_failure::kind::invalid:
        return tl::unexpected(
            fail_with(failure_kind::invalid_reply, "no valid reply: " + f.last_error, f.attempts));
    }
  }
  return answer{std::move(got->value), static_cast<int32_t>(got->calls.size()), std::move(edited)};
}

op_result<proposal> llm_proposer::write_code(operation op, const prompt_fields& fields,
                                             const kernel_bundle& base) {
  auto a = ask(op, fields, &base, {});
  if (!a) return tl::unexpected(a.error());
  if (!a->edited)
    return tl::unexpected(fail_with(failure_kind::refused,
                                    "the proposer declined: " + reply_string(a->value, "rationale"),
                                    a->calls));
  proposal p;
  p.kernel = std::move(a->edited->kernel);
  p.edits = std::move(a->edited->edits);
  p.action = reply_string(a->value, "action");
  p.locus = reply_string(a->value, "locus");
  p.features_removed = string_list(a->value, "removes");
  p.features_added = string_list(a->value, "adds");
  p.rationale = reply_string(a->value, "rationale");
  if (const std::string d = reply_string(a->value, "diagnosis"); !d.empty())
    p.rationale = "diagnosis: " + d + "\n" + p.rationale;
  if (op == operation::repair) p.action = "repair";
  if (op == operation::seed_baseline) p.action = "seed";
  p.prov = origin();
  p.calls = a->calls;
  return p;
}

// ---- the operations -------------------------------------------------------------------------

op_result<proposal> llm_proposer::propose_backward(const backward_request& r) {
  if (!r.t) return no_task();
  if (r.features.empty())
    return tl::unexpected(
        fail_with(failure_kind::refused, "the kernel has no verified feature to remove"));
  prompt_fields f = base_fields(*r.t, r.target);
  f["kernel"] = kernel_text(r.kernel);
  f["features"] = features_text(r.features);
  f["action_prior"] = list_text(r.action_prior);
  f["rejected"] = notes_text(r.rejected);
  if (version_for(operation::propose_backward) >= 2) f["contract"] = contract_text(*r.t, options_.host);
  return write_code(operation::propose_backward, f, r.kernel);
}

op_result<proposal> llm_proposer::rederive_forward(const forward_request& r) {
  if (!r.t) return no_task();
  if (!find_feature(r.restore.name))
    return tl::unexpected(fail_with(failure_kind::unsupported,
                                    "'" + r.restore.name + "' is not a registered feature name"));
  prompt_fields f = base_fields(*r.t, r.target);
  f["kernel"] = kernel_text(r.predecessor);
  f["restore"] = feature_text(r.restore) + "\ndefinition: " + definition_text(r.restore.name);
  f["action"] = or_none(r.action);
  f["rejected"] = notes_text(r.rejected);
  if (version_for(operation::rederive_forward) >= 2) f["contract"] = contract_text(*r.t, options_.host);
  return write_code(operation::rederive_forward, f, r.predecessor);
}

op_result<audit_result> llm_proposer::audit_features(const audit_request& r) {
  if (!r.t) return no_task();
  std::vector<std::string> defs;
  for (const auto& name : r.features) {
    if (!find_feature(name))
      return tl::unexpected(
          fail_with(failure_kind::unsupported, "'" + name + "' is not a registered feature name"));
    defs.push_back(definition_text(name));
  }
  prompt_fields f = base_fields(*r.t, r.target);
  f["kernel"] = kernel_text(r.kernel, true);
  f["features"] = list_text(defs);
  auto a = ask(operation::audit_features, f, &r.kernel, {});
  if (!a) return tl::unexpected(a.error());
  audit_result out = verify_audit(r.kernel, r.features, verdicts_of(a->value));
  out.calls = a->calls;
  out.prov = origin();
  return out;
}

op_result<skill_card> llm_proposer::abstract_card(const card_request& r) {
  if (!r.t) return no_task();
  prompt_fields f = base_fields(*r.t, r.target);
  f["step"] = step_text(r.step);
  f["diff"] = or_none(r.step.edit);
  f["before"] = kernel_text(r.before);
  f["after"] = kernel_text(r.after);
  f["registry"] = registry_text(r.t->plat);
  auto a = ask(operation::abstract_card, f, &r.after, {});
  if (!a) return tl::unexpected(a.error());
  return card_of(a->value, carrier_key(r.after.manifest.lang, r.t->plat));
}

op_result<proposal> llm_proposer::materialize(const materialize_request& r) {
  if (!r.t) return no_task();
  if (r.cards.empty()) return tl::unexpected(fail_with(failure_kind::refused, "no card to apply"));
  const int32_t version = version_for(operation::materialize);
  const bool v2 = version >= 2;
  // v3: a ModelNew is shown the card's C++ (CUDA) carrier, the code its inline extension takes,
  // and how to carry it there (card_carry_text).
  const candidate_language kernel_lang = version >= 3 ? language_of(r.kernel) : candidate_language::c_abi;
  const language shown = kernel_lang == candidate_language::c_abi ? r.kernel.manifest.lang
                         : r.t->plat == platform::cuda             ? language::cuda
                                                                   : language::cpp;
  std::string cards;
  for (size_t i = 0; i < r.cards.size(); ++i) {
    const std::string carry = card_carry_text(r.cards[i], kernel_lang, r.t->plat);
    cards += (i ? "\n\n" : "") + std::string("--- card ") + std::to_string(i + 1) + " of " +
             std::to_string(r.cards.size()) +
             (r.cards[i].id.empty() ? "" : " (" + r.cards[i].id + ")") + " ---\n" +
             card_text(r.cards[i], shown) +
             (v2 ? "\n" + card_evidence_text(r.cards[i]) : std::string()) + (carry.empty() ? "" : "\n" + carry);
  }
  prompt_fields f = base_fields(*r.t, r.target);
  f["kernel"] = kernel_text(r.kernel);
  f["features"] = features_text(r.features);
  f["cards"] = cards;
  f["rejected"] = notes_text(r.rejected);
  contract_fields(f, version, *r.t, options_.host, r.kernel);
  if (v2) f["progress"] = progress_text(r.progress);
  if (version >= 3) f["registry"] = registry_text(r.t->plat);
  return write_code(operation::materialize, f, r.kernel);
}

op_result<proposal> llm_proposer::repair(const repair_request& r) {
  if (!r.t) return no_task();
  prompt_fields f = base_fields(*r.t, r.target);
  f["kernel"] = kernel_text(r.failed);
  f["goal"] = or_none(r.goal);
  f["outcome"] = std::string(to_string(r.verdict));
  f["diagnostics"] = or_none(clipped(r.diagnostics, options_.max_diagnostics_bytes));
  contract_fields(f, version_for(operation::repair), *r.t, options_.host, r.failed);
  return write_code(operation::repair, f, r.failed);
}

op_result<proposal> llm_proposer::seed_baseline(const seed_request& r) {
  if (!r.t) return no_task();
  const kernel_bundle start = seed_bundle(*r.t);
  std::vector<std::string> defs;
  for (const auto& name : r.entry_features) defs.push_back(definition_text(name));
  prompt_fields f = base_fields(*r.t, r.target);
  f["reference"] = or_none(r.reference_source);
  f["entry_features"] = list_text(defs);
  f["entry_file"] = start.manifest.entry;
  if (version_for(operation::seed_baseline) >= 2) f["contract"] = contract_text(*r.t, options_.host);
  return write_code(operation::seed_baseline, f, start);
}

op_result<ranking> llm_proposer::rank_paths(const rank_request& r) {
  if (!r.t) return no_task();
  // Nothing to choose between: no call is spent on it.
  if (r.paths.size() < 2) {
    ranking out;
    for (const auto& p : r.paths) out.order.push_back(p.id), out.reasons.push_back("the only path");
    out.prov = origin();
    return out;
  }
  const bool v2 = version_for(operation::rank_paths) >= 2;
  std::vector<std::string> lines;
  for (const auto& p : r.paths)
    lines.push_back(p.id + ": " + p.summary + (v2 && !p.evidence.empty() ? "\n  " + p.evidence : std::string()));
  prompt_fields f = base_fields(*r.t, r.target);
  f["kernel"] = kernel_text(r.kernel);
  f["features"] = features_text(r.features);
  std::string paths;
  for (const auto& l : lines) paths += (paths.empty() ? "" : "\n") + l;
  f["paths"] = paths;
  if (v2) f["progress"] = progress_text(r.progress);
  const auto& given = r.paths;
  auto check = [&given](const json& value, const std::string&) -> std::optional<reply_problem> {
    if (auto bad = ranking_problem(value, given))
      return reply_problem{feedback_kind::invalid_reply, *bad};
    return std::nullopt;
  };
  auto a = ask(operation::rank_paths, f, &r.kernel, check);
  if (!a) return tl::unexpected(a.error());
  ranking out = ranking_of(a->value);
  out.calls = a->calls;
  out.prov = origin();
  return out;
}

op_result<proposal> llm_proposer::mutate(const mutate_request& r) {
  if (!r.t) return no_task();
  std::string inspirations;
  for (size_t i = 0; i < r.inspirations.size(); ++i)
    inspirations += (i ? "\n\n" : "") + std::string("--- inspiration ") + std::to_string(i + 1) +
                    " ---\n" + kernel_text(r.inspirations[i]);
  prompt_fields f = base_fields(*r.t, r.target);
  f["kernel"] = kernel_text(r.parent);
  f["inspirations"] = or_none(inspirations);
  f["direction"] = or_none(r.direction);
  f["rejected"] = notes_text(r.rejected);
  f["registry"] = registry_text(r.t->plat);
  const int32_t version = version_for(operation::mutate);
  contract_fields(f, version, *r.t, options_.host, r.parent);
  if (version >= 2) f["progress"] = progress_text(r.progress);
  return write_code(operation::mutate, f, r.parent);
}

}  // namespace lathe::agent
