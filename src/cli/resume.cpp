#include "cli/resume.h"

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string_view>
#include <system_error>

namespace fs = std::filesystem;

namespace lathe::cli {

result<run> run_to_resume(context& ctx, const std::string& id, run_kind kind) {
  return ctx.db->run_to_resume(id, kind);
}

result<nlohmann::json> stored_args(const run& r, const std::string& task, const std::string& verb) {
  nlohmann::json a = nlohmann::json::parse(r.args, nullptr, false);
  if (!a.is_object()) return fail(errc::parse_error, "run '" + r.id + "' has no readable arguments");
  if (!task.empty() && task != a.value("task", task))
    return fail(errc::invalid_argument, "run '" + r.id + "' " + verb + " " + a.value("task", std::string()) + ", not " + task);
  return a;
}

result<std::optional<fs::path>> batch_folder(const std::string& propose_only, const std::string& gate_batch,
                                             std::string& resume) {
  if (!propose_only.empty() && !gate_batch.empty())
    return fail(errc::invalid_argument, "--propose-only starts a batch run and --gate-batch continues one: give one of them");
  if (!propose_only.empty()) return std::optional<fs::path>(fs::absolute(propose_only));
  if (gate_batch.empty()) return std::optional<fs::path>();
  const fs::path folder = fs::absolute(gate_batch);
  std::ifstream in(folder / "run.txt");
  std::string id;
  if (!(in >> id))
    return fail(errc::invalid_argument,
                folder.string() + "/run.txt names no run: --gate-batch continues a run begun with --propose-only DIR");
  if (!resume.empty() && resume != id)
    return fail(errc::invalid_argument, "--resume " + resume + " but " + folder.string() + " belongs to run " + id);
  resume = id;
  return std::optional<fs::path>(folder);
}

void write_batch_run(const fs::path& folder, const std::string& run_id) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  std::ofstream(folder / "run.txt") << run_id << "\n";
}

void print_waiting(const std::string& verb, const std::string& run_id, const fs::path& folder,
                   const std::vector<fs::path>& waiting, bool as_json) {
  if (as_json) {
    nlohmann::json names = nlohmann::json::array();
    for (const auto& p : waiting) names.push_back(p.filename().string());
    std::printf("%s\n", nlohmann::json{{"schema", "lathe." + verb + "/1"}, {"run", run_id}, {"stop", "waiting"},
                                        {"batch", folder.string()}, {"waiting", names}}
                             .dump(2)
                             .c_str());
    return;
  }
  std::printf("waiting   run %s: %zu prompt(s) in %s wait for their answers\n", run_id.c_str(), waiting.size(),
              folder.c_str());
  for (const auto& p : waiting) std::printf("          %s\n", p.filename().c_str());
  std::printf("          answer each <key>.prompt (its kernel in <key>.bundle/) with <key>.reply, then run\n"
              "          lathe %s --gate-batch %s\n",
              verb.c_str(), folder.c_str());
}

std::string platform_on_resume(const std::string& given, const std::string& stored, const std::string& run_id) {
  if (!stored.empty() && !problem_platform_word(stored))
    return "run " + run_id + " stored the platform '" + stored + "', which is none of cpu | cuda";
  if (!given.empty() && !stored.empty() && given != stored)
    return "run " + run_id + " runs its problem on " + stored + "; --platform " + given +
           " conflicts with it (leave --platform out to go on, or start a new run)";
  return "";
}

}  // namespace lathe::cli
