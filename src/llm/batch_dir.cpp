// Batch mode's provider (batch_dir.h): answers from reply files, writes the prompts it has no
// reply for, and says the run must wait.
#include "llm/batch_dir.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "spec/bundle.h"
#include "llm/cassette.h"
#include "llm/rerun.h"

namespace lathe::llm {

namespace fs = std::filesystem;

namespace {

call_failure failure(call_error k, std::string m) {
  call_failure f;
  f.kind = k;
  f.message = std::move(m);
  return f;
}

}  // namespace

std::string batch_stem(const request& r, int32_t n) {
  const std::string id = r.template_id.empty() ? "_raw" : r.template_id;
  const std::string fields = r.template_id.empty() ? prompt_hash(r) : r.fields_hash;
  std::string stem = id + ".v" + std::to_string(r.template_version) + "." + fields + "." + sampling_tag(r) +
                     "." + std::to_string(n);
  // A repair round's id and hash ("mutate/repair", "<hash>:1") name no directory.
  for (char& c : stem)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')) c = '_';
  return stem;
}

batch_dir_provider::batch_dir_provider(fs::path dir, std::string name, const std::vector<llm_call>& recorded)
    : dir_(std::move(dir)), name_(std::move(name)) {
  for (const auto& c : recorded)
    if (answers_from_log(c)) ++answered_before_[key_text(c.template_id, c.template_version, c.fields_hash)];
}

call_result batch_dir_provider::call(const request& r, const cancel_token* cancel) {
  if (cancel && cancel->cancelled.load()) return tl::unexpected(failure(call_error::cancelled, "cancelled"));
  return answer(r, nullptr);
}

call_result batch_dir_provider::call_in(const request& r, const kernel_bundle& bundle, const cancel_token* cancel) {
  if (cancel && cancel->cancelled.load()) return tl::unexpected(failure(call_error::cancelled, "cancelled"));
  return answer(r, &bundle);
}

std::vector<fs::path> batch_dir_provider::waiting() const {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<fs::path> w = waiting_;  // asked from several threads: listed in a stable order
  std::sort(w.begin(), w.end());
  w.erase(std::unique(w.begin(), w.end()), w.end());
  return w;
}

call_result batch_dir_provider::answer(const request& r, const kernel_bundle* bundle) {
  const std::string key = key_text(r.template_id, r.template_version, r.fields_hash);
  int32_t before = 0;
  if (auto it = answered_before_.find(key); it != answered_before_.end()) before = it->second;
  const std::string stem = batch_stem(r, before + counter_.next(key + "/" + sampling_tag(r)));
  const fs::path reply = dir_ / (stem + ".reply"), prompt = dir_ / (stem + ".prompt");
  std::error_code ec;
  if (fs::exists(reply, ec)) {
    std::ifstream in(reply, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    if (!in.good() && !in.eof())
      return tl::unexpected(failure(call_error::malformed, reply.string() + ": cannot read the reply"));
    if (!is_utf8_text(ss.str()))
      return tl::unexpected(failure(call_error::malformed, reply.string() + ": the reply is not text (NUL bytes or invalid UTF-8)"));
    response resp;
    resp.text = ss.str();
    resp.finish = finish_reason::stop;
    resp.model = name_;
    return resp;
  }
  fs::create_directories(dir_, ec);
  const fs::path tmp = prompt.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << command_prompt(r);
    if (!out) return tl::unexpected(failure(call_error::bad_request, prompt.string() + ": cannot write the prompt"));
  }
  fs::rename(tmp, prompt, ec);
  if (ec) return tl::unexpected(failure(call_error::bad_request, prompt.string() + ": " + ec.message()));
  if (bundle) {
    const fs::path b = dir_ / (stem + ".bundle");
    fs::remove_all(b, ec);
    if (auto w = write_bundle(*bundle, b); !w)
      return tl::unexpected(failure(call_error::bad_request, b.string() + ": cannot write the kernel: " + w.error().message));
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    waiting_.push_back(prompt);
  }
  return tl::unexpected(failure(call_error::waiting, "waiting for " + reply.string()));
}

}  // namespace lathe::llm
