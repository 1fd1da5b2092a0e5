// lathe-mock-model: a deterministic stand-in for a model, run by the `command` provider
// (llm/command.h): the prompt on stdin, the reply on stdout, the kernel bundle as the working
// directory. It answers every operation of docs/proposer.md with real code and, at set rates,
// with the faults a model makes, so that tests exercise lathe's gate, checks and repair rounds on
// code no test wrote. Same prompt and seed: the same reply, byte for byte.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <string>

#include "answers.h"
#include "options.h"
#include "prompt_reader.h"
#include "reply.h"

namespace {

using namespace lathe::mock;

const char* description = R"(A deterministic mock model for lathe's `command` provider.

Reads a prompt on stdin (docs/proposer.md: `lathe-operation: <op> v<N>` opens the user
message), writes one JSON reply in a ```json fence on stdout, and works on the kernel bundle in
the working directory (or the one the prompt shows). Notes on what it did go to stderr.

Exit status: 0 a reply was written (a refusal or a deliberate fault included); 1 internal error;
2 bad command line; 3 the prompt has no lathe-operation line or names an unknown operation;
4 the operation needs a kernel and there is none; 5 files mode could not write a file.)";

answer_result dispatch(const context& c) {
  const std::string& op = c.p.operation;
  // A v3 prompt whose `## language` is modelnew asks for a KernelBench ModelNew file.
  if (c.p.language == "modelnew" && (op == "mutate" || op == "materialize" || op == "repair"))
    return answer_modelnew(c);
  if (op == "propose_backward") return answer_backward(c);
  if (op == "rederive_forward") return answer_forward(c);
  if (op == "audit_features") return answer_audit(c);
  if (op == "abstract_card") return answer_card(c);
  if (op == "materialize") return answer_materialize(c);
  if (op == "repair") return answer_repair(c);
  if (op == "seed_baseline") return answer_seed(c);
  if (op == "rank_paths") return answer_rank(c);
  return answer_mutate(c);
}

int run(int argc, char** argv) {
  options opt;
  std::string mode = "blocks", kind;
  CLI::App app(description, "lathe-mock-model");
  app.add_option("--seed", opt.seed, "seed of every choice (default 0)");
  app.add_option("--wrong-rate", opt.wrong_rate,
                 "fraction of code-writing answers that compute a wrong result (and of audits "
                 "that cite a line holding no code)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--bad-edit-rate", opt.bad_edit_rate,
                 "fraction of answers whose edit does not apply (SEARCH text not in the file)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--invalid-rate", opt.invalid_rate,
                 "fraction of replies that break their schema (missing key, wrong type, "
                 "non-registry feature name)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--edit-mode", mode,
                 "blocks: SEARCH/REPLACE in the reply's `edits`; files: edit the working "
                 "directory's files and leave `edits` empty")
      ->check(CLI::IsMember({"blocks", "files"}));
  app.add_option("--wrong-kind", kind,
                 "the kind of a wrong result when it applies: bound, store or constant (default: "
                 "drawn)")
      ->check(CLI::IsMember({"bound", "store", "constant"}));
  app.add_option("--mutation-changes", opt.mutation_changes,
                 "mutate: draw 1 to N changes (additions and tunings), each applied to what the "
                 "previous left (default 1)")
      ->check(CLI::Range(1, 8));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? exit_ok : exit_usage;
  }
  opt.mode = mode == "files" ? edit_mode::files : edit_mode::blocks;
  if (!kind.empty()) opt.only_kind = parse_wrong_kind(kind);

  const std::string input{std::istreambuf_iterator<char>(std::cin),
                          std::istreambuf_iterator<char>()};
  auto p = read_prompt(input);
  if (!p) {
    std::cerr << "lathe-mock-model: " << p.error() << "\n";
    return exit_bad_prompt;
  }
  context c{*p, opt, chooser(opt.seed, p->hash), {}, std::filesystem::current_path()};
  // Every rate draws from its own stream whatever the others say, and a repair round is
  // answered correctly: bounded repair must be able to succeed.
  faults drawn;
  drawn.invalid = c.choose.for_purpose("invalid").chance(opt.invalid_rate);
  drawn.bad_edit = c.choose.for_purpose("bad_edit").chance(opt.bad_edit_rate);
  drawn.wrong = c.choose.for_purpose("wrong").chance(opt.wrong_rate);
  if (!p->repair)
    c.f = drawn;
  else
    std::cerr << "lathe-mock-model: repair round: answering " << p->operation
              << " again, without faults\n";

  auto a = dispatch(c);
  if (!a) {
    std::cerr << "lathe-mock-model: " << p->operation << ": " << a.error() << "\n";
    return exit_no_kernel;
  }
  return write_reply(c, std::move(*a), std::cout, std::cerr);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "lathe-mock-model: internal error: " << e.what() << "\n";
    return exit_internal;
  }
}
