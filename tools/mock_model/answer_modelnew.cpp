// mutate, materialize and repair when the search writes KernelBench ModelNew files (the prompt's
// `## language` is `modelnew`): one answer, the fused ModelNew of modelnew_file.h as a WHOLE of
// the entry file. Mechanical, not a model's work: a forward the mock cannot read is refused with
// the reason, and a file that already is the mock's answer is refused too (there is nothing else
// the mock knows to try). A materialize carries the cards' techniques into the extension's loop
// (issue 44, item 3): the registry names their intents give, among those the loop can have, and
// only those; a card the loop cannot carry is refused.
#include <algorithm>
#include <cctype>

#include "answers.h"
#include "modelnew_file.h"
#include "py_chain.h"
#include "py_problem.h"

namespace lathe::mock {
namespace {

std::string join_names(const std::vector<std::string>& xs) {
  std::string out;
  for (const auto& x : xs) out += (out.empty() ? "" : ", ") + x;
  return out;
}

// What the file claims, each present in the C++ it writes: `#pragma omp parallel for simd` over
// `__restrict__` pointers.
const std::vector<std::string>& claimed = loop_techniques();

bool is_id_char(char ch) {
  return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.' || ch == ':';
}

// The materialize prompt's cards (agent/llm_proposer.cpp: "--- card 1 of 2 (<id>) ---", then the
// card's text; the `registry` section follows the cards in v3 and is no part of them).
struct cards_asked {
  std::vector<std::string> ids;
  std::vector<std::string> named;  // registry names of the cards' intents, else of their whole text
};

// The loop as the rationale says it.
std::string loop_words(const std::vector<std::string>& techniques) {
  if (techniques.empty()) return "OpenMP parallel for simd over __restrict__ pointers, threads from 32768 elements on";
  const auto has = [&](const char* t) { return std::find(techniques.begin(), techniques.end(), t) != techniques.end(); };
  std::vector<std::string> parts;
  if (has("omp_parallel")) parts.push_back(has("simd") ? "OpenMP parallel for simd, threads from 32768 elements on"
                                                       : "OpenMP parallel for, threads from 32768 elements on");
  if (has("simd") && !has("omp_parallel")) parts.push_back("omp simd on one thread");
  if (has("restrict")) parts.push_back("over __restrict__ pointers");
  return join_names(parts);
}

cards_asked read_cards(const prompt& p) {
  std::string text = field(p.user, "cards", p.operation).value_or("");
  if (const size_t reg = text.find("\n## registry"); reg != std::string::npos) text.resize(reg);
  cards_asked out;
  std::string intents;
  for (const auto& line : split_lines(text)) {
    if (line.rfind("--- card ", 0) == 0) {
      const size_t open = line.find(" ("), close = line.rfind(") ---");
      if (open != std::string::npos && close != std::string::npos && close > open + 2) {
        std::string id = line.substr(open + 2, close - open - 2);
        if (std::all_of(id.begin(), id.end(), is_id_char)) out.ids.push_back(id);
      }
    }
    if (line.rfind("intent:", 0) == 0) intents += line + "\n";
  }
  out.named = registry_names_in(intents);
  if (out.named.empty()) out.named = registry_names_in(text);
  return out;
}

}  // namespace

answer_result answer_modelnew(const context& c) {
  auto kernel = operation_kernel(c.p, c.dir, true);
  if (!kernel) return tl::unexpected(kernel.error());
  const std::string& op = c.p.operation;
  std::string entry = kernel->entry;
  if (!kernel->files.count(entry))
    for (const auto& [path, text] : kernel->files)
      if (path.ends_with(".py")) {
        entry = path;
        break;
      }
  if (!entry.ends_with(".py") || !kernel->files.count(entry))
    return refusal(c.p, "the language is modelnew but the kernel has no Python entry file", claimed);
  const std::string& text = kernel->files.at(entry);

  auto problem = read_problem(text);
  if (!problem) return refusal(c.p, "cannot read the problem in " + entry + ": " + problem.error(), claimed);
  auto chain = read_chain(*problem);
  if (!chain)
    return refusal(c.p,
                   "the mock fuses only an elementwise chain (relu, tanh, sigmoid, gelu, leaky_relu, "
                   "+ - * / by scalars) over forward's input or one nn.Linear of it: " +
                       chain.error(),
                   claimed);

  answer a;
  modelnew_options o;
  // A CUDA problem (the target names the device): the chain as a CUDA kernel; the cards' CPU
  // loop techniques have no place in it.
  const std::string target = field(c.p.user, "target", c.p.operation).value_or("");
  o.cuda = target_is_cuda(target);
  if (op == "materialize" && o.cuda)
    return refusal(c.p, "the mock carries cards only into a CPU extension's loop; this problem runs on CUDA", claimed);
  if (op == "materialize") {
    const cards_asked cards = read_cards(c.p);
    for (const auto& t : claimed)
      if (std::find(cards.named.begin(), cards.named.end(), t) != cards.named.end()) o.techniques.push_back(t);
    if (o.techniques.empty())
      return refusal(c.p,
                     "the mock carries only omp_parallel, simd and restrict into a ModelNew's extension loop; "
                     "the cards name " +
                         (cards.named.empty() ? std::string("no registry feature") : join_names(cards.named)),
                     claimed);
    o.cards = cards.ids;
  }
  if (c.f.wrong) {
    // The one slip a ModelNew gets: wrong.h's `store` (whatever --wrong-kind asks).
    o.wrong = true;
    a.notes.push_back("wrong answer (store) at fused_forward: every output scaled by 1.0625");
  }
  const std::string file = modelnew_file(*problem, *chain, o);
  const bool mine = text.find(modelnew_marker) != std::string::npos;
  if (file == text)
    return refusal(c.p,
                   op == "repair"
                       ? "the file is the mock's own fused ModelNew as the mock writes it: the "
                         "failure is not one of the mock's slips, and the mock has nothing else to "
                         "try"
                       : "the kernel already is the mock's fused ModelNew: the mock knows no "
                         "other change to it",
                   claimed);

  a.has_edits = true;
  a.whole = true;
  a.before = *kernel;
  a.after = *kernel;
  a.after.files[entry] = file;
  const std::string chain_text =
      describe(chain->expr, chain->linear.empty() ? problem->input
                                                  : "self." + chain->linear + "(" + problem->input + ")");
  const std::string what =
      "Model.forward's elementwise chain " + chain_text +
      (o.cuda ? std::string(" computed in one CUDA kernel, a thread per element (load_inline, cuda_sources)")
              : " computed in one C++ loop over the elements (load_inline; " + loop_words(o.techniques) + ")") +
      (chain->linear.empty() ? "" : "; the Linear self." + chain->linear + " stays torch's") + ".";
  a.notes.push_back("fused ModelNew of " + entry + ": " + chain_text);
  if (op == "repair") {
    a.body["diagnosis"] =
        mine ? "the mock's fused ModelNew was altered (a slip such as a scaled store): written "
               "again from the problem"
             : "the kernel is not the mock's fused ModelNew: written as the mock writes it";
    a.body["rationale"] = what;
    return a;
  }
  a.body["action"] = "fuse_elementwise";
  a.body["locus"] = "ModelNew.forward";
  a.body["adds"] = o.cuda ? std::vector<std::string>{"restrict"} : o.techniques.empty() ? claimed : o.techniques;
  if (op == "mutate") a.body["removes"] = nlohmann::ordered_json::array();
  a.body["rationale"] = what;
  if (!o.techniques.empty()) {
    a.body["action"] = "apply_card_in_extension";
    a.body["rationale"] = what + " Carries " + (o.cards.empty() ? std::string("the card") : "card " + join_names(o.cards)) +
                          " into the extension's loop: " + join_names(o.techniques) + " only.";
    a.notes.push_back("cards carried: " + join_names(o.techniques));
  }
  return a;
}

}  // namespace lathe::mock
